//===- Nvrtc.h - CUDA C++ compiled when an engine is compiled ----*- C++ -*-===//
//
// NVRTC (the CUDA toolkit's runtime compiler, a library: no nvcc process, no
// temporary files), opened with dlopen on first use so that a tessel-compile
// without it starts and compiles every model that needs no generated or
// custom kernel. Used by the custom ops' sources (CustomKernels.cpp) and the
// elementwise groups' generated kernels (ElementwiseGroups.cpp). Fixed
// options and names keep the images the same bytes on every machine.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUSTOM_NVRTC_H
#define TESSEL_CODEGEN_CUSTOM_NVRTC_H

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::custom {

/// Why NVRTC cannot be used (not built with it, or not loadable); empty when
/// it can.
const std::string &nvrtcError();

/// A header the source includes by `name`, given as text.
struct NvrtcHeader {
  std::string name, text;
};

/// Compiles `text` (named `name` in messages) for `arch`: a cubin for
/// sm_ARCH, or PTX for compute_ARCH; `options` after the arch. False with
/// NVRTC's log in `log`.
bool nvrtcCompile(const std::string &text, const std::string &name, int arch, bool cubin,
                  const std::vector<std::string> &options,
                  const std::vector<NvrtcHeader> &headers, std::vector<uint8_t> &image,
                  std::string &log);

} // namespace tessel::custom

#endif // TESSEL_CODEGEN_CUSTOM_NVRTC_H
