// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/worker_pool.h"

#include "analyzer/model/input/record_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gmt::analyzer {
namespace {

TEST(WorkerPool, EveryIndexRunsOnceWhateverTheWorkers) {
  for (unsigned workers : {1u, 2u, 4u, 16u}) {
    std::vector<int> runs(100, 0);  // each index written by one worker only
    for_each_index(runs.size(), workers, [&](std::size_t i) { runs[i] += static_cast<int>(i); });
    for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i], static_cast<int>(i)) << i;
  }
}

TEST(WorkerPool, UsesSeveralThreadsButNoMoreThanAsked) {
  std::mutex mutex;
  std::set<std::thread::id> seen;
  std::atomic<int> running{0}, most{0};
  for_each_index(64, 3, [&](std::size_t) {
    const int now = ++running;
    for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      seen.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --running;
  });
  EXPECT_LE(most.load(), 3);
  EXPECT_LE(seen.size(), 3u);
  EXPECT_FALSE(seen.contains(std::this_thread::get_id()));  // the caller only waits
}

TEST(WorkerPool, OneWorkerRunsOnTheCallersThreadInOrder) {
  std::vector<std::size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  for_each_index(5, 1, [&](std::size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
}

TEST(WorkerPool, TheLowestFailingIndexIsRethrownAfterAllRan) {
  for (unsigned workers : {1u, 4u}) {
    std::atomic<int> ran{0};
    try {
      for_each_index(20, workers, [&](std::size_t i) {
        ++ran;
        if (i == 7 || i == 13) throw std::runtime_error("item " + std::to_string(i));
      });
      ADD_FAILURE() << "nothing thrown";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "item 7");
    }
    EXPECT_EQ(ran.load(), 20);
  }
}

TEST(WorkerPool, NothingToDo) {
  bool called = false;
  for_each_index(0, 4, [&](std::size_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(WorkerPool, WorkerCountFromRequestEnvironmentOrCpus) {
  ::unsetenv("GPUMEMTRACE_JOBS");
  EXPECT_EQ(worker_count(3), 3u);
  EXPECT_EQ(worker_count(), usable_cpus());
  EXPECT_GE(usable_cpus(), 1u);
  ::setenv("GPUMEMTRACE_JOBS", "5", 1);
  EXPECT_EQ(worker_count(), 5u);
  EXPECT_EQ(worker_count(2), 2u);  // the flag wins over the environment
  for (const char* bad : {"0", "-1", "two", "3x"}) {
    ::setenv("GPUMEMTRACE_JOBS", bad, 1);
    EXPECT_THROW(worker_count(), std::invalid_argument) << bad;
  }
  ::unsetenv("GPUMEMTRACE_JOBS");
}

}  // namespace
}  // namespace gmt::analyzer
