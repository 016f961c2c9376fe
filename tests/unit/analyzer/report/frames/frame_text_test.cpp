// SPDX-License-Identifier: Apache-2.0
// How the text reports print a stack: from the user's frame on, the CUDA runtime's internals
// folded into one line.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/report/frames/frame_text.h"
#include "tests/unit/analyzer/report/frames/site_frames.h"

namespace gmt::analyzer {
namespace {

using namespace test_frames;

std::string written(const std::vector<SiteFrame>& frames, std::size_t shown) {
  std::ostringstream out;
  write_frames(frames, shown, "  ", out);
  return out.str();
}

TEST(FrameText, StacksStartAtTheUsersFrame) {
  const std::vector<SiteFrame> frames = {
      in("libcudart.so.13+0x41b5e", "/x/libcudart.so.13"),
      in("libcudart.so.13+0x146f3", "/x/libcudart.so.13"), in("cudaMalloc", "/x/libcudart.so.13"),
      at("allocate", "/src/model.cpp", 12), at("main", "/src/main.cpp", 40)};
  EXPECT_EQ(written(frames, 1),
            "  allocate  model.cpp:12\n    via cudaMalloc\n  ... 1 more frames\n");
  EXPECT_EQ(written(frames, 5),
            "  allocate  model.cpp:12\n    via cudaMalloc\n  main  main.cpp:40\n");
}

// A PyTorch allocation: the Python frame that led to it first, the native frames below it
// named by the layers they belong to.
TEST(FrameText, PythonFramesAreShownPastTheNativeOnes) {
  std::vector<SiteFrame> frames = {
      in("libcudart.so.13+0x41b5e", "/x/libcudart.so.13"), in("cudaMalloc", "/x/libcudart.so.13"),
      in("c10::allocate", "/x/libc10_cuda.so"), in("at::empty", "/x/libtorch_cpu.so")};
  SiteFrame leak = at("main", "/src/train.py", 30);
  leak.kind = "python";
  SiteFrame module = at("<module>", "/src/train.py", 37);
  module.kind = "python";
  frames.push_back(leak);
  frames.push_back(module);
  EXPECT_EQ(written(frames, 1),
            "  main  train.py:30\n    via cudaMalloc \u2190 c10 \u2190 libtorch\n"
            "  ... 1 more frames\n");
  EXPECT_EQ(written(frames, 3),
            "  main  train.py:30\n    via cudaMalloc \u2190 c10 \u2190 libtorch\n"
            "  <module>  train.py:37\n");
}

TEST(FrameText, OtherStacksAreShownFromTheLeaf) {
  const std::vector<SiteFrame> only_runtime = {in("libcudart.so.12+0x1", "/x/libcudart.so.12"),
                                               in("cudaMalloc", "/x/libcudart.so.12")};
  EXPECT_EQ(written(only_runtime, 1), "  libcudart.so.12+0x1\n  ... 1 more frames\n");
  EXPECT_EQ(written(only_runtime, 2), "  libcudart.so.12+0x1\n  cudaMalloc  (libcudart.so.12)\n");
  EXPECT_EQ(written({}, 3), "  (no stack recorded)\n");
}

// A Python stack through the simulated runtime: cudaMalloc, then the user's frames, innermost
// first (`helper` at train.py:6, called from `caller_lines`, outermost last).
std::vector<SiteFrame> python_stack(std::vector<std::pair<std::string, int>> user) {
  std::vector<SiteFrame> frames = {in("cudaMalloc", "/x/libcudart.so.13")};
  for (const auto& [function, line] : user)
    frames.push_back(python(function, "/src/train.py", line));
  return frames;
}

std::vector<std::string> labels(const std::vector<std::vector<SiteFrame>>& rows) {
  std::vector<const std::vector<SiteFrame>*> pointers;
  for (const auto& row : rows) pointers.push_back(&row);
  return site_labels(pointers);
}

// Issue 50's case: three rows made by one helper (train.py:6), called from lines 12, 15 and 16:
// each is named by the caller that tells it apart, before the helper's line.
TEST(SiteLabels, RowsThatShareTheirLineAreToldApartByTheirCallers) {
  const std::vector<std::vector<SiteFrame>> rows = {python_stack({{"alloc", 6}, {"<module>", 12}}),
                                                    python_stack({{"alloc", 6}, {"<module>", 15}}),
                                                    python_stack({{"alloc", 6}, {"<module>", 16}}),
                                                    python_stack({{"<module>", 20}})};
  EXPECT_EQ(labels(rows),
            (std::vector<std::string>{"train.py:12 > train.py:6", "train.py:15 > train.py:6",
                                      "train.py:16 > train.py:6", "train.py:20"}));
  // Alone, a row is its line.
  EXPECT_EQ(site_label(rows[0]), "train.py:6");
}

// The callers shown are those where the stacks part, however deep: frames alike in every row
// (a wrapper) are left out.
TEST(SiteLabels, OnlyTheCallersWhereStacksPartAreShown) {
  const std::vector<std::vector<SiteFrame>> rows = {
      python_stack({{"alloc", 6}, {"wrapper", 9}, {"<module>", 12}}),
      python_stack({{"alloc", 6}, {"wrapper", 9}, {"<module>", 15}}),
      python_stack({{"alloc", 6}, {"other", 30}, {"<module>", 12}}),
      python_stack({{"alloc", 6}, {"other", 30}, {"<module>", 40}})};
  EXPECT_EQ(labels(rows), (std::vector<std::string>{"train.py:12 > train.py:9 > train.py:6",
                                                    "train.py:15 > train.py:9 > train.py:6",
                                                    "train.py:12 > train.py:30 > train.py:6",
                                                    "train.py:40 > train.py:30 > train.py:6"}));
  const std::vector<std::vector<SiteFrame>> two = {
      python_stack({{"alloc", 6}, {"wrapper", 9}, {"<module>", 12}}),
      python_stack({{"alloc", 6}, {"wrapper", 9}, {"<module>", 15}})};
  EXPECT_EQ(labels(two),
            (std::vector<std::string>{"train.py:12 > train.py:6", "train.py:15 > train.py:6"}));
}

// Rows whose user frames are all alike keep one label; a row without a stack has none; a native
// frame without a line is named by its function and module.
TEST(SiteLabels, RowsAlikeShareTheirLabel) {
  const std::vector<std::vector<SiteFrame>> rows = {
      python_stack({{"alloc", 6}, {"<module>", 12}}),
      python_stack({{"alloc", 6}, {"<module>", 12}}),
      {},
      {in("libcudart.so.13+0x1", "/x/libcudart.so.13"), in("cudaMalloc", "/x/libcudart.so.13"),
       in("run_model", "/opt/app/libmodel.so")}};
  EXPECT_EQ(labels(rows),
            (std::vector<std::string>{"train.py:6", "train.py:6", "", "run_model (libmodel.so)"}));
}

// Text from the trace cannot drive the terminal: control characters are spelled out.
TEST(Printable, EscapesControlCharacters) {
  EXPECT_EQ(printable("train.py --lr=1e-3"), "train.py --lr=1e-3");
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  constexpr char kControls[] = "nul\0tab\tnl\ndel\x7f";
  EXPECT_EQ(printable(std::string(kControls, sizeof kControls - 1)),
            "nul\\x00tab\\x09nl\\x0adel\\x7f");
  EXPECT_EQ(printable("csi\xc2\x9b"
                      "31m"),
            "csi\\u009b31m");  // U+009B in UTF-8
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x96\xb2"),
            "caf\xc3\xa9 \xe2\x96\xb2");  // printable UTF-8 kept
  // A backslash that would read as an escape is doubled; others are kept.
  EXPECT_EQ(printable("C:\\x1b"), "C:\\\\x1b");
  EXPECT_EQ(printable("a\\b"), "a\\b");
}

TEST(FrameText, FunctionAndFileNamesAreEscaped) {
  SiteFrame f;
  f.function = "evil\x1b]0;title\x07";
  f.file = "/src/x\x1b.cpp";
  f.line = 3;
  EXPECT_EQ(frame_text(f), "evil\\x1b]0;title\\x07  x\\x1b.cpp:3");
}

}  // namespace
}  // namespace gmt::analyzer
