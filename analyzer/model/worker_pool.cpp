// SPDX-License-Identifier: Apache-2.0
#include "analyzer/model/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "analyzer/model/input/record_pipeline.h"

namespace gmt::analyzer {

unsigned worker_count(unsigned requested) {
  if (requested != 0) return requested;
  if (const char* env = std::getenv("GPUMEMTRACE_JOBS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const unsigned long value = std::strtoul(env, &end, 10);
    if (*end != '\0' || value == 0 || value > 4096 || *env == '-') {
      throw std::invalid_argument(std::string("GPUMEMTRACE_JOBS must be a positive number, not '") +
                                  env + "'");
    }
    return static_cast<unsigned>(value);
  }
  return usable_cpus();
}

void for_each_index(std::size_t count, unsigned workers,
                    const std::function<void(std::size_t)>& work) {
  const std::size_t threads = std::min<std::size_t>(std::max(workers, 1u), count);
  std::atomic<std::size_t> next{0};
  std::mutex failure_mutex;
  std::size_t failed_index = count;
  std::exception_ptr failure;
  const auto run = [&] {
    for (std::size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (i < failed_index) {
          failed_index = i;
          failure = std::current_exception();
        }
      }
    }
  };
  if (threads <= 1) {
    run();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(run);
    for (std::thread& thread : pool) thread.join();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace gmt::analyzer
