//===- Attention.cuh - fused attention, Tensor Core and SIMT --------------===//
//
// softmax(Q K^T * scale + mask) V (tessel.attention; the CPU kernel,
// runtime/kernels/src/attention.cpp, is the reference) in the
// flash-attention manner: a block per (batch x head, tile of query rows),
// the keys and values streamed through shared memory a tile at a time, and
// an online softmax (a running maximum and sum per query row, in f32) so
// that the [Sq, Sk] scores never reach memory. A query row whose scores are
// all -inf (every key masked) has sum 0 and gives 0/0 = NaN, as the
// unfused graph's softmax does.
//
// The Tensor Core kernel (attentionTc, f16 storage): 4 warps of 16 query
// rows each (64 a block). Both products are mma.sync over k 16 (f16
// operands, f32 accumulators) on fragments loaded by ldmatrix: m16n8k16 in
// the sm_80 and sm_90 cubins, pairs of m16n8k8 (PTX ISA 6.5) in the
// compute_75 PTX. Not nvcuda::wmma: its
// accumulator layout is unspecified, so the per-row softmax would have to
// round-trip the scores and the output through shared memory every tile;
// mma.sync's fragments have the layout the PTX ISA documents (lane l holds
// rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1 of each 16x8 tile),
// so the scores stay in registers, each row's maximum and sum are a
// reduction over the 4 lanes of a quad, and the f32 score fragments,
// rounded to f16, are already the A fragments of P V.
//   - Q lives in registers for the whole kernel (HD/8 x 2 fragments).
//   - K and V tiles of BC keys (64, or 32 for head dims above 80, to keep
//     shared memory within 64 KiB, sm_75's limit) are double-buffered in
//     shared memory; the next tile's K goes to registers before Q K^T and to
//     the other buffer after it, its V likewise around the softmax and P V,
//     so one barrier a tile suffices (the GEMM codegen's pipelined K loop,
//     with half its registers). Rows are padded by 16
//     bytes, so ldmatrix's 8 rows of a phase fall in 8 different bank
//     groups (row strides of 144, 176, 208 and 272 bytes).
//   - The scale multiplies the f32 products (as log2(e) * scale, so that the
//     exponentials are ex2), the additive mask is added in f32 (times
//     log2(e)), before anything is rounded to f16.
//   - Causal: a block stops at the last key tile any of its rows sees, and
//     a warp skips the math of a tile no row of its own sees; per-element
//     masking runs only on tiles that need it (a mask, the diagonal, the
//     last partial tile).
//   - Head dims are padded to HD (64, 80, 96 or 128) with zeros in shared
//     memory; the planner picks the smallest HD >= max(d, dv).
// The weights round to f16 as the second product's operand, as the unfused
// graph rounds its softmax's result for the matmul by V; the running sum
// adds the f32 weights.
//
// The SIMT kernel (attentionSimt, f32 or f16 storage, any head dims up to
// 128): 4 warps of 4 query rows; K and V tiles of 32 keys in shared memory
// as f32; lane j scores key j of the tile against its warp's 4 rows, the
// warp shares each row's maximum and weights by shuffles, and lane l
// accumulates output dims l, l + 32, l + 64, l + 96.
//
// The library is compiled with --fmad=false; these kernels contract where
// they mean to with fmaf (the products, the rescaling), so their results
// are not bit-identical to the CPU's, which computes in double; the tests
// hold them to tolerances from f16 storage with f32 accumulation.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_ATTENTION_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_ATTENTION_CUH

#include "Common.cuh"

namespace tessel::kernels {
namespace attention {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegInf = -__builtin_huge_valf();

/// 2^x; ex2.approx is within 2 ulp, flushes subnormal results to 0 and
/// gives 0 for -inf.
__device__ __forceinline__ float exp2Fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// The sum and the maximum over the 4 lanes of a quad (the lanes holding one
/// row of an mma fragment), the same bits in each.
__device__ __forceinline__ float quadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

__device__ __forceinline__ uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Four 8x8 f16 matrices from shared memory: lanes 8i..8i+7 give the row
/// addresses of matrix i; register i gets matrix i's fragment (lane l: row
/// l/4, columns 2(l%4), +1), or with `.trans` the transpose's.
__device__ __forceinline__ void ldmatrixX4(uint32_t address, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrixX2(uint32_t address, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrixX4Trans(uint32_t address, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrixX2Trans(uint32_t address, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(address));
}

/// c += A B for a 16x8x8 tile: A (16x8, row-major) in a0 (row l/4) and a1
/// (row l/4 + 8), B (8x8, k by n) in b (column l/4, k 2(l%4), +1), c the
/// f32 16x8 fragment (c[0], c[1]: row l/4; c[2], c[3]: row l/4 + 8).
__device__ __forceinline__ void mma16x8x8(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(b));
}

/// c += A B for a 16x8x16 tile (sm_80 and later; twice m16n8k8's work a
/// cycle): A's registers a0, a1 (k 0-7, rows l/4 and l/4 + 8), a2, a3 (k
/// 8-15), B's b0 (k 0-7), b1 (k 8-15): two m16n8k8 fragments side by side.
__device__ __forceinline__ void mma16x8x16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                           uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// The k16 products where the target has them (the library's sm_80 and
/// sm_90 cubins are compiled from source, TESSEL_ARCH_SPECIFIC_FAMILIES),
/// else pairs of k8 ones (its compute_75 PTX).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
constexpr bool kMmaK16 = true;
#else
constexpr bool kMmaK16 = false;
#endif

/// c += A B over k 16: two k8 fragments of A (a, a') and of B (b, b').
__device__ __forceinline__ void mmaK16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                       uint32_t a3, uint32_t b0, uint32_t b1) {
  if constexpr (kMmaK16) {
    mma16x8x16(c, a0, a1, a2, a3, b0, b1);
  } else {
    mma16x8x8(c, a0, a1, b0);
    mma16x8x8(c, a2, a3, b1);
  }
}

__device__ __forceinline__ uint32_t packHalves(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi); // lo in the low 16 bits: the lower column
  return *reinterpret_cast<uint32_t *>(&h);
}

/// The mask's contribution to score (i, j), in log2 units: -inf for a hidden
/// key, else the additive mask times log2(e), or 0.
__device__ __forceinline__ float maskTerm(const void *mask, int kind, int64_t offset) {
  switch (kind) {
  case 1: return static_cast<const float *>(mask)[offset] * kLog2e;
  case 2: return load(static_cast<const f16 *>(mask)[offset]) * kLog2e;
  case 3: return static_cast<const uint8_t *>(mask)[offset] != 0 ? 0.0f : kNegInf;
  default: return 0.0f;
  }
}

/// The keys of [0, sk) that a block of query rows [q0, q0 + rows) sees: the
/// end of the last one (causal: the last row's diagonal).
__device__ __forceinline__ int64_t keyEnd(const AttentionParams &p, int64_t q0, int rows) {
  if (!p.causal)
    return p.sk;
  const int64_t end = q0 + rows + p.sk - p.sq; // row q0 + rows - 1 sees keys <= that - 1
  return end < 0 ? 0 : (end < p.sk ? end : p.sk);
}

/// The Tensor Core kernel's tiling: 4 warps of 16 query rows, BC keys a
/// tile, head dims padded to HD; shared memory Q, then two K and two V
/// buffers, rows of HD + 8 halves.
template <int HD, int BC> struct TcTiling {
  static constexpr int kRows = kAttentionTcRows, kThreads = kAttentionThreads;
  static constexpr int kLd = HD + 8, kDimSteps = HD / 8;
  static constexpr int kKeySteps = BC / 8;
  static constexpr int kChunksPerRow = HD / 8; // 16-byte runs of a row
  static constexpr int kQChunks = kRows * kChunksPerRow / kThreads;
  static constexpr int kKvChunks = BC * kChunksPerRow / kThreads;
  static_assert(HD % 16 == 0 && BC % 8 == 0, "whole fragments");
  static_assert(BC == attentionTcKeys(HD) &&
                    (kRows + 4 * BC) * kLd * 2 == attentionTcSharedBytes(HD),
                "the planner's launch (KernelParams.h)");
  static_assert(kRows * kChunksPerRow % kThreads == 0 && BC * kChunksPerRow % kThreads == 0,
                "the runs of a tile split evenly over the threads");
};

/// Run `index` (of kChunksPerRow per row) of a tile whose rows start at
/// `row0` of a [rows, cols] matrix whose rows are `ld` apart: 8 halves,
/// zero outside the matrix.
__device__ __forceinline__ uint4 loadRun(const f16 *matrix, int64_t rows, int cols, int64_t ld,
                                         int64_t row0, int chunksPerRow, int index) {
  const int r = index / chunksPerRow, c = (index % chunksPerRow) * 8;
  if (row0 + r < rows && c < cols)
    return *reinterpret_cast<const uint4 *>(matrix + (row0 + r) * ld + c);
  return make_uint4(0, 0, 0, 0);
}

/// The block's batch and head: blockIdx.x = b * heads + h, by one 32-bit
/// division (the planner launches fewer than 2^31 block columns; 64-bit
/// divisions, each a call, had been made in every view's address).
struct Head {
  int64_t b, h;
};
__device__ __forceinline__ Head headOf(const AttentionParams &p) {
  const uint32_t bh = blockIdx.x, heads = static_cast<uint32_t>(p.heads);
  return {bh / heads, bh % heads};
}

/// Where `head`'s matrix starts in a tensor read through view `w`.
template <typename T>
__device__ __forceinline__ T *viewBase(T *tensor, const AttentionView &w, Head head) {
  return tensor + w.offset + head.b * w.batch + head.h * w.head;
}

/// A warp's 16 rows of Q (shared rows row0.., HD + 8 halves apart) as A
/// fragments: qf[s] covers dims 8s..8s+7.
template <int HD>
__device__ __forceinline__ void loadQFragments(const f16 *qs, int row0, uint32_t (&qf)[HD / 8][2]) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
#pragma unroll
  for (int s = 0; s < HD / 8; s += 2) {
    uint32_t r[4];
    const int row = row0 + (lane & 7) + ((lane >> 3) & 1) * 8;
    ldmatrixX4(sharedAddress(qs + row * (HD + 8) + (s + (lane >> 4)) * 8), r);
    qf[s][0] = r[0];
    qf[s][1] = r[1];
    qf[s + 1][0] = r[2];
    qf[s + 1][1] = r[3];
  }
}

/// One K/V tile's contribution to a warp's 16 query rows (from warpRow0):
/// the scores S = Q K^T of the tile's BC keys (from k0), scaled and masked
/// in log2 units, the online softmax's update of rowMax and rowSum (rows
/// lane / 4 and + 8) and of o (rescaled), then o += P V. `afterScores` runs
/// between the first product and the rest (the caller's next-tile moves).
template <int HD, int BC, typename Hook>
__device__ __forceinline__ void accumulateTile(const f16 *kt, const f16 *vt,
                                               const uint32_t (&qf)[HD / 8][2],
                                               float (&o)[HD / 8][4], float (&rowMax)[2],
                                               float (&rowSum)[2], int64_t k0, int64_t warpRow0,
                                               const void *mask, int64_t maskBase,
                                               const AttentionParams &p, Hook afterScores) {
  constexpr int kLd = HD + 8, kDimSteps = HD / 8, kKeySteps = BC / 8;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int group = lane >> 2, pair = (lane & 3) * 2;
  const float scaleLog2 = p.scale * kLog2e;
  const int64_t diagonal = p.sk - p.sq; // row i sees keys j <= i + diagonal
    // S = Q K^T: s[n] is the 16x8 fragment of keys k0 + 8n... Dims outer,
    // keys inner: consecutive mma accumulate into different fragments, so
    // none waits for the one before it.
    float s[kKeySteps][4];
#pragma unroll
    for (int n = 0; n < kKeySteps; ++n)
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int d = 0; d + 4 <= kDimSteps; d += 4) {
      uint32_t b[kKeySteps][4];
#pragma unroll
      for (int n = 0; n < kKeySteps; ++n)
        ldmatrixX4(sharedAddress(kt + (n * 8 + (lane & 7)) * kLd + (d + (lane >> 3)) * 8),
                   b[n]);
#pragma unroll
      for (int i = 0; i < 4; i += 2)
#pragma unroll
        for (int n = 0; n < kKeySteps; ++n)
          mmaK16(s[n], qf[d + i][0], qf[d + i][1], qf[d + i + 1][0], qf[d + i + 1][1], b[n][i],
                 b[n][i + 1]);
    }
    if constexpr (kDimSteps % 4 == 2) {
      constexpr int d = kDimSteps - 2;
      uint32_t b[kKeySteps][4];
#pragma unroll
      for (int n = 0; n < kKeySteps; ++n)
        ldmatrixX2(sharedAddress(kt + (n * 8 + (lane & 7)) * kLd +
                                 (d + ((lane >> 3) & 1)) * 8),
                   b[n]);
#pragma unroll
      for (int n = 0; n < kKeySteps; ++n)
        mmaK16(s[n], qf[d][0], qf[d][1], qf[d + 1][0], qf[d + 1][1], b[n][0], b[n][1]);
    }
    afterScores();
    // Scale (f32, before any rounding), mask, in log2 units.
#pragma unroll
    for (int n = 0; n < kKeySteps; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[n][e] *= scaleLog2;
    const bool partial = k0 + BC > p.sk;
    const bool diagonalTile = p.causal && k0 + BC - 1 > warpRow0 + diagonal;
    if (p.maskKind != 0 || partial || diagonalTile) {
#pragma unroll
      for (int n = 0; n < kKeySteps; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t i = warpRow0 + group + (e >= 2 ? 8 : 0);
          const int64_t j = k0 + n * 8 + pair + (e & 1);
          if (j >= p.sk || (p.causal && j > i + diagonal))
            s[n][e] = kNegInf;
          else if (p.maskKind != 0 && i < p.sq)
            s[n][e] += maskTerm(mask, p.maskKind, maskBase + i * p.maskI + j * p.maskJ);
        }
    }
    // The online softmax of rows group (h = 0) and group + 8 (h = 1).
    float scaleOld[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m = kNegInf;
#pragma unroll
      for (int n = 0; n < kKeySteps; ++n)
        m = fmaxf(m, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
      const float newMax = fmaxf(rowMax[h], quadMax(m));
      // A row that has seen no key yet subtracts 0: its weights are 0.
      const float shift = newMax == kNegInf ? 0.0f : newMax;
      scaleOld[h] = exp2Fast(rowMax[h] - shift);
      rowMax[h] = newMax;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < kKeySteps; ++n) {
        s[n][2 * h] = exp2Fast(s[n][2 * h] - shift);
        s[n][2 * h + 1] = exp2Fast(s[n][2 * h + 1] - shift);
        sum += s[n][2 * h] + s[n][2 * h + 1];
      }
      rowSum[h] = fmaf(rowSum[h], scaleOld[h], sum);
    }
#pragma unroll
    for (int d = 0; d < kDimSteps; ++d) {
      o[d][0] *= scaleOld[0];
      o[d][1] *= scaleOld[0];
      o[d][2] *= scaleOld[1];
      o[d][3] *= scaleOld[1];
    }
    // O += P V: the weights of keys 16n.. as A fragments (those of keys
    // 16n.. and 16n + 8.. side by side), V by ldmatrix.trans.
    static_assert(kKeySteps % 2 == 0, "key tiles of whole k16 steps");
#pragma unroll
    for (int n = 0; n < kKeySteps; n += 2) {
      const uint32_t a0 = packHalves(s[n][0], s[n][1]), a1 = packHalves(s[n][2], s[n][3]);
      const uint32_t a2 = packHalves(s[n + 1][0], s[n + 1][1]),
                     a3 = packHalves(s[n + 1][2], s[n + 1][3]);
      const int row = n * 8 + (lane & 7);
#pragma unroll
      for (int d = 0; d + 4 <= kDimSteps; d += 4) {
        uint32_t b[4], b2[4];
        ldmatrixX4Trans(sharedAddress(vt + row * kLd + (d + (lane >> 3)) * 8), b);
        ldmatrixX4Trans(sharedAddress(vt + (row + 8) * kLd + (d + (lane >> 3)) * 8), b2);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          mmaK16(o[d + i], a0, a1, a2, a3, b[i], b2[i]);
      }
      if constexpr (kDimSteps % 4 == 2) {
        constexpr int d = kDimSteps - 2;
        uint32_t b[4], b2[4];
        ldmatrixX2Trans(sharedAddress(vt + row * kLd + (d + ((lane >> 3) & 1)) * 8), b);
        ldmatrixX2Trans(sharedAddress(vt + (row + 8) * kLd + (d + ((lane >> 3) & 1)) * 8),
                        b2);
        mmaK16(o[d], a0, a1, a2, a3, b[0], b2[0]);
        mmaK16(o[d + 1], a0, a1, a2, a3, b[1], b2[1]);
      }
    }
}

template <int HD, int BC>
__device__ __forceinline__ void attentionTc(const f16 *q, const f16 *k, const f16 *v,
                                            const void *mask, f16 *out,
                                            const AttentionParams &p) {
  using T = TcTiling<HD, BC>;
  extern __shared__ uint4 sharedWords[];
  f16 *qs = reinterpret_cast<f16 *>(sharedWords);
  f16 *kBuffers = qs + T::kRows * T::kLd, *vBuffers = kBuffers + 2 * BC * T::kLd;
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const int group = lane >> 2, pair = (lane & 3) * 2; // fragment row, column pair
  const Head head = headOf(p);
  // The heaviest query tiles (causal: the last ones) first.
  const int64_t q0 = static_cast<int64_t>(gridDim.y - 1 - blockIdx.y) * T::kRows;
  const f16 *qb = viewBase(q, p.q, head), *kb = viewBase(k, p.k, head),
            *vb = viewBase(v, p.v, head);
  const int64_t maskBase = head.b * p.maskB + head.h * p.maskH;
  const int64_t keys = keyEnd(p, q0, T::kRows);
  const int tiles = static_cast<int>((keys + BC - 1) / BC);

  // Q and the first key tile into shared memory.
#pragma unroll
  for (int i = 0; i < T::kQChunks; ++i) {
    const int index = tid + i * T::kThreads;
    *reinterpret_cast<uint4 *>(qs + (index / T::kChunksPerRow) * T::kLd +
                               (index % T::kChunksPerRow) * 8) =
        loadRun(qb, p.sq, p.d, p.q.row, q0, T::kChunksPerRow, index);
  }
  if (tiles > 0) {
#pragma unroll
    for (int i = 0; i < T::kKvChunks; ++i) {
      const int index = tid + i * T::kThreads;
      const int offset = (index / T::kChunksPerRow) * T::kLd + (index % T::kChunksPerRow) * 8;
      *reinterpret_cast<uint4 *>(kBuffers + offset) =
          loadRun(kb, p.sk, p.d, p.k.row, 0, T::kChunksPerRow, index);
      *reinterpret_cast<uint4 *>(vBuffers + offset) =
          loadRun(vb, p.sk, p.dv, p.v.row, 0, T::kChunksPerRow, index);
    }
  }
  __syncthreads();

  uint32_t qf[T::kDimSteps][2];
  loadQFragments<HD>(qs, warp * 16, qf);

  float o[T::kDimSteps][4];
#pragma unroll
  for (int s = 0; s < T::kDimSteps; ++s)
    o[s][0] = o[s][1] = o[s][2] = o[s][3] = 0.0f;
  float rowMax[2] = {kNegInf, kNegInf}, rowSum[2] = {0.0f, 0.0f};
  const int64_t warpRow0 = q0 + warp * 16;
  const int64_t diagonal = p.sk - p.sq; // row i sees keys j <= i + diagonal

  for (int tile = 0; tile < tiles; ++tile) {
    const int buffer = tile & 1;
    const bool more = tile + 1 < tiles;
    const int64_t k0 = static_cast<int64_t>(tile) * BC;
    // The next tile into the other buffer, free since the last barrier: K's
    // loads in flight during Q K^T, V's during the softmax and P V, each
    // stored when its math is done (registers for one of them at a time).
    f16 *kn = kBuffers + (buffer ^ 1) * BC * T::kLd, *vn = vBuffers + (buffer ^ 1) * BC * T::kLd;
    uint4 next[T::kKvChunks];
    auto loadNext = [&](const f16 *matrix, int cols, int64_t ld) {
#pragma unroll
      for (int i = 0; i < T::kKvChunks; ++i)
        next[i] =
            loadRun(matrix, p.sk, cols, ld, k0 + BC, T::kChunksPerRow, tid + i * T::kThreads);
    };
    auto storeNext = [&](f16 *buffer) {
#pragma unroll
      for (int i = 0; i < T::kKvChunks; ++i) {
        const int index = tid + i * T::kThreads;
        *reinterpret_cast<uint4 *>(buffer + (index / T::kChunksPerRow) * T::kLd +
                                   (index % T::kChunksPerRow) * 8) = next[i];
      }
    };
    if (more)
      loadNext(kb, p.d, p.k.row);
    // No row of this warp sees any key of the tile (causal): nothing to do.
    const bool hidden = p.causal && k0 > warpRow0 + 15 + diagonal;
    if (!hidden) {
      accumulateTile<HD, BC>(kBuffers + buffer * BC * T::kLd, vBuffers + buffer * BC * T::kLd,
                             qf, o, rowMax, rowSum, k0, warpRow0, mask, maskBase, p, [&] {
                               if (more) {
                                 storeNext(kn);
                                 loadNext(vb, p.dv, p.v.row);
                               }
                             });
    }
    // A warp that skipped the math still moves its share of the next tile.
    if (more) {
      if (hidden) {
        storeNext(kn);
        loadNext(vb, p.dv, p.v.row);
      }
      storeNext(vn);
    }
    __syncthreads(); // publishes the next tile, frees this one
  }

  // O / sum as O times the row's reciprocal: one division a row, not an
  // IEEE division with its slow-path branch an element (those were a
  // quarter of the stall samples of BERT b8's launch, bench/NOTES.md
  // (24)); rounded once to f16. A row without a visible key: 0 x (1 / 0) =
  // NaN.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float reciprocal = 1.0f / quadSum(rowSum[h]);
    const int64_t i = warpRow0 + group + h * 8;
    if (i >= p.sq)
      continue;
    f16 *row = viewBase(out, p.out, head) + i * p.out.row;
#pragma unroll
    for (int d = 0; d < T::kDimSteps; ++d) {
      const int c = d * 8 + pair;
      if (c < p.dv)
        *reinterpret_cast<uint32_t *>(row + c) =
            packHalves(o[d][2 * h] * reciprocal, o[d][2 * h + 1] * reciprocal);
    }
  }
}

/// The split-keys Tensor Core kernel (small grids: a batch-1 encoder has
/// batch x heads x ceil(sq / 64) blocks of the kernel above, 48 for ViT-B/16
/// on 132 SMs): a block of 4 warps takes 16 query rows, and warp w the key
/// tiles w, w + 4, ... (BC keys each), each warp streaming its own tiles
/// through its own shared buffers (loaded by its lanes through registers,
/// the next tile's loads in flight during the math on this one; no block
/// barrier); then the warps' running maxima, sums and unnormalized outputs
/// meet in shared memory and each output element is
///   sum_w 2^(m_w - M) o_w / sum_w 2^(m_w - M) l_w,  M = max_w m_w
/// (a warp that saw no key has m_w = -inf and weighs 0; a row no warp saw
/// a key of gives 0 / 0 = NaN, as the other kernels), rounded once to f16;
/// each row's weights 2^(m_w - M) / sum are computed once, by one thread.
template <int HD, int BC>
__device__ __forceinline__ void attentionTcSplit(const f16 *q, const f16 *k, const f16 *v,
                                                 const void *mask, f16 *out,
                                                 const AttentionParams &p) {
  constexpr int kRows = kAttentionSplitRows, kLd = HD + 8, kDimSteps = HD / 8;
  constexpr int kChunksPerRow = HD / 8, kWarps = kAttentionThreads / 32;
  static_assert(BC == attentionSplitKeys(HD) &&
                    (kRows + 2 * kWarps * BC) * kLd * 2 == attentionSplitSharedBytes(HD),
                "the planner's launch (KernelParams.h)");
  static_assert(kWarps * kRows * (HD + 3) * 4 <= attentionSplitSharedBytes(HD),
                "the combine's partial results fit the shared memory");
  extern __shared__ uint4 sharedWords[];
  f16 *qs = reinterpret_cast<f16 *>(sharedWords);
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const int group = lane >> 2, pair = (lane & 3) * 2;
  f16 *kw = qs + kRows * kLd + warp * 2 * BC * kLd, *vw = kw + BC * kLd;
  const Head head = headOf(p);
  const int64_t q0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const f16 *qb = viewBase(q, p.q, head), *kb = viewBase(k, p.k, head),
            *vb = viewBase(v, p.v, head);
  const int64_t maskBase = head.b * p.maskB + head.h * p.maskH;
  const int tiles = static_cast<int>((keyEnd(p, q0, kRows) + BC - 1) / BC);

  // A warp's K and V tile passes through registers: the next one's loads
  // are in flight during the math on this one (the first one's during Q's).
  constexpr int kRuns = BC * kChunksPerRow / 32;
  static_assert(BC * kChunksPerRow % 32 == 0, "a tile's runs split evenly over a warp");
  uint4 kr[kRuns], vr[kRuns];
  auto loadTile = [&](int tile) {
    const int64_t k0 = static_cast<int64_t>(tile) * BC;
#pragma unroll
    for (int i = 0; i < kRuns; ++i) {
      kr[i] = loadRun(kb, p.sk, p.d, p.k.row, k0, kChunksPerRow, lane + i * 32);
      vr[i] = loadRun(vb, p.sk, p.dv, p.v.row, k0, kChunksPerRow, lane + i * 32);
    }
  };
  if (warp < tiles)
    loadTile(warp);

  for (int index = tid; index < kRows * kChunksPerRow; index += kAttentionThreads)
    *reinterpret_cast<uint4 *>(qs + (index / kChunksPerRow) * kLd + (index % kChunksPerRow) * 8) =
        loadRun(qb, p.sq, p.d, p.q.row, q0, kChunksPerRow, index);
  __syncthreads();
  uint32_t qf[kDimSteps][2];
  loadQFragments<HD>(qs, 0, qf);

  float o[kDimSteps][4];
#pragma unroll
  for (int d = 0; d < kDimSteps; ++d)
    o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float rowMax[2] = {kNegInf, kNegInf}, rowSum[2] = {0.0f, 0.0f};
  for (int tile = warp; tile < tiles; tile += kWarps) {
    const int64_t k0 = static_cast<int64_t>(tile) * BC;
#pragma unroll
    for (int i = 0; i < kRuns; ++i) {
      const int index = lane + i * 32;
      const int offset = (index / kChunksPerRow) * kLd + (index % kChunksPerRow) * 8;
      *reinterpret_cast<uint4 *>(kw + offset) = kr[i];
      *reinterpret_cast<uint4 *>(vw + offset) = vr[i];
    }
    __syncwarp();
    if (tile + kWarps < tiles)
      loadTile(tile + kWarps);
    accumulateTile<HD, BC>(kw, vw, qf, o, rowMax, rowSum, k0, q0, mask, maskBase, p, [] {});
    __syncwarp(); // every lane is done with the tile before the next one lands
  }

  // The warps' partial results, over the buffers (every warp is done).
  __syncthreads();
  float *partial = reinterpret_cast<float *>(sharedWords); // [warp][row][HD]
  float *maxima = partial + kWarps * kRows * HD, *sums = maxima + kWarps * kRows,
        *weights = sums + kWarps * kRows; // [warp][row]
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = group + h * 8;
    const float sum = quadSum(rowSum[h]);
    if ((lane & 3) == 0) {
      maxima[warp * kRows + row] = rowMax[h];
      sums[warp * kRows + row] = sum;
    }
#pragma unroll
    for (int d = 0; d < kDimSteps; ++d) {
      partial[(warp * kRows + row) * HD + d * 8 + pair] = o[d][2 * h];
      partial[(warp * kRows + row) * HD + d * 8 + pair + 1] = o[d][2 * h + 1];
    }
  }
  __syncthreads();
  // Each row's weights once (thread t < kRows: row t), not per element:
  // warp w's 2^(m_w - M) times the reciprocal of the row's sum.
  if (tid < kRows) {
    float m = kNegInf;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      m = fmaxf(m, maxima[w * kRows + tid]);
    const float shift = m == kNegInf ? 0.0f : m;
    float f[kWarps], den = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      f[w] = exp2Fast(maxima[w * kRows + tid] - shift);
      den = fmaf(f[w], sums[w * kRows + tid], den);
    }
    const float reciprocal = 1.0f / den; // no key: 0 x (1 / 0) = NaN weights
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      weights[w * kRows + tid] = f[w] * reciprocal;
  }
  __syncthreads();
  f16 *outBase = viewBase(out, p.out, head);
  for (int e = tid; e < kRows * HD; e += kAttentionThreads) {
    const int row = e / HD, c = e % HD;
    const int64_t i = q0 + row;
    if (i >= p.sq || c >= p.dv)
      continue;
    float y = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      y = fmaf(weights[w * kRows + row], partial[(w * kRows + row) * HD + c], y);
    outBase[i * p.out.row + c] = store<f16>(y);
  }
}

/// The SIMT kernel's tiling: 4 warps of 4 query rows, 32 keys a tile, head
/// dims up to 128 (lane l holds output dims l + 32u, u < 4).
struct SimtTiling {
  static constexpr int kWarps = kAttentionThreads / 32, kRows = kAttentionSimtRows;
  static constexpr int kRowsPerWarp = kRows / kWarps;
  static constexpr int kThreads = kAttentionThreads, kKeys = 32, kMaxDim = kAttentionSimtMaxDim;
  static constexpr int kDimsPerLane = kMaxDim / 32;
};

template <typename T>
__device__ __forceinline__ void attentionSimt(const T *q, const T *k, const T *v,
                                              const void *mask, T *out,
                                              const AttentionParams &p) {
  using S = SimtTiling;
  __shared__ float qs[S::kRows][S::kMaxDim];
  __shared__ float ks[S::kKeys][S::kMaxDim + 1]; // odd row stride: lane j reads row j
  __shared__ float vs[S::kKeys][S::kMaxDim];
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const Head head = headOf(p);
  const int64_t q0 = static_cast<int64_t>(gridDim.y - 1 - blockIdx.y) * S::kRows;
  const T *qb = viewBase(q, p.q, head), *kb = viewBase(k, p.k, head),
          *vb = viewBase(v, p.v, head);
  T *ob = viewBase(out, p.out, head);
  const int64_t maskBase = head.b * p.maskB + head.h * p.maskH;
  const int64_t keys = keyEnd(p, q0, S::kRows);
  const int64_t diagonal = p.sk - p.sq;

  for (int index = tid; index < S::kRows * p.d; index += S::kThreads) {
    const int r = index / p.d, c = index % p.d;
    qs[r][c] = q0 + r < p.sq ? load(qb[(q0 + r) * p.q.row + c]) : 0.0f;
  }
  float o[S::kRowsPerWarp][S::kDimsPerLane] = {};
  float rowMax[S::kRowsPerWarp], rowSum[S::kRowsPerWarp] = {};
#pragma unroll
  for (int r = 0; r < S::kRowsPerWarp; ++r)
    rowMax[r] = kNegInf;
  const float scaleLog2 = p.scale * kLog2e;

  for (int64_t k0 = 0; k0 < keys; k0 += S::kKeys) {
    __syncthreads(); // the previous tile's readers are done (and Q is stored)
    for (int index = tid; index < S::kKeys * p.d; index += S::kThreads) {
      const int j = index / p.d, c = index % p.d;
      ks[j][c] = k0 + j < p.sk ? load(kb[(k0 + j) * p.k.row + c]) : 0.0f;
    }
    for (int index = tid; index < S::kKeys * p.dv; index += S::kThreads) {
      const int j = index / p.dv, c = index % p.dv;
      vs[j][c] = k0 + j < p.sk ? load(vb[(k0 + j) * p.v.row + c]) : 0.0f;
    }
    __syncthreads();
    // Lane `lane` scores key k0 + lane against the warp's rows.
    float s[S::kRowsPerWarp] = {};
    for (int c = 0; c < p.d; ++c) {
      const float kc = ks[lane][c];
#pragma unroll
      for (int r = 0; r < S::kRowsPerWarp; ++r)
        s[r] = fmaf(qs[warp * S::kRowsPerWarp + r][c], kc, s[r]);
    }
    const int64_t j = k0 + lane;
#pragma unroll
    for (int r = 0; r < S::kRowsPerWarp; ++r) {
      const int64_t i = q0 + warp * S::kRowsPerWarp + r;
      float x = s[r] * scaleLog2;
      if (j >= p.sk || (p.causal && j > i + diagonal))
        x = kNegInf;
      else if (p.maskKind != 0 && i < p.sq)
        x += maskTerm(mask, p.maskKind, maskBase + i * p.maskI + j * p.maskJ);
      float m = x;
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
      const float newMax = fmaxf(rowMax[r], m);
      const float shift = newMax == kNegInf ? 0.0f : newMax;
      const float scaleOld = exp2Fast(rowMax[r] - shift);
      rowMax[r] = newMax;
      const float w = exp2Fast(x - shift);
      rowSum[r] = fmaf(rowSum[r], scaleOld, w); // this lane's share of the row's sum
#pragma unroll
      for (int u = 0; u < S::kDimsPerLane; ++u)
        o[r][u] *= scaleOld;
      // o += sum over the tile's keys jj of w_jj * V[jj], w_jj from lane jj.
#pragma unroll 8
      for (int jj = 0; jj < S::kKeys; ++jj) {
        const float wj = __shfl_sync(0xffffffffu, w, jj);
#pragma unroll
        for (int u = 0; u < S::kDimsPerLane; ++u)
          o[r][u] = fmaf(wj, vs[jj][(lane + 32 * u) & (S::kMaxDim - 1)], o[r][u]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < S::kRowsPerWarp; ++r) {
    float sum = rowSum[r];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const int64_t i = q0 + warp * S::kRowsPerWarp + r;
    if (i >= p.sq)
      continue;
#pragma unroll
    for (int u = 0; u < S::kDimsPerLane; ++u) {
      const int c = lane + 32 * u;
      if (c < p.dv)
        ob[i * p.out.row + c] = store<T>(o[r][u] / sum);
    }
  }
}

} // namespace attention
} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_ATTENTION_CUH
