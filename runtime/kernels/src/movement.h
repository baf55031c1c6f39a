//===- movement.h - what the movement and gather kernels share -*- C++ -*-===//
//
// Operand checks (ranks up to kMaxRank, messages naming the op), row-major
// strides and element-size dispatch for movement.cpp and gather.cpp, whose
// kernels move elements by their size. Internal to tessel_cpu_kernels.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_MOVEMENT_H
#define TESSEL_RUNTIME_CPU_MOVEMENT_H

#include "tessel/cpu_kernels.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cpu {

// Ranks beyond this are rejected; ONNX models stay far below it.
constexpr size_t kMaxRank = 16;
using Dims = std::array<int64_t, kMaxRank>;

using Inputs = std::vector<const TensorView *>;
using Outputs = std::vector<TensorView *>;

inline KernelStatus fail(const char *op, const std::string &message) {
  return KernelStatus{std::string(op) + ": " + message};
}

inline std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

inline bool usable(const TensorView *view) {
  if (!view || view->shape.size() > kMaxRank)
    return false;
  for (int64_t d : view->shape)
    if (d < 0)
      return false;
  return view->data || view->numElements() == 0;
}

// The first `count` inputs and the one output are present, of rank at most
// kMaxRank, with data unless empty.
inline KernelStatus checkOperands(const char *op, const Inputs &inputs, const Outputs &outputs,
                           size_t count) {
  if (inputs.size() < count || outputs.size() != 1)
    return fail(op, "expected " + std::to_string(count) + " input(s) and 1 output, got " +
                        std::to_string(inputs.size()) + " and " +
                        std::to_string(outputs.size()));
  for (size_t i = 0; i < count; ++i)
    if (!usable(inputs[i]))
      return fail(op, "input " + std::to_string(i) + " is missing, unbound, of a negative " +
                          "dim or of rank > " + std::to_string(kMaxRank));
  if (!usable(outputs[0]))
    return fail(op, "the output is missing, unbound, of a negative dim or of rank > " +
                        std::to_string(kMaxRank));
  return {};
}

// A dtype of the schema (dtypeSize knows it).
inline bool validDType(DType dtype) { return dtypeSize(dtype) != 0; }

inline KernelStatus checkSameDType(const char *op, const TensorView &in, const TensorView &out) {
  if (in.dtype != out.dtype)
    return fail(op, std::string("input dtype ") + dtypeName(in.dtype) +
                        " differs from output dtype " + dtypeName(out.dtype));
  return {};
}

// Row-major element strides of `shape`.
inline Dims stridesOf(const std::vector<int64_t> &shape) {
  Dims strides{};
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

// Calls f(T{}) with an unsigned integer type of `size` bytes: movement only
// needs an element's bits, so four instantiations serve all thirteen dtypes.
template <typename F> void withElementBits(size_t size, F &&f) {
  switch (size) {
  case 1: f(uint8_t{}); break;
  case 2: f(uint16_t{}); break;
  case 4: f(uint32_t{}); break;
  default: f(uint64_t{}); break;
  }
}

} // namespace tessel::cpu

#endif // TESSEL_RUNTIME_CPU_MOVEMENT_H
