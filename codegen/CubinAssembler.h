//===- CubinAssembler.h - PTX to cubin, in-process --------------*- C++ -*-===//
//
// Assembles generated PTX into a cubin for one SM with CUDA's nvJitLink
// (ptxas as a library), so that tessel-compile needs no CUDA executable and
// no GPU. Built without nvJitLink (no CUDA toolkit at configure time),
// canAssembleCubins() is false and engines carry PTX only.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUBINASSEMBLER_H
#define TESSEL_CODEGEN_CUBINASSEMBLER_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::codegen {

bool canAssembleCubins();

struct CubinResult {
  bool ok = false;
  std::vector<uint8_t> cubin;
  std::string log;  ///< nvJitLink's error log when !ok
  std::string info; ///< its verbose log: ptxas's registers and spills per kernel
};

/// Assembles `ptx` (any .target up to sm_`arch`) into a cubin for sm_`arch`
/// (major*10+minor, e.g. 80). Thread-safe: each call has its own handle.
/// Kernels that ask for several blocks per SM (.minnctapersm) and spill
/// under that register cap are assembled again without the directive.
CubinResult assembleCubin(llvm::StringRef ptx, int arch);

/// The kernels a verbose ptxas log (nvJitLink -verbose, ptxas -v) reports
/// spilling registers to local memory.
std::vector<std::string> spillingKernels(llvm::StringRef info);

/// The most registers any kernel uses per a verbose ptxas log (0: none said).
int maxRegisters(llvm::StringRef info);

/// `ptx` with the .minnctapersm directive of each of `kernels` removed.
std::string withoutMinBlocks(llvm::StringRef ptx, const std::vector<std::string> &kernels);

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_CUBINASSEMBLER_H
