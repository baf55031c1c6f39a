//===- image_decoder_test.cpp - zstd-compressed module images -------------===//
//
// The runtime decodes compressed kernel images through libzstd.so.1 (dlopen);
// the frames here come from libzstd's encoder, linked into the test. A frame
// that does not decode, or decodes to another size than declared, is an
// invalid engine, never a crash or a short image.
//
//===----------------------------------------------------------------------===//
#include "gpu/image_decoder.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <random>

namespace {

using tessel::rt::gpu::decodeZstd;

std::vector<uint8_t> encode(const std::vector<uint8_t> &bytes) {
  std::vector<uint8_t> frame(ZSTD_compressBound(bytes.size()));
  size_t written = ZSTD_compress(frame.data(), frame.size(), bytes.data(), bytes.size(), 9);
  EXPECT_FALSE(ZSTD_isError(written));
  frame.resize(written);
  return frame;
}

std::vector<uint8_t> sample(size_t n) {
  // Text-like bytes (PTX is text): compressible, not trivially.
  std::mt19937 rng(3);
  std::vector<uint8_t> bytes(n);
  for (uint8_t &b : bytes)
    b = static_cast<uint8_t>('a' + rng() % 16);
  return bytes;
}

TEST(ImageDecoder, RoundTrip) {
  for (size_t n : {1u, 100u, 70000u}) {
    std::vector<uint8_t> bytes = sample(n), frame = encode(bytes), out;
    tessel::rt::Status s = decodeZstd(frame.data(), frame.size(), n, out);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(out, bytes) << n;
  }
}

TEST(ImageDecoder, WrongSizeOrBadFrameIsAnInvalidEngine) {
  std::vector<uint8_t> bytes = sample(5000), frame = encode(bytes), out;
  for (uint64_t declared : {4999u, 5001u}) {
    tessel::rt::Status s = decodeZstd(frame.data(), frame.size(), declared, out);
    EXPECT_EQ(s.code(), TESSEL_INVALID_ENGINE) << declared;
  }
  tessel::rt::Status s = decodeZstd(frame.data(), frame.size(), 5001, out);
  EXPECT_EQ(s.message(), "a compressed image decodes to 5000 bytes, it declares 5001");
  std::vector<uint8_t> damaged = frame;
  damaged.resize(damaged.size() / 2);
  s = decodeZstd(damaged.data(), damaged.size(), 5000, out);
  EXPECT_EQ(s.code(), TESSEL_INVALID_ENGINE);
  EXPECT_NE(s.message().find("does not decode"), std::string::npos) << s.message();
  // A size no module has is refused before anything is allocated.
  s = decodeZstd(frame.data(), frame.size(), uint64_t(1) << 40, out);
  EXPECT_EQ(s.code(), TESSEL_INVALID_ENGINE);
  s = decodeZstd(frame.data(), frame.size(), 0, out);
  EXPECT_EQ(s.code(), TESSEL_INVALID_ENGINE);
}

} // namespace
