//===- Depthwise.cuh - the depthwise conv of NHWC tensors -----------------===//
//
// A conv whose every channel is a group of one filter (MobileNets',
// EfficientNets' 3x3 and 5x5 stages), NHWC, with the conv epilogue: a
// thread per output pixel and `Lanes` channels: 16 bytes (8 f16, 4 f32)
// where that leaves threads enough to fill the GPU, else 4 bytes (2 f16) or
// one f32 (the planner's choice), the window's inputs read as words, the sums in f32 in the window's
// row-major order, then bias, residual and the activation
// (tessel/elementwise_math.h: the CPU tier's epilogue formulas) and one
// rounding at the store. The implicit-GEMM codegen's direct kernel took a
// thread per output element with 2-byte loads, and a first version of this
// one read each thread's weights from global memory, kh * kw elements
// apart (uncoalesced): slower than the direct conv at batch 1 and 32.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_DEPTHWISE_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_DEPTHWISE_CUH

#include "Common.cuh"

#include "tessel/elementwise_math.h"

namespace tessel::kernels {

/// Threads a block: kDepthwisePixels output pixels times kDepthwiseGroups
/// groups of Lanes channels (a warp: 4 pixels' 8 * Lanes channels each,
/// contiguous); the block's filters staged in shared memory as f32, tap by
/// tap across its channels, so a thread reads its Lanes weights of a tap
/// together (they lie kh * kw apart in the weight tensor).
constexpr int kDepthwisePixels = 32, kDepthwiseGroups = 8, kDepthwiseMaxTaps = 64;

template <typename T, int Lanes>
__device__ __forceinline__ void depthwiseConv(const T *x, const T *w, const T *bias,
                                              const T *residual, T *y,
                                              const DepthwiseParams &p) {
  using C = Math<T>;
  constexpr int kTile = kDepthwiseGroups * Lanes; // channels a block
  __shared__ float filters[kDepthwiseMaxTaps][kTile];
  const int taps = p.kh * p.kw;
  const int64_t cTile = static_cast<int64_t>(blockIdx.y) * kTile;
  for (int e = threadIdx.x; e < taps * kTile; e += blockDim.x) {
    const int tap = e / kTile, lane = e % kTile;
    filters[tap][lane] = cTile + lane < p.c ? static_cast<float>(load(w[(cTile + lane) * taps + tap]))
                                            : 0.0f;
  }
  __syncthreads();
  const int group = threadIdx.x % kDepthwiseGroups;
  const int64_t pixel =
      static_cast<int64_t>(blockIdx.x) * kDepthwisePixels + threadIdx.x / kDepthwiseGroups;
  const int64_t c0 = cTile + group * Lanes;
  if (pixel >= p.n * p.oh * p.ow || c0 >= p.c)
    return;
  const uint64_t row = divide(pixel, p.ow);
  const int64_t ox = static_cast<int64_t>(pixel - row * p.ow);
  const uint64_t image = divide(row, p.oh);
  const int64_t oy = static_cast<int64_t>(row - image * p.oh);
  const int64_t iy0 = oy * p.strideH - p.padH, ix0 = ox * p.strideW - p.padW;
  C acc[Lanes];
#pragma unroll
  for (int l = 0; l < Lanes; ++l)
    acc[l] = C(0);
#pragma unroll 1
  for (int ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = iy0 + ky * p.dilH;
    if (iy < 0 || iy >= p.h)
      continue;
    const T *line = x + (static_cast<int64_t>(image) * p.h + iy) * p.w * p.c + c0;
#pragma unroll 1
    for (int kx = 0; kx < p.kw; ++kx) {
      const int64_t ix = ix0 + kx * p.dilW;
      if (ix < 0 || ix >= p.w)
        continue;
      const LaneWord<T, Lanes> v = loadLanes<T, Lanes>(line + ix * p.c);
      const float *tap = &filters[ky * p.kw + kx][group * Lanes];
#pragma unroll
      for (int l = 0; l < Lanes; ++l)
        acc[l] += load(v.lane[l]) * tap[l];
    }
  }
  LaneWord<T, Lanes> extra{};
  if (residual)
    extra = loadLanes<T, Lanes>(residual + pixel * p.c + c0);
  const auto act = static_cast<elementwise::Activation>(p.activation);
  LaneWord<T, Lanes> result;
#pragma unroll
  for (int l = 0; l < Lanes; ++l) {
    C v = acc[l];
    if (bias)
      v += load(bias[c0 + l]);
    if (residual)
      v += load(extra.lane[l]);
    result.lane[l] = store<T>(elementwise::activate(act, v, p.alpha, p.beta));
  }
  storeLanes<T, Lanes>(y + pixel * p.c + c0, result);
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_DEPTHWISE_CUH
