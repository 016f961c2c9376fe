// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "format/file_header.h"

namespace gmt::format {
namespace {

TEST(FileHeader, AcceptsWhatItWrites) {
  uint8_t header[kHeaderSize];
  write_header(header, 65536);
  const HeaderCheck check = check_header(header);
  EXPECT_TRUE(check.ok) << check.error;
  EXPECT_EQ(check.header.major, kVersionMajor);
  EXPECT_EQ(check.header.minor, 10);
  EXPECT_EQ(check.header.chunk_size, 65536u);
  EXPECT_EQ(check.header.max_size, 0u);
}

// A bounded trace's header (4.3 on, written as 4.10): the limit at bytes 16-23, the reader's
// starting checkpoint and the records dropped after it, updated in place by the writer; where
// the chunks end at bytes 40-47 (4.9), as in every trace.
TEST(FileHeader, ABoundedTraceIsFormat49WithItsLimit) {
  uint8_t page[kFirstChunkOffset] = {};
  write_header(page, 65536, 64 << 20);
  page[BoundedHeaderLayout::kValidFrom] = 3;
  page[BoundedHeaderLayout::kDroppedRecords + 1] = 1;
  page[kChunksEndOffset + 2] = 2;
  const HeaderCheck check = check_header(page);
  ASSERT_TRUE(check.ok) << check.error;
  EXPECT_EQ(check.header.minor, 10);
  EXPECT_EQ(check.header.chunks_end, 2u << 16);
  EXPECT_EQ(check.header.max_size, 64u << 20);
  EXPECT_EQ(check.header.valid_from, 3u);
  EXPECT_EQ(check.header.dropped_records, 256u);
}

TEST(FileHeader, RejectsAChunkSizeNoWriterUses) {
  for (uint32_t bad : {0u, 1000u, 65537u, 32u << 20}) {
    uint8_t header[kHeaderSize];
    write_header(header, bad);
    const HeaderCheck check = check_header(header);
    EXPECT_FALSE(check.ok) << bad;
    EXPECT_EQ(check.error, "damaged trace header: chunk size " + std::to_string(bad) +
                               " is not a power of two between 4 KiB and 16 MiB");
  }
}

TEST(FileHeader, SaysWhyBytesAreNotATrace) {
  EXPECT_EQ(check_header({}).error,
            "the file is empty (the traced process may have been killed before it wrote anything)");
  const uint8_t short_file[5] = {0x89, 'G', 'M', 'T', '\r'};
  EXPECT_EQ(check_header(short_file).error,
            "the file is 5 bytes long, shorter than the 16-byte trace header");
  const std::string text = "this is a text file, not a trace";
  EXPECT_EQ(check_header({reinterpret_cast<const uint8_t*>(text.data()), text.size()}).error,
            "not a gpumemtrace trace (the file does not start with the trace magic)");
}

TEST(FileHeader, RejectsAnotherMajorVersionButAcceptsNewerMinors) {
  uint8_t header[kHeaderSize];
  write_header(header, 65536);
  header[10] = 7;  // minor 7: still readable
  EXPECT_TRUE(check_header(header).ok);
  header[8] = 9;  // major 9
  const HeaderCheck check = check_header(header);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.error,
            "unsupported trace format version 9.7 (this build reads versions 3.x to 4.x)");
  header[8] = 2;
  EXPECT_EQ(check_header(header).error,
            "unsupported trace format version 2.7 (this build reads versions 3.x to 4.x)");
}

TEST(FileHeader, StillReadsFormatThree) {
  uint8_t header[kHeaderSize];
  write_header(header, 65536);
  header[8] = 3;
  header[10] = 1;
  const HeaderCheck check = check_header(header);
  EXPECT_TRUE(check.ok) << check.error;
  EXPECT_EQ(check.header.major, 3);
  EXPECT_EQ(check.header.minor, 1);
}

}  // namespace
}  // namespace gmt::format
