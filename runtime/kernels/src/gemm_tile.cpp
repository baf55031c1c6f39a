//===- gemm_tile.cpp - the packed GEMM of conv, gemm and matmul ------------===//
//
// acc = A * B on a 6 x 16 register tile of accumulators, K in blocks of 256,
// B packed in 16-column panels (gemm.h). The tile's loop is written once, on
// GCC's vector types; an AVX2+FMA build of it is chosen at run time on
// x86-64 (the same source, so the build differs only in instructions). This
// file is the kernels' variation point, as IREE keeps mmt4d_tile.c apart
// from mmt4d.c: conv.cpp and gemm.cpp build the operands and run the
// epilogue, this runs the product.
//
//===----------------------------------------------------------------------===//
#include "gemm.h"
#include "common.h"

#include <algorithm>
#include <cstring>

namespace tessel::cpu {
namespace {

template <typename C> struct Simd;
template <> struct Simd<float> { typedef float type __attribute__((vector_size(32))); };
template <> struct Simd<double> { typedef double type __attribute__((vector_size(32))); };

#define TESSEL_ALWAYS_INLINE inline __attribute__((always_inline))

// c[i * ldc + j] (+)= sum over kc of A(i, k) * b[k * kNR + j], i < mr, j < kNR.
template <typename C>
TESSEL_ALWAYS_INLINE void microKernel(int64_t kc, const C *a, int64_t rsa, int64_t csa,
                                      int64_t mr, const C *b, C *c, int64_t ldc,
                                      bool accumulate) {
  using V = typename Simd<C>::type;
  constexpr int L = static_cast<int>(sizeof(V) / sizeof(C));
  constexpr int NV = static_cast<int>(kNR) / L;
  V acc[kMR][NV];
  for (int i = 0; i < kMR; ++i)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = V{};
  // Rows past mr read the last real row again; their sums are dropped.
  const C *row[kMR];
  for (int i = 0; i < kMR; ++i)
    row[i] = a + (i < mr ? i : mr - 1) * rsa;
  for (int64_t k = 0; k < kc; ++k) {
    V bv[NV];
    for (int v = 0; v < NV; ++v)
      std::memcpy(&bv[v], b + k * kNR + v * L, sizeof(V));
    const int64_t ak = k * csa;
    for (int i = 0; i < kMR; ++i) {
      const C av = row[i][ak]; // broadcast by the vector-scalar product
      for (int v = 0; v < NV; ++v)
        acc[i][v] += av * bv[v];
    }
  }
  for (int i = 0; i < kMR; ++i) {
    if (i >= mr)
      break;
    C *cr = c + i * ldc;
    for (int v = 0; v < NV; ++v) {
      V r = acc[i][v];
      if (accumulate) {
        V old;
        std::memcpy(&old, cr + v * L, sizeof(V));
        r += old;
      }
      std::memcpy(cr + v * L, &r, sizeof(V));
    }
  }
}

// acc[i * ldc + j] = sum_k A(i, k) * B(k, j) for i < m, j < np (np a
// multiple of kNR).
template <typename C>
TESSEL_ALWAYS_INLINE void gemmPackedBody(int64_t m, int64_t k, int64_t np, const C *a, int64_t rsa,
                                         int64_t csa, const C *bp, C *acc, int64_t ldc) {
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      std::fill(acc + i * ldc, acc + i * ldc + np, C(0));
    return;
  }
  for (int64_t k0 = 0; k0 < k; k0 += kKC) {
    const int64_t kc = std::min(kKC, k - k0);
    for (int64_t j0 = 0; j0 < np; j0 += kNR) {
      const C *b = bp + j0 * k + k0 * kNR;
      for (int64_t i0 = 0; i0 < m; i0 += kMR)
        microKernel<C>(kc, a + i0 * rsa + k0 * csa, rsa, csa, std::min(kMR, m - i0), b,
                       acc + i0 * ldc + j0, ldc, k0 > 0);
    }
  }
}

template <typename C>
void gemmPackedDefault(int64_t m, int64_t k, int64_t np, const C *a, int64_t rsa, int64_t csa,
                       const C *bp, C *acc, int64_t ldc) {
  gemmPackedBody<C>(m, k, np, a, rsa, csa, bp, acc, ldc);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSEL_HAVE_AVX2_GEMM 1
template <typename C>
__attribute__((target("avx2,fma"))) void gemmPackedAvx2(int64_t m, int64_t k, int64_t np,
                                                        const C *a, int64_t rsa, int64_t csa,
                                                        const C *bp, C *acc, int64_t ldc) {
  gemmPackedBody<C>(m, k, np, a, rsa, csa, bp, acc, ldc);
}

bool haveAvx2Fma() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}
#endif

} // namespace

template <typename C>
void gemmPacked(int64_t m, int64_t k, int64_t np, const C *a, int64_t rsa, int64_t csa,
                const C *bp, C *acc, int64_t ldc) {
#ifdef TESSEL_HAVE_AVX2_GEMM
  if (haveAvx2Fma())
    return gemmPackedAvx2<C>(m, k, np, a, rsa, csa, bp, acc, ldc);
#endif
  gemmPackedDefault<C>(m, k, np, a, rsa, csa, bp, acc, ldc);
}

template <typename C>
void packPanels(const TensorView &t, int64_t offset, int64_t rs, int64_t cs, int64_t k,
                int64_t n, C *bp) {
  withFloatType(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *src = static_cast<const T *>(t.data) + offset;
    for (int64_t j0 = 0; j0 < n; j0 += kNR) {
      C *panel = bp + j0 * k;
      const int64_t width = std::min(kNR, n - j0);
      for (int64_t kk = 0; kk < k; ++kk) {
        C *dst = panel + kk * kNR;
        const T *s = src + kk * rs + j0 * cs;
        for (int64_t j = 0; j < width; ++j)
          dst[j] = loadAs<C>(s[j * cs]);
        for (int64_t j = width; j < kNR; ++j)
          dst[j] = C(0);
      }
    }
  });
}

// A chunk's scratch block: 2^18 elements, 1 MiB of float (within L2).
constexpr int64_t kChunkElements = int64_t(1) << 18;

int64_t chunkRows(int64_t total, int64_t rowElements) {
  int64_t rows = kChunkElements / std::max<int64_t>(1, rowElements) / kMR * kMR;
  return std::max<int64_t>(1, std::min(total, std::max(kMR, rows)));
}

template void gemmPacked<float>(int64_t, int64_t, int64_t, const float *, int64_t, int64_t,
                                const float *, float *, int64_t);
template void gemmPacked<double>(int64_t, int64_t, int64_t, const double *, int64_t, int64_t,
                                 const double *, double *, int64_t);
template void packPanels<float>(const TensorView &, int64_t, int64_t, int64_t, int64_t,
                                int64_t, float *);
template void packPanels<double>(const TensorView &, int64_t, int64_t, int64_t, int64_t,
                                 int64_t, double *);

} // namespace tessel::cpu
