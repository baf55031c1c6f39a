//===- StepPlanner.h - A step's launches of the kernel library --*- C++ -*-===//
//
// The planner of one step (KernelLibrary::plan's worker), shared by its
// files: StepPlanner.cpp (elementwise ops, data movement, selections by index,
// and the dispatch by kernel family) and StepPlannerReductions.cpp (reductions,
// scans, normalizations, pools, attention). Each planner checks the operands
// it is given and returns the launches of Library.cu's entry points, or
// nothing (the step then runs on the CPU tier).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_STEPPLANNER_H
#define TESSEL_CODEGEN_CUDA_STEPPLANNER_H

#include "KernelLibrary.h"
#include "KernelParams.h"
#include "StepEncoding.h"
#include "tessel/cpu_kernels.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::codegen::library {

using cpu::DType;
using kernels::kMaxRank;
using Dims = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// The product of dims [begin, end), end clamped to the rank.
inline int64_t product(const Dims &dims, size_t begin = 0, size_t end = SIZE_MAX) {
  auto last = dims.begin() + static_cast<std::ptrdiff_t>(std::min(end, dims.size()));
  auto first = dims.begin() + static_cast<std::ptrdiff_t>(std::min(begin, dims.size()));
  int64_t p = 1;
  for (auto it = first; it < last; ++it)
    p *= *it;
  return p;
}

inline Dims rowMajorStrides(const Dims &shape) {
  Dims strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

/// Rewrites an iteration space of `shape` whose operands step by `strides`
/// into the fewest dims: extent-1 dims go, and dim d joins dim d+1 when every
/// operand steps over d as over a run of d+1. An empty space becomes rank 0
/// (its element count, 0, is kept by the caller).
inline void coalesce(Dims &shape, std::vector<Dims> &strides) {
  Dims outShape;
  std::vector<Dims> outStrides(strides.size());
  if (product(shape) == 0) {
    shape.clear();
    for (Dims &s : strides)
      s.clear();
    return;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    bool merge = !outShape.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = outStrides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      outShape.back() *= shape[d];
      for (size_t k = 0; k < strides.size(); ++k)
        outStrides[k].back() = strides[k][d];
    } else {
      outShape.push_back(shape[d]);
      for (size_t k = 0; k < strides.size(); ++k)
        outStrides[k].push_back(strides[k][d]);
    }
  }
  shape = std::move(outShape);
  strides = std::move(outStrides);
}

template <size_t N> void copyDims(const Dims &from, int64_t (&to)[N]) {
  std::fill(std::begin(to), std::end(to), 0);
  std::copy(from.begin(), from.end(), to);
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

inline constexpr uint32_t kBlock = 256;
// Grid-stride loops cover any size; the kernels rely on a grid of at most
// 65535 blocks of at most 1024 threads (Common.cuh).
inline constexpr int64_t kMaxGrid = 65535;
/// im2row's block per input row (Movement.cuh, im2rowRows): ResNet's stem
/// writes 112 x 3 runs a row.
inline constexpr uint32_t kIm2RowBlock = 128;

inline uint32_t gridFor(int64_t threads, uint32_t block) {
  int64_t blocks = (threads + block - 1) / block;
  return static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, kMaxGrid));
}

/// Threads for a reduction of `count` elements by one block: a power of two
/// from 32 to 256.
inline uint32_t reductionBlock(int64_t count) {
  uint32_t block = 32;
  while (block < kBlock && block < count)
    block *= 2;
  return block;
}

/// A launch of `kernel`, which the library defines, in its family's module.
inline Launch makeLaunch(std::string kernel, uint32_t grid, uint32_t block,
                  std::vector<KernelArg> args) {
  Launch launch;
  launch.module = KernelLibrary::familyOf(kernel);
  launch.kernel = std::move(kernel);
  launch.grid = {grid, 1, 1};
  launch.block = {block, 1, 1};
  launch.args = std::move(args);
  return launch;
}

//===----------------------------------------------------------------------===//
// Dtypes
//===----------------------------------------------------------------------===//

inline const char *suffix(DType dtype) {
  switch (dtype) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::F64: return "f64";
  case DType::I8: return "i8";
  case DType::U8: return "u8";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::Bool: return "b8";
  default: return nullptr; // no kernel computes on it
  }
}

/// A step operand: its engine tensor, dtype and static shape.
struct Operand {
  int32_t tensor = -1;
  DType dtype = DType::F32;
  Dims shape;
  int64_t count() const { return product(shape); }
  size_t elementBytes() const { return cpu::dtypeSize(dtype); }
  KernelArg address() const { return KernelArg::tensorAddress(tensor); }
};

/// The largest word (16, 8, 4, 2 or 1 bytes) dividing every byte count.
inline int wordBytes(std::initializer_list<int64_t> byteCounts) {
  for (int w : {16, 8, 4, 2})
    if (std::all_of(byteCounts.begin(), byteCounts.end(),
                    [&](int64_t b) { return b % w == 0; }))
      return w;
  return 1;
}


//===----------------------------------------------------------------------===//
// The planner of one step
//===----------------------------------------------------------------------===//

using Launches = std::optional<std::vector<Launch>>;

class StepPlanner {
public:
  StepPlanner(const StepView &step, cpu::Attrs attrs) : step(step), attrs(std::move(attrs)) {}

  /// The operands, or false when one is absent or of a type the engine
  /// cannot hold.
  bool readOperands() {
    for (int32_t t : step.inputs) {
      std::optional<Operand> o = operand(t);
      if (!o)
        return false;
      in.push_back(*o);
    }
    for (int32_t t : step.outputs) {
      std::optional<Operand> o = operand(t);
      if (!o)
        return false;
      out.push_back(*o);
    }
    return !out.empty();
  }

  Launches plan();

private:
  std::optional<Operand> operand(int32_t tensor) const {
    if (tensor < 0 || static_cast<size_t>(tensor) >= step.tensorTypes.size())
      return std::nullopt;
    mlir::RankedTensorType type = step.type(tensor);
    if (!type || !type.hasStaticShape())
      return std::nullopt;
    std::optional<int8_t> dtype = engineDType(type.getElementType());
    if (!dtype)
      return std::nullopt;
    Operand o;
    o.tensor = tensor;
    o.dtype = static_cast<DType>(*dtype);
    o.shape.assign(type.getShape().begin(), type.getShape().end());
    return o;
  }

  /// One launch of `kernel` if the library has it.
  Launches single(const std::string &kernel, uint32_t grid, uint32_t block,
                  std::vector<KernelArg> args) const {
    if (KernelLibrary::familyOf(kernel) < 0)
      return std::nullopt;
    return std::vector<Launch>{makeLaunch(kernel, grid, block, std::move(args))};
  }

  std::string typed(llvm::StringRef op, DType dtype) const {
    const char *s = suffix(dtype);
    return s ? "tsl_" + op.str() + "_" + s : std::string();
  }

  Launches copy();
  /// tsl_copy of `from` into `to` (the same dtype and element count).
  Launches copy(const Operand &from, const Operand &to) const;
  Launches cast();
  Launches unary();
  Launches clip();
  Launches broadcastOp();
  Launches where();
  Launches affine(int64_t base, Dims shape, Dims strides, int64_t count);
  Launches transpose();
  Launches slice();
  Launches expand();
  Launches tile();
  Launches pad();
  Launches im2row();
  Launches concat();
  Launches gather();
  Launches reduce();
  Launches reduceColumns(const kernels::ReduceParams &r, const Dims &kept, const Dims &red,
                         bool innermostReduced);
  Launches softmax();
  Launches argReduce();
  Launches scan();
  Launches resize();
  Launches topK();
  Launches nms();
  Launches pool();
  Launches rowNorm(llvm::StringRef op, const kernels::NormParams &p, std::vector<KernelArg> args);
  Launches layerNorm();
  Launches poolFc();
  Launches instanceNorm();
  Launches batchNorm();
  Launches lrn();
  Launches gatherElements();
  Launches gatherND();
  Launches scatterND();
  Launches trilu();
  Launches attention();

public:
  /// The launches of a Tensor Core variant, which a family planner sets
  /// beside the simt launches it returns where it has one (attention):
  /// KernelLibrary::plan offers it as the tc-sm70 variant.
  Launches tensorCore;

private:
  const StepView &step;
  cpu::Attrs attrs;
  std::vector<Operand> in, out;
};


} // namespace tessel::codegen::library

#endif // TESSEL_CODEGEN_CUDA_STEPPLANNER_H
