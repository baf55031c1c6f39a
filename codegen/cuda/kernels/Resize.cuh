//===- Resize.cuh - resize: a thread per result element -------------------===//
//
// tessel/resize.h's taps, computed per axis for the element (the CPU kernel
// tabulates them; the sums are the same, in the same order, in double). The
// planner launches it only where every axis has at most kGpuTaps taps and at
// most kGpuAxes axes have more than one (it evaluates the taps to know), so
// that a thread's taps stay in registers.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_RESIZE_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_RESIZE_CUH

#include "Common.cuh"
#include "tessel/resize.h"

namespace tessel::kernels {

constexpr int kResizeGpuTaps = 8;
constexpr int kResizeGpuAxes = 4;

template <typename T>
__device__ __forceinline__ void resizeElements(const T *x, T *y, const resize::Params &p) {
  int64_t total = 1;
  for (int a = 0; a < p.rank; ++a)
    total *= p.outShape[a];
  for (int64_t e = gridStart(); e < total; e += gridStep()) {
    // The element's coordinates, last axis fastest.
    int64_t coord[resize::kMaxRank];
    int64_t rest = e;
    for (int a = p.rank - 1; a >= 0; --a) {
      coord[a] = rest % p.outShape[a];
      rest /= p.outShape[a];
    }
    // One-tap axes fold into a base offset and weight; the others (at most
    // kResizeGpuAxes) keep their taps.
    int64_t base = 0, stride = 1;
    double baseWeight = 1;
    bool outside = false;
    int active = 0;
    int count[kResizeGpuAxes];
    int64_t offset[kResizeGpuAxes][kResizeGpuTaps];
    double weight[kResizeGpuAxes][kResizeGpuTaps];
    for (int a = p.rank - 1; a >= 0; --a) {
      int64_t index[kResizeGpuTaps];
      double w[kResizeGpuTaps];
      bool out = false;
      const int n = resize::taps(p, a, coord[a], index, w, out);
      outside |= out;
      int kept = 0;
      for (int t = 0; t < n; ++t)
        if (w[t] != 0) {
          index[kept] = index[t];
          w[kept] = w[t];
          ++kept;
        }
      if (kept == 1) {
        base += index[0] * stride;
        baseWeight *= w[0];
      } else if (kept > 1 && active < kResizeGpuAxes) {
        count[active] = kept;
        for (int t = 0; t < kept; ++t) {
          offset[active][t] = index[t] * stride;
          weight[active][t] = w[t];
        }
        ++active;
      }
      stride *= p.inShape[a];
    }
    double sum = 0;
    if (outside) {
      sum = p.extrapolation;
    } else {
      // The active axes were collected last axis first: walk them with the
      // first-collected (innermost) fastest, the CPU kernel's order.
      int tap[kResizeGpuAxes] = {0, 0, 0, 0};
      while (true) {
        int64_t at = base;
        double w = baseWeight;
        for (int k = active - 1; k >= 0; --k) {
          at += offset[k][tap[k]];
          w *= weight[k][tap[k]];
        }
        sum += w * static_cast<double>(load(x[at]));
        int k = 0;
        while (k < active && ++tap[k] == count[k])
          tap[k++] = 0;
        if (k == active)
          break;
      }
    }
    y[e] = saturateCast<T>(sum);
  }
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_RESIZE_CUH
