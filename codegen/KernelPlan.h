//===- KernelPlan.h - GPU kernels of an engine, as plain data ---*- C++ -*-===//
//
// What codegen hands the engine writer: the kernel modules (PTX and cubins per
// target) and, per step, the GPU variants with their launches. Plain data, in
// the engine schema's terms (runtime/schema/engine.fbs: KernelModule,
// KernelVariant, Launch, KernelArg; a variant's tier is the schema's Tier),
// so that codegen builds no FlatBuffer and the writer needs no MLIR GPU
// dialects.
//
// A planner sees each step as its graph op plus the engine tensor indices of
// its operands and results; it binds kernel parameters to those indices.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_KERNELPLAN_H
#define TESSEL_CODEGEN_KERNELPLAN_H

#include "tessel/engine_format.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace tessel::codegen {

/// One compiled form of a module: PTX text (no trailing NUL; the writer adds
/// it) or a cubin, for `arch` = major*10+minor.
struct KernelImage {
  bool cubin = false;
  int arch = 0;
  std::vector<uint8_t> data;
  /// Every entry point waits for the grids before it (griddepcontrol.wait)
  /// before touching memory: the runtime may overlap its launch with the
  /// kernel before it (GridDependency.h).
  bool waitsForPriorGrids = false;
};

struct KernelModule {
  std::string name;
  std::vector<KernelImage> images;
  /// From ptxas's report on the cubins (0 and none without them): the most
  /// registers a kernel uses, and the kernels that spill to local memory.
  int maxRegisters = 0;
  std::vector<std::string> spillingKernels;
};

/// A kernel parameter: a tensor's device address, a null pointer (tensor -1,
/// no bytes: an absent optional operand), raw little-endian bytes, or the
/// context's workspace (workspaceBytes > 0; engine.fbs says how it is shared).
struct KernelArg {
  int32_t tensor = -1;
  std::vector<uint8_t> bytes;
  uint64_t workspaceBytes = 0;
  /// The context's arrival counters (engine.fbs KernelArg.counter_bytes):
  /// zero at every launch, and left zero by it.
  uint64_t counterBytes = 0;
  /// A TMA tensor map of `tensor` (engine.fbs TensorMap): f16, innermost
  /// dimension first; empty dims: the tensor's address. Tiled, or with
  /// corners im2col (box: channels a pixel, pixels).
  struct TensorMap {
    std::vector<uint64_t> dims, strides;
    std::vector<uint32_t> box;
    std::vector<int32_t> lowerCorner, upperCorner; ///< im2col: W, H
    std::vector<uint32_t> elementStrides;          ///< im2col: a dimension each
    bool im2col() const { return !lowerCorner.empty(); }
  } tensorMap;

  static KernelArg tensorAddress(int32_t index) { return KernelArg{index, {}, 0}; }
  static KernelArg null() { return KernelArg{-1, {}, 0}; }
  static KernelArg workspace(uint64_t bytes) { return KernelArg{-1, {}, bytes}; }
  static KernelArg counters(uint64_t bytes) { return KernelArg{-1, {}, 0, bytes}; }
  static KernelArg tensorMapOf(int32_t index, TensorMap map) {
    KernelArg arg{index, {}, 0};
    arg.tensorMap = std::move(map);
    return arg;
  }
  template <typename T> static KernelArg value(const T &v) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are raw bytes");
    KernelArg arg;
    arg.bytes.resize(sizeof(T));
    std::memcpy(arg.bytes.data(), &v, sizeof(T));
    return arg;
  }
};

struct Launch {
  int32_t module = 0; ///< index into KernelPlan::modules
  std::string kernel;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<KernelArg> args;
};

struct KernelVariant {
  engine::Tier tier = engine::Tier::simt;
  std::string kernel;
  int minComputeCapability = 0;
  int alignment = 16;
  std::vector<Launch> launches;
};

/// Every GPU kernel of one engine.
struct KernelPlan {
  std::vector<KernelModule> modules;
  /// Per step (the writer's step order), its GPU variants, best tier first.
  std::vector<std::vector<KernelVariant>> steps;
};

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_KERNELPLAN_H
