//===- engine_format.h - the .tsl file's fixed header ----------*- C++ -*-===//
//
// Shared by the compiler's engine writer and the runtime's reader: the fixed
// 64-byte header in front of the FlatBuffer payload, and the checksum over
// everything after it. The schema itself is schema/engine.fbs.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_ENGINE_FORMAT_H
#define TESSEL_RUNTIME_ENGINE_FORMAT_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tessel::format {

inline constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'E', 'L', '\x1a', '\n'};
// Bumped on any incompatible change of the header or the schema.
inline constexpr uint32_t kFormatVersion = 3; // 3: KernelArg.workspace_bytes
// The oldest version this runtime still reads: a version-2 engine is a valid
// version-3 engine without workspaces.
inline constexpr uint32_t kOldestReadableVersion = 2;
inline constexpr size_t kHeaderSize = 64;
// Constants start on this boundary (relative to the file start), which
// satisfies every vector width and cudaMemcpy fast path.
inline constexpr size_t kConstantAlignment = 256;

struct Header {
  char magic[8];
  uint32_t format_version;
  uint32_t header_size;      // kHeaderSize
  uint64_t payload_offset;   // of the FlatBuffer: kHeaderSize
  uint64_t payload_size;     // FlatBuffer bytes, without padding
  uint64_t constants_offset; // of the constants blob, kConstantAlignment-aligned
  uint64_t constants_size;
  uint64_t checksum;         // FNV-1a 64 over bytes [kHeaderSize, file end)
  uint64_t reserved;
};
static_assert(sizeof(Header) == kHeaderSize, "header must be 64 bytes");

/// FNV-1a, 64-bit: simple, byte-order independent, catches any single bit flip.
inline uint64_t checksum(const uint8_t *data, size_t size,
                         uint64_t hash = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

inline size_t alignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Recomputes the header's checksum over everything after the header.
inline void sealChecksum(std::vector<uint8_t> &file) {
  Header header;
  std::memcpy(&header, file.data(), sizeof(header));
  header.checksum = checksum(file.data() + kHeaderSize, file.size() - kHeaderSize);
  std::memcpy(file.data(), &header, sizeof(header));
}

/// Header, FlatBuffer payload, zero padding to kConstantAlignment, constants:
/// the whole engine file, checksum included. The compiler's writer and the
/// runtime's tests both assemble files with this.
inline std::vector<uint8_t> assembleFile(const uint8_t *payload, size_t payloadSize,
                                         const std::vector<uint8_t> &constants) {
  size_t constantsOffset = alignUp(kHeaderSize + payloadSize, kConstantAlignment);
  std::vector<uint8_t> file(constantsOffset + constants.size(), 0);
  std::memcpy(file.data() + kHeaderSize, payload, payloadSize);
  if (!constants.empty())
    std::memcpy(file.data() + constantsOffset, constants.data(), constants.size());
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(header.magic));
  header.format_version = kFormatVersion;
  header.header_size = kHeaderSize;
  header.payload_offset = kHeaderSize;
  header.payload_size = payloadSize;
  header.constants_offset = constantsOffset;
  header.constants_size = constants.size();
  std::memcpy(file.data(), &header, sizeof(header));
  sealChecksum(file);
  return file;
}

} // namespace tessel::format

#endif // TESSEL_RUNTIME_ENGINE_FORMAT_H
