//===- Detection.cuh - non_max_suppression: a block per batch and class ---===//
//
// tessel/nms.h's decisions, as the CPU kernel makes them. nmsSelect: a block
// per (batch, class) keeps a byte per box in the workspace (alive: a
// candidate neither selected nor suppressed yet) and repeats, at most
// max_output_boxes_per_class times: the block finds the first alive box in
// nms::before's order (a reduction), selects it, and drops every alive box
// it suppresses. Greedy NMS selects exactly these: a box is suppressed only
// by boxes selected before it. nmsCompact: one block writes the selections
// as (batch, class, box) rows, batch-major then class, zeros up to the
// bound, and the row count.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_DETECTION_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_DETECTION_CUH

#include "Common.cuh"
#include "tessel/nms.h"

namespace tessel::kernels {

constexpr int kNmsBlock = 256;

template <typename T>
__device__ __forceinline__ nms::Box nmsBox(const T *boxes, int64_t i, bool centerPoint) {
  float corners[4];
  for (int k = 0; k < 4; ++k)
    corners[k] = static_cast<float>(load(boxes[i * 4 + k]));
  return nms::decode(corners, centerPoint);
}

template <typename T>
__device__ __forceinline__ void nmsSelect(const T *boxes, const T *scores, uint8_t *work,
                                          const NmsParams &p) {
  __shared__ float warpScore[kNmsBlock / 32];
  __shared__ int64_t warpIndex[kNmsBlock / 32];
  __shared__ int64_t pick;
  const int64_t bc = blockIdx.x;
  if (bc >= p.batches * p.classes)
    return;
  const int64_t batch = bc / p.classes;
  uint8_t *alive = work + bc * p.boxes;
  int64_t *kept = reinterpret_cast<int64_t *>(work + p.listOffset) + bc * p.maxOutput;
  const T *s = scores + bc * p.boxes;
  const T *b = boxes + batch * p.boxes * 4;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  for (int64_t i = tid; i < p.boxes; i += blockDim.x)
    alive[i] = nms::candidate(static_cast<float>(load(s[i])), p.hasScoreThreshold != 0,
                              p.scoreThreshold);
  __syncthreads();
  int64_t n = 0;
  for (; n < p.maxOutput; ++n) {
    float bestScore = 0.0f;
    int64_t best = -1;
    for (int64_t i = tid; i < p.boxes; i += blockDim.x) {
      if (!alive[i])
        continue;
      const float v = static_cast<float>(load(s[i]));
      if (best < 0 || nms::before(v, i, bestScore, best)) {
        bestScore = v;
        best = i;
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      const float otherScore = __shfl_down_sync(0xffffffffu, bestScore, offset);
      const int64_t other = __shfl_down_sync(0xffffffffu, best, offset);
      if (other >= 0 && (best < 0 || nms::before(otherScore, other, bestScore, best))) {
        bestScore = otherScore;
        best = other;
      }
    }
    if (lane == 0) {
      warpScore[warp] = bestScore;
      warpIndex[warp] = best;
    }
    __syncthreads();
    if (tid == 0) {
      float top = 0.0f;
      int64_t chosen = -1;
      for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w)
        if (warpIndex[w] >= 0 &&
            (chosen < 0 || nms::before(warpScore[w], warpIndex[w], top, chosen))) {
          top = warpScore[w];
          chosen = warpIndex[w];
        }
      pick = chosen;
      if (chosen >= 0)
        kept[n] = chosen;
    }
    __syncthreads();
    const int64_t chosen = pick;
    if (chosen < 0)
      break;
    const nms::Box selected = nmsBox(b, chosen, p.centerPoint != 0);
    for (int64_t i = tid; i < p.boxes; i += blockDim.x)
      if (alive[i] && (i == chosen ||
                       nms::suppresses(selected, nmsBox(b, i, p.centerPoint != 0),
                                       p.iouThreshold)))
        alive[i] = 0;
    __syncthreads();
  }
  if (tid == 0)
    reinterpret_cast<int64_t *>(work + p.countOffset)[bc] = n;
}

__device__ __forceinline__ void nmsCompact(const uint8_t *work, int64_t *selected,
                                           int64_t *count, const NmsParams &p) {
  const int64_t *kept = reinterpret_cast<const int64_t *>(work + p.listOffset);
  const int64_t *counts = reinterpret_cast<const int64_t *>(work + p.countOffset);
  int64_t offset = 0;
  for (int64_t bc = 0; bc < p.batches * p.classes; ++bc) {
    const int64_t n = counts[bc];
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      int64_t *row = selected + (offset + j) * 3;
      row[0] = bc / p.classes;
      row[1] = bc % p.classes;
      row[2] = kept[bc * p.maxOutput + j];
    }
    offset += n;
  }
  for (int64_t r = offset * 3 + threadIdx.x; r < p.bound * 3; r += blockDim.x)
    selected[r] = 0;
  if (threadIdx.x == 0)
    *count = offset;
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_DETECTION_CUH
