//===- nn.cpp - convolution, matrix products, normalization, pooling -------===//
//
// Kernels for the Tensor Core candidates (conv, conv_transpose, gemm, matmul)
// and for norms and pools, N-d where ONNX is N-d.
//
// Precision: f32 and f16 tensors compute and accumulate in float (f16 is
// widened to float as it is loaded: im2col chunks and packed weights are
// built in float); f64 tensors compute in double. conv and gemm apply their
// fused epilogue (+ bias, + residual or beta * C, activation) to the float
// (double) accumulators and round once into the result. Normalizations and
// average pooling accumulate in double for every dtype (numerically
// sensitive ops).
//
// conv, gemm and matmul share one packed GEMM (6 x 16 register tile, K in
// blocks of 256, an AVX2+FMA build of it chosen at run time on x86-64).
// Scratch comes from per-thread buffers that grow to the largest request and
// are kept (scratch.h), so after an engine's first run these kernels allocate
// nothing.
//
//===----------------------------------------------------------------------===//
#include "tessel/half.h"
#include "tessel/cpu_kernels.h"
#include "registry.h"
#include "scratch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tessel::cpu {
namespace {

KernelStatus fail(std::string message) { return KernelStatus{std::move(message)}; }

KernelStatus unsupported(const char *op, DType dtype) {
  return fail(std::string(op) + ": unsupported dtype " + dtypeName(dtype));
}

bool present(const TensorView *v) {
  return v && (v->data || v->numElements() == 0);
}

// Checks that the first `required` inputs and the output are present.
KernelStatus checkArity(const char *op, const std::vector<const TensorView *> &inputs,
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
const TensorView *optionalInput(const std::vector<const TensorView *> &inputs, size_t i) {
  return i < inputs.size() && present(inputs[i]) ? inputs[i] : nullptr;
}

bool isFloat(DType d) { return d == DType::F32 || d == DType::F64 || d == DType::F16; }

double readDouble(const TensorView &v, int64_t i) {
  switch (v.dtype) {
  case DType::F32: return static_cast<const float *>(v.data)[i];
  case DType::F64: return static_cast<const double *>(v.data)[i];
  case DType::F16: return halfToFloat(static_cast<const uint16_t *>(v.data)[i]);
  default: return 0;
  }
}

void writeDouble(TensorView &v, int64_t i, double x) {
  switch (v.dtype) {
  case DType::F32: static_cast<float *>(v.data)[i] = static_cast<float>(x); break;
  case DType::F64: static_cast<double *>(v.data)[i] = x; break;
  case DType::F16:
    static_cast<uint16_t *>(v.data)[i] = floatToHalf(static_cast<float>(x));
    break;
  default: break;
  }
}

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

//===----------------------------------------------------------------------===//
// Shapes and windows
//===----------------------------------------------------------------------===//

// Product of v[begin:end) (end clamped to the size).
int64_t product(const std::vector<int64_t> &v, size_t begin = 0, size_t end = SIZE_MAX) {
  int64_t p = 1;
  auto last = v.begin() + static_cast<std::ptrdiff_t>(std::min(end, v.size()));
  for (auto it = v.begin() + static_cast<std::ptrdiff_t>(std::min(begin, v.size())); it < last; ++it)
    p *= *it;
  return p;
}

// floor(a / b) and ceil(a / b) for b > 0.
int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t roundUp(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// Spatial extents without the heap: conv and the pools take at most this
// many spatial dims (ONNX models use 1 to 3).
constexpr size_t kMaxSpatial = 8;

struct Dims {
  int64_t v[kMaxSpatial] = {};
  size_t n = 0;

  int64_t &operator[](size_t i) { return v[i]; }
  int64_t operator[](size_t i) const { return v[i]; }
  size_t size() const { return n; }
  void assign(size_t count, int64_t value) {
    n = count;
    for (size_t i = 0; i < n; ++i)
      v[i] = value;
  }
  void assign(const int64_t *begin, const int64_t *end) {
    n = static_cast<size_t>(end - begin);
    for (size_t i = 0; i < n; ++i)
      v[i] = begin[i];
  }
  int64_t product() const {
    int64_t p = 1;
    for (size_t i = 0; i < n; ++i)
      p *= v[i];
    return p;
  }
  // Row-major strides of these extents.
  Dims strides() const {
    Dims s;
    s.assign(n, 1);
    for (size_t d = n; d-- > 1;)
      s[d - 1] = s[d] * v[d];
    return s;
  }
  // Advances `index` (row-major) within these extents; false after the last.
  bool next(Dims &index) const {
    for (size_t d = n; d-- > 0;) {
      if (++index[d] < v[d])
        return true;
      index[d] = 0;
    }
    return false;
  }
};

// strides/pads/dilations with ONNX defaults, validated against `spatial`.
struct Window {
  Dims strides, padBegin, padEnd, dilations;
};

bool readWindow(const Attrs &attrs, size_t spatial, Window &w, std::string &error) {
  if (spatial > kMaxSpatial) {
    error = "at most " + std::to_string(kMaxSpatial) + " spatial dims are supported";
    return false;
  }
  const std::vector<int64_t> &strides = attrs.getInts("strides");
  const std::vector<int64_t> &dilations = attrs.getInts("dilations");
  const std::vector<int64_t> &pads = attrs.getInts("pads");
  if ((!strides.empty() && strides.size() != spatial) ||
      (!dilations.empty() && dilations.size() != spatial)) {
    error = "strides and dilations must hold " + std::to_string(spatial) + " values";
    return false;
  }
  if (strides.empty())
    w.strides.assign(spatial, 1);
  else
    w.strides.assign(strides.data(), strides.data() + spatial);
  if (dilations.empty())
    w.dilations.assign(spatial, 1);
  else
    w.dilations.assign(dilations.data(), dilations.data() + spatial);
  if (pads.empty()) {
    w.padBegin.assign(spatial, 0);
    w.padEnd.assign(spatial, 0);
  } else if (pads.size() == 2 * spatial) {
    w.padBegin.assign(pads.data(), pads.data() + spatial);
    w.padEnd.assign(pads.data() + spatial, pads.data() + 2 * spatial);
  } else {
    error = "pads must hold " + std::to_string(2 * spatial) + " values";
    return false;
  }
  for (size_t d = 0; d < spatial; ++d)
    if (w.strides[d] < 1 || w.dilations[d] < 1) {
      error = "strides and dilations must be positive";
      return false;
    }
  return true;
}

// "NCHW" (also an absent or empty attribute) or "NHWC".
bool readLayout(const Attrs &attrs, bool &nhwc, std::string &error) {
  const std::string &layout = attrs.getString("layout");
  if (layout.empty() || layout == "NCHW") {
    nhwc = false;
  } else if (layout == "NHWC") {
    nhwc = true;
  } else {
    error = "unknown layout '" + layout + "' (NCHW or NHWC)";
    return false;
  }
  return true;
}

// Iterates every multi-index of `shape` except along its last dim:
// f(const std::vector<int64_t>& index) with index.size() == shape.size() - 1.
template <typename F> void forEachOuter(const std::vector<int64_t> &shape, F &&f) {
  size_t rank = shape.size() - 1;
  for (size_t d = 0; d < rank; ++d)
    if (shape[d] == 0)
      return;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    f(index);
    size_t d = rank;
    while (d > 0) {
      --d;
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
      if (d == 0)
        return;
    }
    if (rank == 0)
      return;
  }
}

// Unflattens `linear` into the multi-index of `shape`.
void unflatten(int64_t linear, const std::vector<int64_t> &shape, std::vector<int64_t> &index) {
  index.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? linear % shape[d] : 0;
    linear = shape[d] ? linear / shape[d] : 0;
  }
}

void unflatten(int64_t linear, const Dims &shape, int64_t *index) {
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? linear % shape[d] : 0;
    linear = shape[d] ? linear / shape[d] : 0;
  }
}

//===----------------------------------------------------------------------===//
// The epilogue of conv and gemm
//===----------------------------------------------------------------------===//

// The activation a Tensor Core kernel applies to its accumulators before the
// one store; the same functions as the elementwise ops of the same names.
enum class Act { None, Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSwish };

struct Activation {
  Act kind = Act::None;
  double alpha = 0, beta = 0; // clip: min, max; leaky_relu: slope
};

// Reads an activation (`kindName`) and its parameters; absent is "none".
KernelStatus readActivation(const char *op, const Attrs &attrs, const char *kindName,
                            const char *alphaName, const char *betaName, Activation &a) {
  const std::string &kind = attrs.getString(kindName);
  if (kind.empty() || kind == "none")
    a.kind = Act::None;
  else if (kind == "relu")
    a.kind = Act::Relu;
  else if (kind == "clip")
    a.kind = Act::Clip;
  else if (kind == "leaky_relu")
    a.kind = Act::LeakyRelu;
  else if (kind == "sigmoid")
    a.kind = Act::Sigmoid;
  else if (kind == "tanh")
    a.kind = Act::Tanh;
  else if (kind == "hard_swish")
    a.kind = Act::HardSwish;
  else
    return fail(std::string(op) + ": unknown activation '" + kind +
                "' (none, relu, clip, leaky_relu, sigmoid, tanh, hard_swish)");
  a.alpha = attrs.getFloat(alphaName, 0.0);
  a.beta = attrs.getFloat(betaName, 0.0);
  return {};
}

template <typename C> void activateRow(C *v, int64_t n, const Activation &a) {
  const C alpha = static_cast<C>(a.alpha), beta = static_cast<C>(a.beta);
  switch (a.kind) {
  case Act::None: break;
  case Act::Relu:
    for (int64_t j = 0; j < n; ++j)
      v[j] = v[j] < 0 ? C(0) : v[j];
    break;
  case Act::Clip:
    // NaN passes through (both comparisons false).
    for (int64_t j = 0; j < n; ++j) {
      C x = v[j] < alpha ? alpha : v[j];
      v[j] = x > beta ? beta : x;
    }
    break;
  case Act::LeakyRelu:
    for (int64_t j = 0; j < n; ++j)
      v[j] = v[j] < 0 ? alpha * v[j] : v[j];
    break;
  case Act::Sigmoid:
    // Stable in both tails.
    for (int64_t j = 0; j < n; ++j) {
      const C x = v[j];
      if (x >= 0) {
        v[j] = C(1) / (C(1) + std::exp(-x));
      } else {
        const C e = std::exp(x);
        v[j] = e / (C(1) + e);
      }
    }
    break;
  case Act::Tanh:
    for (int64_t j = 0; j < n; ++j)
      v[j] = std::tanh(v[j]);
    break;
  case Act::HardSwish:
    for (int64_t j = 0; j < n; ++j) {
      C t = v[j] / C(6) + C(0.5);
      t = t < 0 ? C(0) : (t > 1 ? C(1) : t);
      v[j] = v[j] * t;
    }
    break;
  }
}

// v[j] += scale * t[offset + j * stride] for j < n (t a float tensor).
template <typename C>
void addRow(C *v, int64_t n, const TensorView &t, int64_t offset, int64_t stride, C scale) {
  withFloatType(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *src = static_cast<const T *>(t.data) + offset;
    if (scale == C(1)) {
      for (int64_t j = 0; j < n; ++j)
        v[j] += loadAs<C>(src[j * stride]);
    } else {
      for (int64_t j = 0; j < n; ++j)
        v[j] += scale * loadAs<C>(src[j * stride]);
    }
  });
}

// out[offset + j] = v[j] rounded to the result's dtype, for j < n.
template <typename C> void storeRow(const C *v, int64_t n, TensorView &out, int64_t offset) {
  withFloatType(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *dst = static_cast<T *>(out.data) + offset;
    for (int64_t j = 0; j < n; ++j)
      dst[j] = storeElem<T>(static_cast<MathType<T>>(v[j]));
  });
}

// An addend of the epilogue: scale * t[offset + j * stride] (stride 0 to
// broadcast one value along the row); absent when t is nullptr.
struct Addend {
  const TensorView *t = nullptr;
  int64_t offset = 0, stride = 1;
  double scale = 1;
};

// The epilogue, on one output row of n accumulators (modified in place):
// out[outOffset + j] = act(scale * v[j] + first + second), rounded once.
template <typename C>
void epilogueRow(C *v, int64_t n, double scale, const Addend &first, const Addend &second,
                 const Activation &act, TensorView &out, int64_t outOffset) {
  if (scale != 1.0) {
    const C s = static_cast<C>(scale);
    for (int64_t j = 0; j < n; ++j)
      v[j] *= s;
  }
  for (const Addend *a : {&first, &second})
    if (a->t)
      addRow(v, n, *a->t, a->offset, a->stride, static_cast<C>(a->scale));
  activateRow(v, n, act);
  storeRow(v, n, out, outOffset);
}

//===----------------------------------------------------------------------===//
// Packed GEMM: acc[i, j] = sum_k A(i, k) * B(k, j)
//===----------------------------------------------------------------------===//
//
// A(i, k) = a[i * rsa + k * csa] (any strides: im2col rows, an im2col chunk
// stored k-major, a transposed operand); B is packed in panels of kNR columns,
// element (k, j) at bp[(j / kNR) * K * kNR + k * kNR + j % kNR], zero past
// the last real column. A kMR x kNR tile of accumulators stays in registers
// while k runs over a block of kKC.

constexpr int64_t kMR = 6, kNR = 16, kKC = 256;

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

template <typename C>
void gemmPacked(int64_t m, int64_t k, int64_t np, const C *a, int64_t rsa, int64_t csa,
                const C *bp, C *acc, int64_t ldc) {
#ifdef TESSEL_HAVE_AVX2_GEMM
  if (haveAvx2Fma())
    return gemmPackedAvx2<C>(m, k, np, a, rsa, csa, bp, acc, ldc);
#endif
  gemmPackedDefault<C>(m, k, np, a, rsa, csa, bp, acc, ldc);
}

// Packs B(kk, j) = t[offset + kk * rs + j * cs] (kk < k, j < n) into panels of
// kNR columns (see above), converted to C; columns n..roundUp(n, kNR) are 0.
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

// Rows of a chunk: keep each scratch block near 2^18 elements (1 MiB of
// float, within L2), and at least kMR.
constexpr int64_t kChunkElements = int64_t(1) << 18;

int64_t chunkRows(int64_t total, int64_t rowElements) {
  int64_t rows = kChunkElements / std::max<int64_t>(1, rowElements) / kMR * kMR;
  return std::max<int64_t>(1, std::min(total, std::max(kMR, rows)));
}

//===----------------------------------------------------------------------===//
// conv
//===----------------------------------------------------------------------===//

struct ConvGeometry {
  int64_t batch, inChannels, outChannels, group;
  Dims inSpatial, outSpatial, kernel;
  Window window;
  bool nhwc = false;
};

// The operands of one conv call.
struct ConvOperands {
  const TensorView &x, &w;
  const TensorView *bias, *residual;
  const Activation &act;
  TensorView &out;
};

// The epilogue of an NHWC conv output row: position p of batch n, `count`
// channels from mFirst, accumulators contiguous.
template <typename C>
void convEpilogueNhwc(const ConvOperands &o, C *acc, int64_t count, int64_t mFirst,
                      int64_t outOffset) {
  epilogueRow<C>(acc, count, 1.0, Addend{o.bias, mFirst, 1, 1.0},
                 Addend{o.residual, outOffset, 1, 1.0}, o.act, o.out, outOffset);
}

// Depthwise (one input channel per group) NHWC: the channels are contiguous
// in the input and the result, so each output position is a sum over taps of
// channel vectors: y[p, m] = sum_t x[pos(p, t), m / mg] * w[m, t].
template <typename T, typename C>
void convDepthwiseNhwc(const ConvGeometry &g, const ConvOperands &o, const int64_t *tapOffset) {
  const T *x = static_cast<const T *>(o.x.data);
  const size_t ns = g.inSpatial.size();
  const int64_t M = g.outChannels, Cin = g.inChannels, mg = M / g.group;
  const int64_t kSize = g.kernel.product(), inSize = g.inSpatial.product();
  const int64_t outSize = g.outSpatial.product();
  const Dims inStride = g.inSpatial.strides();
  // w[m, t] (OHWI with one channel) transposed to wt[t, m], in C.
  C *wt = scratch<C>(kSlotPacked, static_cast<size_t>(kSize * M));
  withFloatType(o.w.dtype, [&](auto tag) {
    using W = decltype(tag);
    const W *w = static_cast<const W *>(o.w.data);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t t = 0; t < kSize; ++t)
        wt[t * M + m] = loadAs<C>(w[m * kSize + t]);
  });
  C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(M));
  for (int64_t n = 0; n < g.batch; ++n) {
    Dims op;
    op.assign(ns, 0);
    for (int64_t p = 0; p < outSize; ++p, g.outSpatial.next(op)) {
      std::fill(acc, acc + M, C(0));
      for (int64_t t = 0; t < kSize; ++t) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < ns; ++d) {
          const int64_t i = op[d] * g.window.strides[d] - g.window.padBegin[d] + tapOffset[t * ns + d];
          inside = inside && i >= 0 && i < g.inSpatial[d];
          off += i * inStride[d];
        }
        if (!inside)
          continue;
        const T *xr = x + (n * inSize + off) * Cin;
        const C *wr = wt + t * M;
        if (mg == 1) {
          for (int64_t m = 0; m < M; ++m)
            acc[m] += loadAs<C>(xr[m]) * wr[m];
        } else {
          for (int64_t m = 0; m < M; ++m)
            acc[m] += loadAs<C>(xr[m / mg]) * wr[m];
        }
      }
      const int64_t outOffset = (n * outSize + p) * M;
      convEpilogueNhwc<C>(o, acc, M, 0, outOffset);
    }
  }
}

// NHWC: implicit GEMM over rows of im2col. Row p of a chunk holds, for each
// tap t (kernel row-major) the group's cg input channels at the position tap
// t of output position p reads (0 in the padding): K = taps * cg contiguous
// values, in the order of the OHWI weight rows, so that
// y[p, m] = sum_k col[p, k] * w[m, k].
template <typename T, typename C>
void convNhwc(const ConvGeometry &g, const ConvOperands &o, const int64_t *tapOffset) {
  const T *x = static_cast<const T *>(o.x.data);
  const size_t ns = g.inSpatial.size();
  const int64_t M = g.outChannels, Cin = g.inChannels;
  const int64_t cg = Cin / g.group, mg = M / g.group;
  const int64_t kSize = g.kernel.product(), K = kSize * cg;
  const int64_t inSize = g.inSpatial.product(), outSize = g.outSpatial.product();
  const int64_t Mp = roundUp(mg, kNR);
  const Dims inStride = g.inSpatial.strides();

  // A 1x1, stride-1, unpadded conv of f32 (f64) data reads its rows straight
  // from the input.
  bool direct = std::is_same<T, C>::value;
  for (size_t d = 0; d < ns; ++d)
    direct = direct && g.kernel[d] == 1 && g.window.strides[d] == 1 &&
             g.window.padBegin[d] == 0 && g.inSpatial[d] == g.outSpatial[d];

  const int64_t rowsPerChunk = chunkRows(outSize, direct ? Mp : std::max(K, Mp));
  C *wp = scratch<C>(kSlotPacked, static_cast<size_t>(Mp * K));
  C *col = direct ? nullptr : scratch<C>(kSlotCol, static_cast<size_t>(rowsPerChunk * K));
  C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(rowsPerChunk * Mp));

  for (int64_t grp = 0; grp < g.group; ++grp) {
    // Weight rows grp*mg .. +mg, each K contiguous: B(k, j) = w[(grp*mg + j)*K + k].
    packPanels<C>(o.w, grp * mg * K, 1, K, K, mg, wp);
    for (int64_t n = 0; n < g.batch; ++n) {
      const T *xn = x + n * inSize * Cin + grp * cg;
      for (int64_t p0 = 0; p0 < outSize; p0 += rowsPerChunk) {
        const int64_t rows = std::min(rowsPerChunk, outSize - p0);
        const C *a;
        int64_t rsa;
        if (direct) {
          a = reinterpret_cast<const C *>(xn) + p0 * Cin;
          rsa = Cin;
        } else {
          Dims op;
          op.assign(ns, 0);
          unflatten(p0, g.outSpatial, op.v);
          for (int64_t r = 0; r < rows; ++r, g.outSpatial.next(op)) {
            C *dst = col + r * K;
            for (int64_t t = 0; t < kSize; ++t, dst += cg) {
              int64_t off = 0;
              bool inside = true;
              for (size_t d = 0; d < ns; ++d) {
                const int64_t i = op[d] * g.window.strides[d] - g.window.padBegin[d] +
                                  tapOffset[t * ns + d];
                inside = inside && i >= 0 && i < g.inSpatial[d];
                off += i * inStride[d];
              }
              if (!inside) {
                std::fill(dst, dst + cg, C(0));
                continue;
              }
              const T *src = xn + off * Cin;
              if constexpr (std::is_same<T, C>::value)
                std::memcpy(dst, src, static_cast<size_t>(cg) * sizeof(C));
              else
                for (int64_t c = 0; c < cg; ++c)
                  dst[c] = loadAs<C>(src[c]);
            }
          }
          a = col;
          rsa = K;
        }
        gemmPacked<C>(rows, K, Mp, a, rsa, 1, wp, acc, Mp);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t outOffset = (n * outSize + p0 + r) * M + grp * mg;
          convEpilogueNhwc<C>(o, acc + r * Mp, mg, grp * mg, outOffset);
        }
      }
    }
  }
}

// NCHW: im2col chunks stored k-major, col[(c, tap), position] for a range
// of output positions (whole or partial rows along the last spatial dim),
// read by the GEMM as A(p, k) = col[k * positions + p].
template <typename T, typename C>
void convNchw(const ConvGeometry &g, const ConvOperands &o, const int64_t *tapOffset) {
  const T *x = static_cast<const T *>(o.x.data);
  const size_t ns = g.inSpatial.size(), last = ns - 1;
  const int64_t M = g.outChannels, Cin = g.inChannels;
  const int64_t cg = Cin / g.group, mg = M / g.group;
  const int64_t kSize = g.kernel.product(), K = kSize * cg;
  const int64_t inSize = g.inSpatial.product(), outSize = g.outSpatial.product();
  const int64_t Mp = roundUp(mg, kNR);
  const Dims inStride = g.inSpatial.strides();
  const int64_t sL = g.window.strides[last], pL = g.window.padBegin[last];
  const int64_t inL = g.inSpatial[last], outL = g.outSpatial[last];
  Dims outer; // output rows: all dims but the last
  outer.assign(g.outSpatial.v, g.outSpatial.v + last);

  bool direct = std::is_same<T, C>::value;
  for (size_t d = 0; d < ns; ++d)
    direct = direct && g.kernel[d] == 1 && g.window.strides[d] == 1 &&
             g.window.padBegin[d] == 0 && g.inSpatial[d] == g.outSpatial[d];

  const int64_t chunk = chunkRows(outSize, direct ? Mp : std::max(K, Mp));
  C *wp = scratch<C>(kSlotPacked, static_cast<size_t>(Mp * K));
  C *col = direct ? nullptr : scratch<C>(kSlotCol, static_cast<size_t>(K * chunk));
  C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(chunk * Mp));
  C *row = scratch<C>(kSlotRow, static_cast<size_t>(chunk));
  int64_t rowIndex[kMaxSpatial];

  for (int64_t grp = 0; grp < g.group; ++grp) {
    packPanels<C>(o.w, grp * mg * K, 1, K, K, mg, wp);
    for (int64_t n = 0; n < g.batch; ++n) {
      const T *xg = x + (n * Cin + grp * cg) * inSize;
      for (int64_t p0 = 0; p0 < outSize; p0 += chunk) {
        const int64_t pc = std::min(chunk, outSize - p0); // positions in this chunk
        const C *a;
        int64_t csa;
        if (direct) {
          a = reinterpret_cast<const C *>(xg) + p0;
          csa = inSize;
        } else {
          for (int64_t c = 0; c < cg; ++c) {
            const T *xin = xg + c * inSize;
            for (int64_t kp = 0; kp < kSize; ++kp) {
              const int64_t *k = tapOffset + kp * ns; // k[d] * dilation[d]
              C *dst = col + (c * kSize + kp) * pc;
              // Along the last dim, output ox reads input ox * sL + off, inside
              // for ox in [lo, hi).
              const int64_t off = k[last] - pL;
              const int64_t lo = std::min(outL, std::max<int64_t>(0, ceilDiv(-off, sL)));
              const int64_t hi =
                  std::max(lo, std::min<int64_t>(outL, floorDiv(inL - 1 - off, sL) + 1));
              // Row segments [ox0, ox1) of the positions p0 .. p0 + pc.
              for (int64_t p = p0; p < p0 + pc;) {
                const int64_t r = p / outL, ox0 = p % outL;
                const int64_t ox1 = std::min(outL, ox0 + (p0 + pc - p));
                unflatten(r, outer, rowIndex);
                int64_t inOff = 0;
                bool inside = true;
                for (size_t d = 0; d < last; ++d) {
                  const int64_t i =
                      rowIndex[d] * g.window.strides[d] - g.window.padBegin[d] + k[d];
                  inside = inside && i >= 0 && i < g.inSpatial[d];
                  inOff += i * inStride[d];
                }
                // Inputs for [a0, a1), zeros around it.
                const int64_t a0 = inside ? std::min(ox1, std::max(ox0, lo)) : ox1;
                const int64_t a1 = inside ? std::max(a0, std::min(ox1, hi)) : ox1;
                std::fill(dst, dst + (a0 - ox0), C(0));
                if (a1 > a0) {
                  const T *xr = xin + inOff + off;
                  for (int64_t ox = a0; ox < a1; ++ox)
                    dst[ox - ox0] = loadAs<C>(xr[ox * sL]);
                }
                std::fill(dst + (a1 - ox0), dst + (ox1 - ox0), C(0));
                dst += ox1 - ox0;
                p += ox1 - ox0;
              }
            }
          }
          a = col;
          csa = pc;
        }
        gemmPacked<C>(pc, K, Mp, a, 1, csa, wp, acc, Mp);
        for (int64_t m = 0; m < mg; ++m) {
          const int64_t mo = grp * mg + m;
          for (int64_t j = 0; j < pc; ++j)
            row[j] = acc[j * Mp + m];
          const int64_t outOffset = (n * M + mo) * outSize + p0;
          epilogueRow<C>(row, pc, 1.0, Addend{o.bias, mo, 0, 1.0},
                         Addend{o.residual, outOffset, 1, 1.0}, o.act, o.out, outOffset);
        }
      }
    }
  }
}

template <typename T, typename C> void convRun(const ConvGeometry &g, const ConvOperands &o) {
  const size_t ns = g.inSpatial.size();
  const int64_t kSize = g.kernel.product();
  if (g.batch == 0 || g.outChannels == 0 || g.outSpatial.product() == 0)
    return;
  // Tap t's offset along dim d: k[d] * dilation[d], k the tap's multi-index.
  int64_t *tapOffset = scratch<int64_t>(kSlotIndex, static_cast<size_t>(kSize * ns));
  for (int64_t t = 0; t < kSize; ++t) {
    unflatten(t, g.kernel, tapOffset + t * ns);
    for (size_t d = 0; d < ns; ++d)
      tapOffset[t * ns + d] *= g.window.dilations[d];
  }
  if (g.nhwc && g.inChannels == g.group)
    convDepthwiseNhwc<T, C>(g, o, tapOffset);
  else if (g.nhwc)
    convNhwc<T, C>(g, o, tapOffset);
  else
    convNchw<T, C>(g, o, tapOffset);
}

KernelStatus convKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("conv", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &x = *inputs[0], &w = *inputs[1];
  const TensorView *bias = optionalInput(inputs, 2);
  const TensorView *residual = optionalInput(inputs, 3);
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("conv", x.dtype);
  if (!isFloat(w.dtype) || out.dtype != x.dtype || (bias && !isFloat(bias->dtype)) ||
      (residual && !isFloat(residual->dtype)))
    return fail("conv: operand dtypes must be float and the result must match the input");
  const size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank || out.shape.size() != rank)
    return fail("conv: input, weight and result must have the same rank >= 3");
  ConvGeometry g;
  std::string error;
  if (!readLayout(attrs, g.nhwc, error))
    return fail("conv: " + error);
  if (!readWindow(attrs, rank - 2, g.window, error))
    return fail("conv: " + error);
  // NCHW: x N,C,spatial; w M,C/group,k; y N,M,spatial. NHWC: x N,spatial,C;
  // w M,k,C/group; y N,spatial,M.
  const size_t channelDim = g.nhwc ? rank - 1 : 1, firstSpatial = g.nhwc ? 1 : 2;
  g.batch = x.shape[0];
  g.inChannels = x.shape[channelDim];
  g.outChannels = w.shape[0];
  g.group = attrs.getInt("group", 1);
  g.inSpatial.assign(x.shape.data() + firstSpatial, x.shape.data() + firstSpatial + rank - 2);
  g.outSpatial.assign(out.shape.data() + firstSpatial, out.shape.data() + firstSpatial + rank - 2);
  g.kernel.assign(w.shape.data() + firstSpatial, w.shape.data() + firstSpatial + rank - 2);
  if (g.group < 1 || g.inChannels % g.group || g.outChannels % g.group ||
      w.shape[channelDim] * g.group != g.inChannels)
    return fail("conv: channels " + shapeString(x.shape) + " / weight " + shapeString(w.shape) +
                " do not match group " + std::to_string(g.group) +
                (g.nhwc ? " (NHWC, weight OHWI)" : ""));
  if (out.shape[0] != g.batch || out.shape[channelDim] != g.outChannels)
    return fail("conv: result shape " + shapeString(out.shape) + " does not match");
  for (size_t d = 0; d < rank - 2; ++d)
    if (g.kernel[d] < 0 || g.outSpatial[d] < 0)
      return fail("conv: negative extent");
  if (bias && bias->numElements() != g.outChannels)
    return fail("conv: bias must have one value per output channel");
  if (residual && residual->shape != out.shape)
    return fail("conv: residual " + shapeString(residual->shape) + " must have the result's shape " +
                shapeString(out.shape));
  Activation act;
  if (auto s = readActivation("conv", attrs, "activation", "alpha", "beta", act); !s.ok())
    return s;
  const ConvOperands o{x, w, bias, residual, act, out};
  switch (x.dtype) {
  case DType::F64: convRun<double, double>(g, o); break;
  case DType::F16: convRun<Half, float>(g, o); break;
  default: convRun<float, float>(g, o); break;
  }
  return {};
}

//===----------------------------------------------------------------------===//
// conv_transpose
//===----------------------------------------------------------------------===//

template <typename C>
void convTransposeCore(const ConvGeometry &g, const C *x, const C *w, C *y) {
  // Here inSpatial is the (smaller) input and outSpatial the result;
  // out[n, grp*mg+m, i*s - pad + k*d] += x[n, grp*cg+c, i] * w[grp*cg+c, m, k].
  const size_t ns = g.inSpatial.size(), last = ns - 1;
  const int64_t inSize = g.inSpatial.product(), outSize = g.outSpatial.product();
  const int64_t kSize = g.kernel.product();
  const int64_t cg = g.inChannels / g.group, mg = g.outChannels / g.group;
  const Dims inStride = g.inSpatial.strides(), outStride = g.outSpatial.strides();
  const int64_t sL = g.window.strides[last], pL = g.window.padBegin[last];
  const int64_t dL = g.window.dilations[last];
  const int64_t inL = g.inSpatial[last], outL = g.outSpatial[last];
  std::fill(y, y + g.batch * g.outChannels * outSize, C(0));
  if (inL == 0)
    return;
  const int64_t inRows = inSize / inL;
  Dims outer; // input rows: all dims but the last
  outer.assign(g.inSpatial.v, g.inSpatial.v + last);
  int64_t kIndex[kMaxSpatial], i[kMaxSpatial];
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t ci = grp * cg + c;
        const C *xin = x + (n * g.inChannels + ci) * inSize;
        for (int64_t m = 0; m < mg; ++m) {
          C *acc = y + (n * g.outChannels + grp * mg + m) * outSize;
          const C *wk = w + (ci * mg + m) * kSize;
          for (int64_t kp = 0; kp < kSize; ++kp) {
            const C wv = wk[kp];
            unflatten(kp, g.kernel, kIndex);
            // Output position along the last dim: i*sL + off.
            const int64_t off = kIndex[last] * dL - pL;
            const int64_t lo = std::max<int64_t>(0, ceilDiv(-off, sL));
            const int64_t hi = std::min<int64_t>(inL, floorDiv(outL - 1 - off, sL) + 1);
            if (lo >= hi)
              continue;
            for (int64_t r = 0; r < inRows; ++r) {
              unflatten(r, outer, i);
              int64_t inOff = 0, outOff = 0;
              bool inside = true;
              for (size_t d = 0; d < last; ++d) {
                const int64_t o = i[d] * g.window.strides[d] - g.window.padBegin[d] +
                                  kIndex[d] * g.window.dilations[d];
                inside = inside && o >= 0 && o < g.outSpatial[d];
                inOff += i[d] * inStride[d];
                outOff += o * outStride[d];
              }
              if (!inside)
                continue;
              const C *xr = xin + inOff;
              C *yr = acc + outOff + off;
              for (int64_t ix = lo; ix < hi; ++ix)
                yr[ix * sL] += wv * xr[ix];
            }
          }
        }
      }
    }
  }
}

KernelStatus convTransposeKernel(const Attrs &attrs,
                                 const std::vector<const TensorView *> &inputs,
                                 const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("conv_transpose", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &x = *inputs[0], &w = *inputs[1];
  const TensorView *bias = optionalInput(inputs, 2);
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("conv_transpose", x.dtype);
  if (!isFloat(w.dtype) || out.dtype != x.dtype || (bias && !isFloat(bias->dtype)))
    return fail("conv_transpose: operand dtypes must be float and the result must match "
                "the input");
  const size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank || out.shape.size() != rank)
    return fail("conv_transpose: input, weight and result must have the same rank >= 3");
  ConvGeometry g;
  std::string error;
  if (!readWindow(attrs, rank - 2, g.window, error))
    return fail("conv_transpose: " + error);
  g.batch = x.shape[0];
  g.inChannels = x.shape[1];
  g.group = attrs.getInt("group", 1);
  g.outChannels = out.shape[1];
  g.inSpatial.assign(x.shape.data() + 2, x.shape.data() + rank);
  g.outSpatial.assign(out.shape.data() + 2, out.shape.data() + rank);
  g.kernel.assign(w.shape.data() + 2, w.shape.data() + rank);
  if (g.group < 1 || w.shape[0] != g.inChannels || g.inChannels % g.group ||
      w.shape[1] * g.group != g.outChannels || out.shape[0] != g.batch)
    return fail("conv_transpose: input " + shapeString(x.shape) + ", weight " +
                shapeString(w.shape) + " and result " + shapeString(out.shape) +
                " do not match group " + std::to_string(g.group));
  if (bias && bias->numElements() != g.outChannels)
    return fail("conv_transpose: bias must have one value per output channel");
  auto run = [&](auto tag) {
    using C = decltype(tag);
    Input<C> xi(x, kSlotIn0), wi(w, kSlotIn1);
    const bool own = (std::is_same<C, float>::value && out.dtype == DType::F32) ||
                     (std::is_same<C, double>::value && out.dtype == DType::F64);
    const int64_t total = out.numElements();
    C *y = own ? static_cast<C *>(out.data) : scratch<C>(kSlotOut, static_cast<size_t>(total));
    convTransposeCore<C>(g, xi.data(), wi.data(), y);
    const int64_t outSize = g.outSpatial.product();
    const Activation none;
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t m = 0; m < g.outChannels; ++m) {
        const int64_t offset = (n * g.outChannels + m) * outSize;
        epilogueRow<C>(y + offset, outSize, 1.0, Addend{bias, m, 0, 1.0}, Addend{}, none, out,
                       offset);
      }
  };
  if (x.dtype == DType::F64)
    run(double{});
  else
    run(float{});
  return {};
}

//===----------------------------------------------------------------------===//
// gemm, matmul
//===----------------------------------------------------------------------===//

template <typename C>
void gemmRun(const TensorView &a, const TensorView &b, const TensorView *c, TensorView &out,
             bool transA, bool transB, double alpha, double beta, int64_t M, int64_t N,
             int64_t K, const Activation &act) {
  Input<C> ai(a, kSlotA);
  const int64_t rsa = transA ? 1 : K, csa = transA ? M : 1;
  const int64_t Np = roundUp(N, kNR);
  C *bp = scratch<C>(kSlotPacked, static_cast<size_t>(Np * K));
  // B(k, j) = b[k * N + j], or b[j * K + k] when transposed.
  packPanels<C>(b, 0, transB ? 1 : N, transB ? K : 1, K, N, bp);
  // C broadcasts (right-aligned) to [M, N].
  int64_t rowStride = 0, colStride = 0;
  if (c) {
    const std::vector<int64_t> &cs = c->shape;
    const int64_t cm = cs.size() >= 2 ? cs[cs.size() - 2] : 1;
    const int64_t cn = cs.empty() ? 1 : cs.back();
    rowStride = cm == 1 ? 0 : cn;
    colStride = cn == 1 ? 0 : 1;
  }
  const int64_t rowsPerChunk = chunkRows(M, Np);
  C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(rowsPerChunk * Np));
  for (int64_t i0 = 0; i0 < M; i0 += rowsPerChunk) {
    const int64_t rows = std::min(rowsPerChunk, M - i0);
    gemmPacked<C>(rows, K, Np, ai.data() + i0 * rsa, rsa, csa, bp, acc, Np);
    for (int64_t r = 0; r < rows; ++r)
      epilogueRow<C>(acc + r * Np, N, alpha, Addend{c, (i0 + r) * rowStride, colStride, beta},
                     Addend{}, act, out, (i0 + r) * N);
  }
}

KernelStatus gemmKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("gemm", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &a = *inputs[0], &b = *inputs[1];
  const TensorView *c = optionalInput(inputs, 2);
  TensorView &out = *outputs[0];
  if (!isFloat(a.dtype))
    return unsupported("gemm", a.dtype);
  if (b.dtype != a.dtype || out.dtype != a.dtype || (c && !isFloat(c->dtype)))
    return fail("gemm: operand and result dtypes must match");
  if (a.shape.size() != 2 || b.shape.size() != 2 || out.shape.size() != 2)
    return fail("gemm: A, B and the result must be 2-D");
  const bool transA = attrs.getInt("transA", 0) != 0, transB = attrs.getInt("transB", 0) != 0;
  const int64_t M = transA ? a.shape[1] : a.shape[0], K = transA ? a.shape[0] : a.shape[1];
  const int64_t kb = transB ? b.shape[1] : b.shape[0], N = transB ? b.shape[0] : b.shape[1];
  if (kb != K || out.shape[0] != M || out.shape[1] != N)
    return fail("gemm: shapes " + shapeString(a.shape) + " x " + shapeString(b.shape) + " -> " +
                shapeString(out.shape) + " do not match");
  if (c) {
    const std::vector<int64_t> &cs = c->shape;
    bool ok = cs.size() <= 2;
    if (ok && !cs.empty() && cs.back() != 1 && cs.back() != N)
      ok = false;
    if (ok && cs.size() == 2 && cs[0] != 1 && cs[0] != M)
      ok = false;
    if (!ok)
      return fail("gemm: C " + shapeString(cs) + " does not broadcast to [M, N]");
  }
  Activation act;
  if (auto s = readActivation("gemm", attrs, "activation", "act_alpha", "act_beta", act); !s.ok())
    return s;
  const double alpha = attrs.getFloat("alpha", 1.0), beta = attrs.getFloat("beta", 1.0);
  if (a.dtype == DType::F64)
    gemmRun<double>(a, b, c, out, transA, transB, alpha, beta, M, N, K, act);
  else
    gemmRun<float>(a, b, c, out, transA, transB, alpha, beta, M, N, K, act);
  return {};
}

KernelStatus matmulKernel(const Attrs &, const std::vector<const TensorView *> &inputs,
                          const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("matmul", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &a = *inputs[0], &b = *inputs[1];
  TensorView &out = *outputs[0];
  if (!isFloat(a.dtype))
    return unsupported("matmul", a.dtype);
  if (b.dtype != a.dtype || out.dtype != a.dtype)
    return fail("matmul: operand and result dtypes must match");
  const size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra == 0 || rb == 0)
    return fail("matmul: operands must have rank >= 1");
  const int64_t M = ra == 1 ? 1 : a.shape[ra - 2], K = a.shape[ra - 1];
  const int64_t kb = rb == 1 ? b.shape[0] : b.shape[rb - 2];
  const int64_t N = rb == 1 ? 1 : b.shape[rb - 1];
  if (kb != K)
    return fail("matmul: inner dimensions differ: " + shapeString(a.shape) + " x " +
                shapeString(b.shape));
  // Result = batch dims + [M] (unless a is 1-D) + [N] (unless b is 1-D).
  const size_t trailing = (ra == 1 ? 0 : 1) + (rb == 1 ? 0 : 1);
  if (out.shape.size() < trailing)
    return fail("matmul: result rank too small");
  const size_t batchRank = out.shape.size() - trailing;
  {
    size_t t = batchRank;
    if (ra != 1 && out.shape[t++] != M)
      return fail("matmul: result shape " + shapeString(out.shape) + " does not match");
    if (rb != 1 && out.shape[t] != N)
      return fail("matmul: result shape " + shapeString(out.shape) + " does not match");
  }
  const int64_t *batch = out.shape.data();
  // Broadcast strides (in matrices) of each operand's batch dims, and the
  // batch index, in scratch.
  int64_t *sa = scratch<int64_t>(kSlotIndex, 3 * batchRank + 1);
  int64_t *sb = sa + batchRank, *index = sb + batchRank;
  auto batchStrides = [&](const std::vector<int64_t> &s, size_t matrixRank,
                          int64_t *strides) -> bool {
    size_t r = s.size() - matrixRank;
    if (r > batchRank)
      return false;
    std::fill(strides, strides + batchRank, int64_t(0));
    int64_t stride = 1;
    for (size_t j = 0; j < r; ++j) {
      size_t i = r - 1 - j, d = batchRank - 1 - j;
      if (s[i] == batch[d])
        strides[d] = s[i] == 1 ? 0 : stride;
      else if (s[i] != 1)
        return false;
      stride *= s[i];
    }
    return true;
  };
  if (!batchStrides(a.shape, ra == 1 ? 1 : 2, sa) || !batchStrides(b.shape, rb == 1 ? 1 : 2, sb))
    return fail("matmul: batch dims of " + shapeString(a.shape) + " and " +
                shapeString(b.shape) + " do not broadcast to " + shapeString(out.shape));
  bool bShared = true; // one B for every batch: pack it once
  for (size_t d = 0; d < batchRank; ++d)
    bShared = bShared && sb[d] == 0;
  auto run = [&](auto tag) {
    using C = decltype(tag);
    Input<C> ai(a, kSlotA);
    const int64_t Np = roundUp(N, kNR);
    C *bp = scratch<C>(kSlotPacked, static_cast<size_t>(Np * K));
    const int64_t rowsPerChunk = chunkRows(M, Np);
    C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(rowsPerChunk * Np));
    const Activation none;
    int64_t batches = 1;
    for (size_t d = 0; d < batchRank; ++d)
      batches *= batch[d];
    std::fill(index, index + batchRank, int64_t(0));
    for (int64_t bt = 0; bt < batches; ++bt) {
      int64_t oa = 0, ob = 0;
      for (size_t d = 0; d < batchRank; ++d) {
        oa += index[d] * sa[d];
        ob += index[d] * sb[d];
      }
      if (bt == 0 || !bShared)
        packPanels<C>(b, ob * K * N, N, 1, K, N, bp);
      for (int64_t i0 = 0; i0 < M; i0 += rowsPerChunk) {
        const int64_t rows = std::min(rowsPerChunk, M - i0);
        gemmPacked<C>(rows, K, Np, ai.data() + oa * M * K + i0 * K, K, 1, bp, acc, Np);
        for (int64_t r = 0; r < rows; ++r)
          epilogueRow<C>(acc + r * Np, N, 1.0, Addend{}, Addend{}, none, out,
                         (bt * M + i0 + r) * N);
      }
      for (size_t d = batchRank; d-- > 0;) {
        if (++index[d] < batch[d])
          break;
        index[d] = 0;
      }
    }
  };
  if (a.dtype == DType::F64)
    run(double{});
  else
    run(float{});
  return {};
}

//===----------------------------------------------------------------------===//
// Normalizations (double accumulation)
//===----------------------------------------------------------------------===//

KernelStatus batchNormKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                             const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("batch_norm", inputs, outputs, 5); !s.ok())
    return s;
  const TensorView &x = *inputs[0];
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("batch_norm", x.dtype);
  if (out.dtype != x.dtype || out.numElements() != x.numElements() || x.shape.size() < 2)
    return fail("batch_norm: result must match the input, of rank >= 2");
  const int64_t channels = x.shape[1];
  for (int i = 1; i < 5; ++i)
    if (!isFloat(inputs[i]->dtype) || inputs[i]->numElements() != channels)
      return fail("batch_norm: scale, bias, mean and variance must be float vectors of " +
                  std::to_string(channels));
  const double eps = attrs.getFloat("epsilon", 1e-5);
  const int64_t batch = x.shape[0], inner = product(x.shape, 2);
  for (int64_t c = 0; c < channels; ++c) {
    const double scale = readDouble(*inputs[1], c), bias = readDouble(*inputs[2], c);
    const double mean = readDouble(*inputs[3], c), var = readDouble(*inputs[4], c);
    const double k = scale / std::sqrt(var + eps);
    for (int64_t n = 0; n < batch; ++n) {
      const int64_t base = (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        writeDouble(out, base + i, (readDouble(x, base + i) - mean) * k + bias);
    }
  }
  return {};
}

KernelStatus instanceNormKernel(const Attrs &attrs,
                                const std::vector<const TensorView *> &inputs,
                                const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("instance_norm", inputs, outputs, 3); !s.ok())
    return s;
  const TensorView &x = *inputs[0], &scale = *inputs[1], &bias = *inputs[2];
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("instance_norm", x.dtype);
  if (out.dtype != x.dtype || out.numElements() != x.numElements() || x.shape.size() < 2)
    return fail("instance_norm: result must match the input, of rank >= 2");
  const int64_t channels = x.shape[1];
  if (!isFloat(scale.dtype) || !isFloat(bias.dtype) || scale.numElements() != channels ||
      bias.numElements() != channels)
    return fail("instance_norm: scale and bias must be float vectors of " +
                std::to_string(channels));
  const double eps = attrs.getFloat("epsilon", 1e-5);
  const int64_t batch = x.shape[0], inner = product(x.shape, 2);
  double *v = scratch<double>(kSlotRow, static_cast<size_t>(inner));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = (n * channels + c) * inner;
      double sum = 0;
      for (int64_t i = 0; i < inner; ++i)
        sum += v[i] = readDouble(x, base + i);
      const double mean = inner ? sum / inner : 0;
      double sq = 0;
      for (int64_t i = 0; i < inner; ++i)
        sq += (v[i] - mean) * (v[i] - mean);
      const double var = inner ? sq / inner : 0;
      const double k = readDouble(scale, c) / std::sqrt(var + eps), b = readDouble(bias, c);
      for (int64_t i = 0; i < inner; ++i)
        writeDouble(out, base + i, (v[i] - mean) * k + b);
    }
  return {};
}

// Expands a parameter that broadcasts (numpy, right-aligned) to the shape
// shape[0..rank) into values (row-major); `index` holds 2 * rank scratch.
bool expandParam(const TensorView &p, const int64_t *shape, size_t rank, double *values,
                 int64_t *index) {
  if (p.shape.size() > rank)
    return false;
  const size_t off = rank - p.shape.size();
  int64_t *strides = index + rank;
  std::fill(strides, strides + rank, int64_t(0));
  int64_t stride = 1;
  for (size_t i = p.shape.size(); i-- > 0;) {
    if (p.shape[i] != 1 && p.shape[i] != shape[off + i])
      return false;
    strides[off + i] = p.shape[i] == 1 ? 0 : stride;
    stride *= p.shape[i];
  }
  int64_t n = 1;
  for (size_t d = 0; d < rank; ++d)
    n *= shape[d];
  for (int64_t i = 0; i < n; ++i) {
    int64_t linear = i, o = 0;
    for (size_t d = rank; d-- > 0;) {
      o += (linear % shape[d]) * strides[d];
      linear /= shape[d];
    }
    values[i] = readDouble(p, o);
  }
  return true;
}

KernelStatus layerNormKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                             const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("layer_norm", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &x = *inputs[0], &scale = *inputs[1];
  const TensorView *bias = optionalInput(inputs, 2);
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("layer_norm", x.dtype);
  if (out.dtype != x.dtype || out.numElements() != x.numElements())
    return fail("layer_norm: result must match the input");
  if (!isFloat(scale.dtype) || (bias && !isFloat(bias->dtype)))
    return fail("layer_norm: scale and bias must be float");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = attrs.getInt("axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return fail("layer_norm: axis out of range");
  // The normalized dims: x.shape[axis..rank).
  const int64_t *normShape = x.shape.data() + axis;
  const size_t normRank = static_cast<size_t>(rank - axis);
  const int64_t inner = product(x.shape, static_cast<size_t>(axis));
  double *s = scratch<double>(kSlotIn0, static_cast<size_t>(inner));
  double *b = scratch<double>(kSlotIn1, static_cast<size_t>(inner));
  int64_t *index = scratch<int64_t>(kSlotIndex, 2 * normRank);
  if (!expandParam(scale, normShape, normRank, s, index) ||
      (bias && !expandParam(*bias, normShape, normRank, b, index)))
    return fail("layer_norm: scale/bias do not broadcast to " +
                shapeString(std::vector<int64_t>(x.shape.begin() + axis, x.shape.end())));
  const double eps = attrs.getFloat("epsilon", 1e-5);
  const int64_t outer = product(x.shape, 0, static_cast<size_t>(axis));
  double *v = scratch<double>(kSlotRow, static_cast<size_t>(inner));
  for (int64_t r = 0; r < outer; ++r) {
    const int64_t base = r * inner;
    double sum = 0;
    for (int64_t i = 0; i < inner; ++i)
      sum += v[i] = readDouble(x, base + i);
    const double mean = inner ? sum / inner : 0;
    double sq = 0;
    for (int64_t i = 0; i < inner; ++i)
      sq += (v[i] - mean) * (v[i] - mean);
    const double inv = 1.0 / std::sqrt((inner ? sq / inner : 0) + eps);
    for (int64_t i = 0; i < inner; ++i)
      writeDouble(out, base + i, (v[i] - mean) * inv * s[i] + (bias ? b[i] : 0.0));
  }
  return {};
}

KernelStatus lrnKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                       const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("lrn", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &x = *inputs[0];
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("lrn", x.dtype);
  if (out.dtype != x.dtype || out.numElements() != x.numElements() || x.shape.size() < 2)
    return fail("lrn: result must match the input, of rank >= 2");
  const int64_t size = attrs.getInt("size", 1);
  if (size < 1)
    return fail("lrn: size must be positive");
  const double alpha = attrs.getFloat("alpha", 1e-4), beta = attrs.getFloat("beta", 0.75);
  const double bias = attrs.getFloat("bias", 1.0);
  const int64_t batch = x.shape[0], channels = x.shape[1], inner = product(x.shape, 2);
  const int64_t before = (size - 1) / 2, after = size - 1 - before; // floor, ceil
  double *sq = scratch<double>(kSlotIn0, static_cast<size_t>(channels * inner));
  double *sum = scratch<double>(kSlotRow, static_cast<size_t>(inner));
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t base = n * channels * inner;
    for (int64_t i = 0; i < channels * inner; ++i) {
      double v = readDouble(x, base + i);
      sq[i] = v * v;
    }
    for (int64_t c = 0; c < channels; ++c) {
      std::fill(sum, sum + inner, 0.0);
      for (int64_t cc = std::max<int64_t>(0, c - before);
           cc <= std::min<int64_t>(channels - 1, c + after); ++cc)
        for (int64_t i = 0; i < inner; ++i)
          sum[i] += sq[cc * inner + i];
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = base + c * inner + i;
        writeDouble(out, e,
                    readDouble(x, e) / std::pow(bias + alpha / size * sum[i], beta));
      }
    }
  }
  return {};
}


//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

// A pool's geometry and its one index mapping: element (n, c, spatial
// position s) of the input is at n * inBatch + c * inC + s * inS, with s the
// row-major linear spatial position (NCHW: inC = spatial size, inS = 1; NHWC:
// inC = 1, inS = C), and likewise for the result. The window logic below
// works on spatial positions only, so NCHW and NHWC share it.
struct PoolGeometry {
  int64_t batch = 0, channels = 0;
  Dims inSpatial, outSpatial, kernel;
  Window window;
  int64_t inBatch = 0, inC = 0, inS = 0, outBatch = 0, outC = 0, outS = 0;
};

KernelStatus planPool(const char *op, const Attrs &attrs, const TensorView &x,
                      const TensorView &out, PoolGeometry &g) {
  const size_t rank = x.shape.size();
  bool nhwc = false;
  std::string error;
  if (!readLayout(attrs, nhwc, error))
    return fail(std::string(op) + ": " + error);
  const size_t channelDim = nhwc ? rank - 1 : 1, firstSpatial = nhwc ? 1 : 2;
  if (rank < 3 || out.shape.size() != rank || out.shape[0] != x.shape[0] ||
      out.shape[channelDim] != x.shape[channelDim])
    return fail(std::string(op) + ": input " + shapeString(x.shape) + " and result " +
                shapeString(out.shape) +
                (nhwc ? " must be N, spatial..., C" : " must be N, C, spatial..."));
  const size_t ns = rank - 2;
  const std::vector<int64_t> &kernel = attrs.getInts("kernel_shape");
  if (kernel.size() != ns)
    return fail(std::string(op) + ": kernel_shape must hold " + std::to_string(ns) + " values");
  if (!readWindow(attrs, ns, g.window, error))
    return fail(std::string(op) + ": " + error);
  for (size_t d = 0; d < ns; ++d)
    if (kernel[d] < 1)
      return fail(std::string(op) + ": kernel_shape must be positive");
  g.kernel.assign(kernel.data(), kernel.data() + ns);
  g.batch = x.shape[0];
  g.channels = x.shape[channelDim];
  g.inSpatial.assign(x.shape.data() + firstSpatial, x.shape.data() + firstSpatial + ns);
  g.outSpatial.assign(out.shape.data() + firstSpatial, out.shape.data() + firstSpatial + ns);
  const int64_t inSize = g.inSpatial.product(), outSize = g.outSpatial.product();
  g.inBatch = g.channels * inSize;
  g.outBatch = g.channels * outSize;
  g.inC = nhwc ? 1 : inSize;
  g.inS = nhwc ? g.channels : 1;
  g.outC = nhwc ? 1 : outSize;
  g.outS = nhwc ? g.channels : 1;
  return {};
}

// Calls f(inBase, outBase, offsets, count, padded) for every batch index and
// output position: channel c's window is the `count` input elements at
// inBase + c * inC + offsets[i] (the in-bounds taps, row-major tap order),
// `padded` the number of taps inside the padded input (count_include_pad),
// and its result goes to outBase + c * outC.
// Advances k (row-major) within [lo, hi) per dim; false after the last.
bool nextInBox(Dims &k, const Dims &lo, const Dims &hi) {
  for (size_t d = k.size(); d-- > 0;) {
    if (++k[d] < hi[d])
      return true;
    k[d] = lo[d];
  }
  return false;
}

template <typename F> void forEachPoolWindow(const PoolGeometry &g, F &&f) {
  const size_t ns = g.inSpatial.size();
  const int64_t outSize = g.outSpatial.product();
  if (outSize == 0 || g.batch == 0)
    return;
  int64_t *offsets = scratch<int64_t>(kSlotIndex, static_cast<size_t>(g.kernel.product()));
  const Dims inStride = g.inSpatial.strides();
  Dims o, first, lo, hi, k;
  o.assign(ns, 0);
  first.assign(ns, 0);
  lo.assign(ns, 0);
  hi.assign(ns, 0);
  for (int64_t p = 0; p < outSize; ++p, g.outSpatial.next(o)) {
    // Per dim: taps k with first + k * dilation inside the input ([lo, hi))
    // and inside the padded input.
    int64_t padded = 1;
    bool any = true;
    for (size_t d = 0; d < ns; ++d) {
      const int64_t s = g.window.strides[d], dil = g.window.dilations[d];
      const int64_t in = g.inSpatial[d], kd = g.kernel[d];
      first[d] = o[d] * s - g.window.padBegin[d];
      lo[d] = std::max<int64_t>(0, ceilDiv(-first[d], dil));
      hi[d] = std::min<int64_t>(kd, floorDiv(in - 1 - first[d], dil) + 1);
      any = any && lo[d] < hi[d];
      const int64_t padLo = std::max<int64_t>(0, ceilDiv(-g.window.padBegin[d] - first[d], dil));
      const int64_t padHi =
          std::min<int64_t>(kd, floorDiv(in + g.window.padEnd[d] - 1 - first[d], dil) + 1);
      padded *= std::max<int64_t>(0, padHi - padLo);
    }
    int64_t count = 0;
    if (any) {
      k = lo;
      do {
        int64_t off = 0;
        for (size_t d = 0; d < ns; ++d)
          off += (first[d] + k[d] * g.window.dilations[d]) * inStride[d];
        offsets[count++] = off * g.inS;
      } while (nextInBox(k, lo, hi));
    }
    for (int64_t n = 0; n < g.batch; ++n)
      f(n * g.inBatch, n * g.outBatch + p * g.outS, static_cast<const int64_t *>(offsets), count,
        padded);
  }
}

KernelStatus maxPoolKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                           const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("max_pool", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &x = *inputs[0];
  TensorView &out = *outputs[0];
  if (out.dtype != x.dtype)
    return fail("max_pool: result dtype must match the input");
  switch (x.dtype) {
  case DType::F32: case DType::F64: case DType::F16: case DType::I8: case DType::U8:
  case DType::I32: case DType::I64: break;
  default: return unsupported("max_pool", x.dtype);
  }
  PoolGeometry g;
  if (auto s = planPool("max_pool", attrs, x, out, g); !s.ok())
    return s;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using C = MathType<T>;
    const T *xs = static_cast<const T *>(x.data);
    T *ys = static_cast<T *>(out.data);
    forEachPoolWindow(g, [&](int64_t inBase, int64_t outBase, const int64_t *offsets,
                             int64_t count, int64_t) {
      for (int64_t c = 0; c < g.channels; ++c) {
        const T *xp = xs + inBase + c * g.inC;
        C best = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                      : std::numeric_limits<C>::lowest();
        bool any = false;
        T bestRaw{};
        for (int64_t i = 0; i < count; ++i) {
          const T raw = xp[offsets[i]];
          const C v = loadElem(raw);
          bool take = !any || v > best;
          if constexpr (std::is_floating_point<C>::value)
            take = take || (std::isnan(v) && !std::isnan(best));
          if (take) {
            best = v;
            bestRaw = raw;
            any = true;
          }
        }
        ys[outBase + c * g.outC] = any ? bestRaw : storeElem<T>(best);
      }
    });
  };
  switch (x.dtype) {
  case DType::F32: run(float{}); break;
  case DType::F64: run(double{}); break;
  case DType::F16: run(Half{}); break;
  case DType::I8: run(int8_t{}); break;
  case DType::U8: run(uint8_t{}); break;
  case DType::I32: run(int32_t{}); break;
  case DType::I64: run(int64_t{}); break;
  default: break;
  }
  return {};
}

KernelStatus avgPoolKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                           const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("avg_pool", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &x = *inputs[0];
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("avg_pool", x.dtype);
  if (out.dtype != x.dtype)
    return fail("avg_pool: result dtype must match the input");
  PoolGeometry g;
  if (auto s = planPool("avg_pool", attrs, x, out, g); !s.ok())
    return s;
  // The key is longer than the small-string buffer: build it once.
  static const std::string kCountIncludePad = "count_include_pad";
  const bool includePad = attrs.getInt(kCountIncludePad, 0) != 0;
  withFloatType(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *xs = static_cast<const T *>(x.data);
    T *ys = static_cast<T *>(out.data);
    forEachPoolWindow(g, [&](int64_t inBase, int64_t outBase, const int64_t *offsets,
                             int64_t count, int64_t padded) {
      const int64_t divisor = includePad ? padded : count;
      for (int64_t c = 0; c < g.channels; ++c) {
        const T *xp = xs + inBase + c * g.inC;
        double sum = 0;
        for (int64_t i = 0; i < count; ++i)
          sum += static_cast<double>(loadElem(xp[offsets[i]]));
        const double mean = divisor ? sum / divisor : std::numeric_limits<double>::quiet_NaN();
        ys[outBase + c * g.outC] = storeElem<T>(static_cast<MathType<T>>(mean));
      }
    });
  });
  return {};
}

} // namespace

void addNnKernels(KernelTable &t) {
  t["conv"] = &convKernel;
  t["conv_transpose"] = &convTransposeKernel;
  t["gemm"] = &gemmKernel;
  t["matmul"] = &matmulKernel;
  t["batch_norm"] = &batchNormKernel;
  t["instance_norm"] = &instanceNormKernel;
  t["layer_norm"] = &layerNormKernel;
  t["lrn"] = &lrnKernel;
  t["max_pool"] = &maxPoolKernel;
  t["avg_pool"] = &avgPoolKernel;
}

} // namespace tessel::cpu
