// SPDX-License-Identifier: Apache-2.0
// The header page's stop reason: read back as written, cut to its room, absent in old files.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "format/file_header.h"
#include "format/recording_end.h"

namespace gmt::format {
namespace {

std::vector<uint8_t> header_page() {
  std::vector<uint8_t> page(kFirstChunkOffset, 0);
  write_header(page.data(), 64 * 1024);
  return page;
}

TEST(RecordingEnd, StopReasonReadsBackAsWritten) {
  std::vector<uint8_t> page = header_page();
  EXPECT_EQ(read_stop_reason(page), "");
  const std::string bytes = stop_reason_bytes("the disk is full");
  std::memcpy(page.data() + kStopReasonOffset, bytes.data(), bytes.size());
  EXPECT_EQ(read_stop_reason(page), "the disk is full");
  EXPECT_TRUE(check_header(page).ok);
}

TEST(RecordingEnd, LongReasonIsCutToItsRoomAndShortFilesHaveNone) {
  const std::string bytes = stop_reason_bytes(std::string(10000, 'x'));
  EXPECT_EQ(bytes.size(), kStopReasonEnd - kStopReasonOffset);
  EXPECT_EQ(bytes.back(), '\0');
  std::vector<uint8_t> page = header_page();
  std::memset(page.data() + kStopReasonOffset, 'y', kStopReasonEnd - kStopReasonOffset);
  EXPECT_EQ(read_stop_reason(page), std::string(kStopReasonEnd - kStopReasonOffset, 'y'));
  page.resize(100);
  EXPECT_EQ(read_stop_reason(page), "");
}

}  // namespace
}  // namespace gmt::format
