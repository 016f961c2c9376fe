// SPDX-License-Identifier: Apache-2.0
// The log of freed code objects, on a stand-in for CPython's code type (the head of a
// PyTypeObject: tp_name "code" at 24, tp_dealloc at 48): watching wraps the dealloc once, each
// object's address is logged before the interpreter's dealloc frees it, and readers on other
// threads get every address logged, or are told they fell behind, never a wrong one (also under
// ThreadSanitizer, scripts/test.sh).
#include "interpose/stacks/python_code_deaths.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace gmt::interpose {
namespace {

using Dealloc = void (*)(void*);

struct FakeType {
  alignas(8) unsigned char bytes[64] = {};
  FakeType(const char* name, Dealloc dealloc) {
    std::memcpy(bytes + 24, &name, sizeof name);
    std::memcpy(bytes + 48, &dealloc, sizeof dealloc);
  }
  Dealloc dealloc() const {
    Dealloc d = nullptr;
    std::memcpy(&d, bytes + 48, sizeof d);
    return d;
  }
};

std::atomic<uint64_t> freed_by_the_interpreter{0};
// On one thread: whether each object was the last logged when the interpreter's own dealloc ran.
bool check_logged_first = false;
bool logged_first = true;

void interpreter_dealloc(void* object) {
  if (check_logged_first) {
    const uint64_t n = PythonCodeDeaths::count();
    const void* last = nullptr;
    logged_first &= n > 0 && PythonCodeDeaths::freed(n - 1, n, &last) && last == object;
  }
  freed_by_the_interpreter.fetch_add(1);
}

FakeType& code_type() {
  static FakeType type("code", &interpreter_dealloc);
  return type;
}

void* lookup(const char* name) {
  return std::strcmp(name, "PyCode_Type") == 0 ? code_type().bytes : nullptr;
}

FakeType other_type("str", &interpreter_dealloc);
void* lookup_other(const char* name) {
  return std::strcmp(name, "PyCode_Type") == 0 ? other_type.bytes : nullptr;
}

void* lookup_nothing(const char*) {
  return nullptr;
}

TEST(PythonCodeDeaths, AnotherTypeOrNoneIsLeftAlone) {
  EXPECT_FALSE(PythonCodeDeaths::watch(&lookup_other));
  EXPECT_EQ(other_type.dealloc(), &interpreter_dealloc);
  EXPECT_FALSE(PythonCodeDeaths::watch(&lookup_nothing));
}

TEST(PythonCodeDeaths, EachAddressIsLoggedBeforeTheInterpreterFreesIt) {
  ASSERT_TRUE(PythonCodeDeaths::watch(&lookup));
  ASSERT_TRUE(PythonCodeDeaths::watch(&lookup));  // again: wrapped once
  const Dealloc wrapped = code_type().dealloc();
  ASSERT_NE(wrapped, &interpreter_dealloc);
  const uint64_t before = PythonCodeDeaths::count();
  const uint64_t freed_before = freed_by_the_interpreter.load();
  int objects[3];
  check_logged_first = true;
  for (int& object : objects) wrapped(&object);
  check_logged_first = false;
  EXPECT_EQ(PythonCodeDeaths::count(), before + 3);
  EXPECT_EQ(freed_by_the_interpreter.load(), freed_before + 3);
  EXPECT_TRUE(logged_first);
  const void* freed[3] = {};
  ASSERT_TRUE(PythonCodeDeaths::freed(before, before + 3, freed));
  EXPECT_EQ(freed[0], &objects[0]);
  EXPECT_EQ(freed[1], &objects[1]);
  EXPECT_EQ(freed[2], &objects[2]);
}

// Past kKept deaths, the oldest are no longer kept: a reader that far behind is told so.
TEST(PythonCodeDeaths, AReaderTooFarBehindIsToldSo) {
  ASSERT_TRUE(PythonCodeDeaths::watch(&lookup));
  const uint64_t before = PythonCodeDeaths::count();
  std::vector<int> objects(PythonCodeDeaths::kKept + 1);
  for (int& object : objects) code_type().dealloc()(&object);
  std::vector<const void*> freed(PythonCodeDeaths::kKept + 1);
  EXPECT_FALSE(PythonCodeDeaths::freed(before, before + objects.size(), freed.data()));
  ASSERT_TRUE(PythonCodeDeaths::freed(before + 1, before + objects.size(), freed.data()));
  for (std::size_t i = 1; i < objects.size(); ++i) EXPECT_EQ(freed[i - 1], &objects[i]);
}

// Four threads free objects (as interpreters with a GIL each may) while a reader follows the
// log: whatever it is given is an address that was freed, and it is told of every death, read
// or fallen behind.
TEST(PythonCodeDeaths, ReadersFollowingWritersGetOnlyWhatWasFreed) {
  ASSERT_TRUE(PythonCodeDeaths::watch(&lookup));
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::vector<int>> objects(kThreads, std::vector<int>(kEach));
  std::set<const void*> all;
  for (const auto& mine : objects) {
    for (const int& object : mine) all.insert(&object);
  }
  const uint64_t start = PythonCodeDeaths::count();
  std::atomic<bool> done{false};
  uint64_t read = 0, skipped = 0, wrong = 0;
  std::thread reader([&] {
    constexpr uint64_t kKept = PythonCodeDeaths::kKept;
    std::vector<const void*> freed(kKept);
    uint64_t seen = start;
    // Until a pass made after the writers were done: nothing is overwritten then.
    for (bool last = false; !last;) {
      last = done.load();
      const uint64_t now = PythonCodeDeaths::count();
      if (now - seen > kKept) {  // fell behind: on to what is kept
        skipped += now - kKept - seen;
        seen = now - kKept;
      }
      if (PythonCodeDeaths::freed(seen, now, freed.data())) {
        for (uint64_t i = 0; i < now - seen; ++i) wrong += all.count(freed[i]) == 0;
        read += now - seen;
        seen = now;
      }  // else overwritten while read: again from `seen`
    }
  });
  std::vector<std::thread> writers;
  for (auto& mine : objects) {
    writers.emplace_back([&mine] {
      const Dealloc dealloc = code_type().dealloc();
      for (int& object : mine) dealloc(&object);
    });
  }
  for (std::thread& w : writers) w.join();
  done.store(true);
  reader.join();
  EXPECT_EQ(PythonCodeDeaths::count(), start + kThreads * kEach);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(read + skipped, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_GT(read, 0u);
}

}  // namespace
}  // namespace gmt::interpose
