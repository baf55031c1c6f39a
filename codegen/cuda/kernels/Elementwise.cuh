//===- Elementwise.cuh - unary, binary, comparison, logic, where, clip ----===//
//
// The elementwise ops' kernels: what each computes on one element is
// tessel/elementwise_math.h, the very formulas the CPU kernels
// (runtime/kernels/src/elementwise.cpp) compile; these walk the tensors with
// grid-stride loops and the library's f16 loads and stores.
// Each thread reads its elements before it writes its result, so the result
// may alias an operand of the same shape (in-place steps).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH

#include "Common.cuh"

#include "tessel/elementwise_math.h"

namespace tessel::kernels {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

using U = elementwise::Unary;
using B = elementwise::Binary;
using Cmp = elementwise::Compare;
using L = elementwise::Logic;

template <U op, typename T>
__device__ __forceinline__ void unary(const T *x, T *y, const UnaryParams &p) {
  forEachIndex(p.n, [&](auto i) {
    if constexpr (isFloat<T>())
      y[i] = store<T>(elementwise::unaryFloat<op, Math<T>>(load(x[i]), p));
    else
      y[i] = elementwise::unaryInt<op, T>(x[i]);
  });
}

__device__ __forceinline__ void logicalNot(const uint8_t *x, uint8_t *y, const UnaryParams &p) {
  forEachIndex(p.n, [&](auto i) { y[i] = x[i] ? 0 : 1; });
}

template <typename T>
__device__ __forceinline__ void clip(const T *x, T *y, const ClipParams &p) {
  using C = Math<T>;
  C lo, hi;
  if constexpr (isFloat<T>()) {
    lo = static_cast<C>(p.lo);
    hi = static_cast<C>(p.hi);
  } else {
    lo = static_cast<C>(p.ilo);
    hi = static_cast<C>(p.ihi);
  }
  forEachIndex(p.n, [&](auto i) { y[i] = store<T>(elementwise::clip(load(x[i]), lo, hi)); });
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

template <B op, typename T> __device__ __forceinline__ T binaryOp(T a, T b) {
  if constexpr (isFloat<T>())
    return store<T>(elementwise::binaryFloat<op, Math<T>>(load(a), load(b)));
  else
    return elementwise::binaryInt<op, T>(a, b);
}

template <B op, typename T>
__device__ __forceinline__ void binary(const T *a, const T *b, T *y, const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    y[i] = binaryOp<op, T>(a[off[0]], b[off[1]]);
  });
}

/// binary by 16-byte words: both operands contiguous along the innermost
/// (merged) dim, whose extent and every other stride are whole words; p's
/// shape and strides count words. A squeeze-excitation's channel scale,
/// [n, h*w, c] times [n, 1, c], and same-shape adds read and write 16 bytes
/// a thread instead of 2 with an index decomposition per element.
template <B op, typename T, int Lanes>
__device__ __forceinline__ void binaryVec(const T *a, const T *b, T *y,
                                          const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    const LaneWord<T, Lanes> va = loadLanes<T, Lanes>(a + off[0] * Lanes);
    const LaneWord<T, Lanes> vb = loadLanes<T, Lanes>(b + off[1] * Lanes);
    LaneWord<T, Lanes> r;
#pragma unroll
    for (int l = 0; l < Lanes; ++l)
      r.lane[l] = binaryOp<op, T>(va.lane[l], vb.lane[l]);
    storeLanes<T, Lanes>(y + static_cast<int64_t>(i) * Lanes, r);
  });
}

/// pow with operands of different dtypes: in double, cast to the base's dtype.
template <typename T, typename E>
__device__ __forceinline__ void powMixed(const T *a, const E *b, T *y, const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    const double base = static_cast<double>(load(a[off[0]]));
    const double exponent = static_cast<double>(load(b[off[1]]));
    y[i] = saturateCast<T>(pow(base, exponent));
  });
}

template <Cmp op, typename T>
__device__ __forceinline__ void compare(const T *a, const T *b, uint8_t *y,
                                        const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    y[i] = elementwise::compare<op>(load(a[off[0]]), load(b[off[1]])) ? 1 : 0;
  });
}

template <L op>
__device__ __forceinline__ void logical(const uint8_t *a, const uint8_t *b, uint8_t *y,
                                        const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[2];
    stridedOffsets<2>(i, p.rank, p.shape, p.stride, off);
    y[i] = elementwise::logic<op>(a[off[0]] != 0, b[off[1]] != 0) ? 1 : 0;
  });
}

/// where, on the elements' bits (W: an unsigned type of the element's size).
template <typename W>
__device__ __forceinline__ void where(const uint8_t *c, const W *a, const W *b, W *y,
                                      const BroadcastParams &p) {
  forEachIndex(p.n, [&](auto i) {
    int64_t off[3];
    stridedOffsets<3>(i, p.rank, p.shape, p.stride, off);
    y[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  });
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_ELEMENTWISE_CUH
