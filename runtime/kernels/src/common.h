//===- common.h - what the conv, gemm, norm and pool kernels share -*- C++ -*-===//
//
// Operand checks, float operands as float or double arrays, and index
// arithmetic, for the kernels of conv.cpp, gemm.cpp, normalization.cpp,
// pool.cpp (and window.cpp's messages). Internal to tessel_cpu_kernels.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_COMMON_H
#define TESSEL_RUNTIME_CPU_COMMON_H

#include "dispatch.h"
#include "scratch.h"
#include "tessel/cpu_kernels.h"
#include "tessel/half.h"
#include "tessel/window.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace tessel::cpu {

inline bool present(const TensorView *v) { return v && (v->data || v->numElements() == 0); }

// Checks that the first `required` inputs and the output are present.
inline KernelStatus checkArity(const char *op, const std::vector<const TensorView *> &inputs,
                               const std::vector<TensorView *> &outputs, size_t required) {
  if (inputs.size() < required || outputs.empty() || !outputs[0] ||
      (!outputs[0]->data && outputs[0]->numElements() != 0))
    return fail(std::string(op) + ": expected at least " + std::to_string(required) +
                " inputs and an output");
  for (size_t i = 0; i < required; ++i)
    if (!present(inputs[i]))
      return fail(std::string(op) + ": missing input " + std::to_string(i));
  return {};
}

// An optional operand: absent when the position is past the end of `inputs`
// or holds nullptr.
inline const TensorView *optionalInput(const std::vector<const TensorView *> &inputs, size_t i) {
  return i < inputs.size() && present(inputs[i]) ? inputs[i] : nullptr;
}

inline bool isFloat(DType d) { return d == DType::F32 || d == DType::F64 || d == DType::F16; }

// Calls f(T{}) with T = float, double or Half for a float dtype.
template <typename F> void withFloatType(DType dtype, F &&f) {
  switch (dtype) {
  case DType::F32: f(float{}); break;
  case DType::F64: f(double{}); break;
  case DType::F16: f(Half{}); break;
  default: break;
  }
}

template <typename C, typename T> inline C loadAs(T v) { return static_cast<C>(loadElem(v)); }

// A float tensor as a dense array of the compute type C (float or double):
// the tensor's own storage when it already is C, else a converted copy in a
// scratch slot.
template <typename C> class Input {
public:
  Input(const TensorView &v, ScratchSlot slot) {
    if ((std::is_same<C, float>::value && v.dtype == DType::F32) ||
        (std::is_same<C, double>::value && v.dtype == DType::F64)) {
      ptr = static_cast<const C *>(v.data);
      return;
    }
    const int64_t n = v.numElements();
    C *copy = scratch<C>(slot, static_cast<size_t>(n));
    withFloatType(v.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T *src = static_cast<const T *>(v.data);
      for (int64_t i = 0; i < n; ++i)
        copy[i] = loadAs<C>(src[i]);
    });
    ptr = copy;
  }
  const C *data() const { return ptr; }
  C operator[](int64_t i) const { return ptr[i]; }

private:
  const C *ptr = nullptr;
};

// floor(a / b) and ceil(a / b) for b > 0.
inline int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
inline int64_t roundUp(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Unflattens `linear` into the multi-index of `shape`.
inline void unflatten(int64_t linear, const SpatialDims &shape, int64_t *index) {
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? linear % shape[d] : 0;
    linear = shape[d] ? linear / shape[d] : 0;
  }
}

inline std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

} // namespace tessel::cpu

#endif // TESSEL_RUNTIME_CPU_COMMON_H
