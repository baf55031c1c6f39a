//===- engine_format.h - the .tsl file: the compiler/runtime contract -*- C++ -*-===//
//
// The engine file as both sides see it (library tessel_engine_format, public):
// the fixed 64-byte header in front of the FlatBuffer payload, the checksum
// over everything after it, the schema's generated reader and builder
// (runtime/schema/engine.fbs, `tessel::engine`), and the rules about an
// engine's contents that both the compiler and the runtime apply (which
// kernel image a GPU loads). The compiler's engine writer assembles files
// with it; the runtime verifies them (runtime/src/engine.cpp) before anything
// else reads them; tools read an engine the runtime opened
// (tessel_engine_file) through payload().
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_ENGINE_FORMAT_H
#define TESSEL_ENGINE_FORMAT_H

#include "tessel/engine_generated.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tessel::format {

inline constexpr char kMagic[8] = {'T', 'E', 'S', 'S', 'E', 'L', '\x1a', '\n'};
// Bumped on any incompatible change of the header or the schema.
// 3: KernelArg.workspace_bytes. 4: tiers as the schema's Tier enum instead
// of names. 5: kernel images compressed (KernelImage.compression, size), and
// batch profiles (Engine.profiles). 6: an output's data-dependent extent
// (Tensor.extent_axis, extent_tensor), which a runtime must not ignore. 7:
// KernelArg.counter_bytes (zeroed arrival counters; a runtime that passed a
// null pointer instead would fault). 8: KernelArg.tensor_map (TMA tensor
// maps the runtime encodes; a runtime that passed the tensor's address
// instead would fault). 9: TensorMap's im2col mode (corners and element
// strides; a runtime that encoded such a map as tiled would copy the wrong
// rows).
inline constexpr uint32_t kFormatVersion = 9;
// The oldest version this runtime still reads.
inline constexpr uint32_t kOldestReadableVersion = 5;
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

/// A tier's name as tools and the C API print it: "cpu", "simt", "tc-sm70",
/// "tc-sm80", "tc-sm90"; nullptr for a value outside the enum (a damaged
/// or newer engine).
inline const char *tierName(tessel::engine::Tier tier) {
  switch (tier) {
  case tessel::engine::Tier::cpu: return "cpu";
  case tessel::engine::Tier::simt: return "simt";
  case tessel::engine::Tier::tc_sm70: return "tc-sm70";
  case tessel::engine::Tier::tc_sm80: return "tc-sm80";
  case tessel::engine::Tier::tc_sm90: return "tc-sm90";
  }
  return nullptr;
}

/// The compute capability (major*10+minor) a tier's kernels need by what
/// they are: a Tensor Core tier's SM; 0 for cpu and simt, whose variants say
/// it themselves (min_compute_capability).
inline int tierCapability(tessel::engine::Tier tier) {
  switch (tier) {
  case tessel::engine::Tier::tc_sm70: return 70;
  case tessel::engine::Tier::tc_sm80: return 80;
  case tessel::engine::Tier::tc_sm90: return 90;
  default: return 0;
  }
}

/// Whether a tier's kernels run on a GPU of compute capability `capability`
/// (major*10+minor): from tierCapability on, except tc-sm90's, which are
/// sm_90a code (wgmma) and run on sm_90 alone.
inline bool tierRunsOn(tessel::engine::Tier tier, int capability) {
  if (capability < tierCapability(tier))
    return false;
  return tier != tessel::engine::Tier::tc_sm90 || capability / 10 == 9;
}

/// The FlatBuffer root of a whole engine file that has been verified (by the
/// runtime: tessel_engine_open_*, then tessel_engine_file). Unchecked.
inline const tessel::engine::Engine *payload(const uint8_t *file) {
  Header header;
  std::memcpy(&header, file, sizeof(header));
  return tessel::engine::GetEngine(file + header.payload_offset);
}

/// Whether a cubin built for SM `cubinArch` (major*10+minor) runs on a GPU of
/// compute capability `capability`: same major, a minor not above the GPU's.
inline bool cubinRunsOn(int cubinArch, int capability) {
  return cubinArch / 10 == capability / 10 && cubinArch % 10 <= capability % 10;
}

/// The image of `module` that a GPU of compute capability `capability`
/// (major*10+minor) loads, as an index into its images: the cubin that runs
/// on it (cubinRunsOn) with the highest arch; else the PTX with the highest
/// target not above its capability (the driver compiles it at load). -1 when
/// there is none.
inline int chooseImage(const tessel::engine::KernelModule *module, int capability) {
  const auto *images = module->images();
  if (!images)
    return -1;
  int cubin = -1, cubinArch = -1, ptx = -1, ptxArch = -1;
  for (size_t i = 0; i < images->size(); ++i) {
    const tessel::engine::KernelImage *image = images->Get(i);
    const int arch = image->arch();
    if (image->format() == tessel::engine::ImageFormat::Cubin) {
      if (cubinRunsOn(arch, capability) && arch > cubinArch)
        cubin = static_cast<int>(i), cubinArch = arch;
    } else if (arch <= capability && arch > ptxArch) {
      ptx = static_cast<int>(i), ptxArch = arch;
    }
  }
  return cubin >= 0 ? cubin : ptx;
}

} // namespace tessel::format

#endif // TESSEL_ENGINE_FORMAT_H
