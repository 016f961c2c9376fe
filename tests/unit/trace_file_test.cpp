#include <gtest/gtest.h>

#include "format/file_header.h"

namespace gmt::format {
namespace {

TEST(FileHeader, AcceptsWhatItWrites) {
  uint8_t header[kHeaderSize];
  write_header(header);
  const HeaderCheck check = check_header(header);
  EXPECT_TRUE(check.ok) << check.error;
  EXPECT_EQ(check.header.major, kVersionMajor);
  EXPECT_EQ(check.header.minor, kVersionMinor);
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
  write_header(header);
  header[10] = 7;  // minor 7: still readable
  EXPECT_TRUE(check_header(header).ok);
  header[8] = 2;  // major 2
  const HeaderCheck check = check_header(header);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.error, "unsupported trace format version 2.7 (this build reads version 1.x)");
}

}  // namespace
}  // namespace gmt::format
