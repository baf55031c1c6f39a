//===- nn.cpp - convolution, matrix products, normalization, pooling -------===//
//
// Reference kernels for the Tensor Core candidates (conv, conv_transpose,
// gemm, matmul) and for norms and pools, N-d where ONNX is N-d.
//
// Precision: f32 tensors compute and accumulate in float; f16 tensors are
// widened to float, computed in float (f32 accumulation) and rounded back
// once at the end; f64 tensors compute in double. Normalizations and average
// pooling accumulate in double for every dtype (numerically sensitive ops).
//
//===----------------------------------------------------------------------===//
#include "half.h"
#include "kernels.h"
#include "registry.h"

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

// A float tensor as a dense array of the compute type C (float or double):
// the tensor's own storage when it already is C, else a converted copy.
template <typename C> class Input {
public:
  explicit Input(const TensorView &v) {
    int64_t n = v.numElements();
    if ((std::is_same<C, float>::value && v.dtype == DType::F32) ||
        (std::is_same<C, double>::value && v.dtype == DType::F64)) {
      ptr = static_cast<const C *>(v.data);
      return;
    }
    copy.resize(static_cast<size_t>(n));
    if (v.dtype == DType::F16) {
      const uint16_t *h = static_cast<const uint16_t *>(v.data);
      for (int64_t i = 0; i < n; ++i)
        copy[i] = static_cast<C>(halfToFloat(h[i]));
    } else {
      for (int64_t i = 0; i < n; ++i)
        copy[i] = static_cast<C>(readDouble(v, i));
    }
    ptr = copy.data();
  }
  const C *data() const { return ptr; }
  C operator[](int64_t i) const { return ptr[i]; }

private:
  std::vector<C> copy;
  const C *ptr = nullptr;
};

// The result as a dense array of C: the output's own storage when it is C,
// else a scratch buffer that commit() rounds into the output.
template <typename C> class Output {
public:
  explicit Output(TensorView &v) : view(v) {
    int64_t n = v.numElements();
    if ((std::is_same<C, float>::value && v.dtype == DType::F32) ||
        (std::is_same<C, double>::value && v.dtype == DType::F64)) {
      ptr = static_cast<C *>(v.data);
    } else {
      scratch.assign(static_cast<size_t>(n), C(0));
      ptr = scratch.data();
    }
  }
  C *data() { return ptr; }
  void commit() {
    if (scratch.empty())
      return;
    int64_t n = view.numElements();
    if (view.dtype == DType::F16) {
      uint16_t *h = static_cast<uint16_t *>(view.data);
      for (int64_t i = 0; i < n; ++i)
        h[i] = floatToHalf(static_cast<float>(scratch[i]));
    } else {
      for (int64_t i = 0; i < n; ++i)
        writeDouble(view, i, static_cast<double>(scratch[i]));
    }
  }

private:
  TensorView &view;
  std::vector<C> scratch;
  C *ptr = nullptr;
};

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

std::string shapeString(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// strides/pads/dilations with ONNX defaults, validated against `spatial`.
struct Window {
  std::vector<int64_t> strides, padBegin, padEnd, dilations;
};

bool readWindow(const Attrs &attrs, size_t spatial, Window &w, std::string &error) {
  w.strides = attrs.getInts("strides");
  w.dilations = attrs.getInts("dilations");
  const std::vector<int64_t> &pads = attrs.getInts("pads");
  if (w.strides.empty())
    w.strides.assign(spatial, 1);
  if (w.dilations.empty())
    w.dilations.assign(spatial, 1);
  if (pads.empty()) {
    w.padBegin.assign(spatial, 0);
    w.padEnd.assign(spatial, 0);
  } else if (pads.size() == 2 * spatial) {
    w.padBegin.assign(pads.begin(), pads.begin() + spatial);
    w.padEnd.assign(pads.begin() + spatial, pads.end());
  } else {
    error = "pads must hold " + std::to_string(2 * spatial) + " values";
    return false;
  }
  if (w.strides.size() != spatial || w.dilations.size() != spatial) {
    error = "strides and dilations must hold " + std::to_string(spatial) + " values";
    return false;
  }
  for (size_t d = 0; d < spatial; ++d)
    if (w.strides[d] < 1 || w.dilations[d] < 1) {
      error = "strides and dilations must be positive";
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

//===----------------------------------------------------------------------===//
// conv
//===----------------------------------------------------------------------===//

struct ConvGeometry {
  int64_t batch, inChannels, outChannels, group;
  std::vector<int64_t> inSpatial, outSpatial, kernel;
  Window window;
};

// Convolution as chunked im2col + GEMM: for each (n, group) and each chunk of
// output rows, col[(c, tap), position] holds the input element each tap reads
// (0 in the padding), and y[m, position] = sum over (c, tap) of w * col, in
// float (or double) accumulation, taps in (c, kernel row-major) order.
template <typename C>
void convCore(const ConvGeometry &g, const C *x, const C *w, const TensorView *bias, C *y) {
  const size_t ns = g.inSpatial.size();
  const int64_t inSize = product(g.inSpatial), outSize = product(g.outSpatial);
  const int64_t kSize = product(g.kernel);
  const int64_t cg = g.inChannels / g.group, mg = g.outChannels / g.group;
  const int64_t taps = cg * kSize;
  std::vector<int64_t> inStride(ns, 1);
  for (size_t d = ns - 1; d-- > 0;)
    inStride[d] = inStride[d + 1] * g.inSpatial[d + 1];
  const size_t last = ns - 1;
  const int64_t sL = g.window.strides[last], pL = g.window.padBegin[last];
  const int64_t dL = g.window.dilations[last];
  const int64_t inL = g.inSpatial[last], outL = g.outSpatial[last];
  if (outSize == 0)
    return;
  const int64_t rows = outSize / outL; // output rows (all dims but the last)
  const std::vector<int64_t> outerShape(g.outSpatial.begin(), g.outSpatial.end() - 1);

  // Kernel taps as multi-indices.
  std::vector<std::vector<int64_t>> tapIndex(static_cast<size_t>(kSize));
  for (int64_t kp = 0; kp < kSize; ++kp)
    unflatten(kp, g.kernel, tapIndex[kp]);
  // Output rows as multi-indices (outer dims).
  std::vector<std::vector<int64_t>> rowIndex(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    unflatten(r, outerShape, rowIndex[r]);

  // A 1x1, stride-1, unpadded conv reads the input as is: no im2col.
  bool direct = true;
  for (size_t d = 0; d < ns; ++d)
    direct = direct && g.kernel[d] == 1 && g.window.strides[d] == 1 &&
             g.window.padBegin[d] == 0 && g.inSpatial[d] == g.outSpatial[d];

  // Rows per chunk: keep the col buffer near 2^20 elements.
  const int64_t rowsPerChunk =
      direct ? rows : std::max<int64_t>(1, std::min<int64_t>(rows, (int64_t(1) << 20) / std::max<int64_t>(1, taps * outL)));
  std::vector<C> col;
  if (!direct)
    col.resize(static_cast<size_t>(taps * rowsPerChunk * outL));

  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const C *xg = x + (n * g.inChannels + grp * cg) * inSize;
      for (int64_t r0 = 0; r0 < rows; r0 += rowsPerChunk) {
        const int64_t r1 = std::min(rows, r0 + rowsPerChunk);
        const int64_t pc = (r1 - r0) * outL; // positions in this chunk
        const C *colData;
        int64_t colStride; // elements between consecutive taps' rows
        if (direct) {
          colData = xg;
          colStride = inSize;
        } else {
          for (int64_t c = 0; c < cg; ++c) {
            const C *xin = xg + c * inSize;
            for (int64_t kp = 0; kp < kSize; ++kp) {
              const std::vector<int64_t> &k = tapIndex[kp];
              C *dst = col.data() + (c * kSize + kp) * pc;
              const int64_t off = k[last] * dL - pL;
              const int64_t lo = std::min(outL, std::max<int64_t>(0, ceilDiv(-off, sL)));
              const int64_t hi = std::max(lo, std::min<int64_t>(outL, floorDiv(inL - 1 - off, sL) + 1));
              for (int64_t r = r0; r < r1; ++r, dst += outL) {
                int64_t inOff = 0;
                bool inside = true;
                for (size_t d = 0; d < last; ++d) {
                  const int64_t i = rowIndex[r][d] * g.window.strides[d] - g.window.padBegin[d] +
                                    k[d] * g.window.dilations[d];
                  inside = inside && i >= 0 && i < g.inSpatial[d];
                  inOff += i * inStride[d];
                }
                if (!inside) {
                  std::fill(dst, dst + outL, C(0));
                  continue;
                }
                const C *xr = xin + inOff + off;
                std::fill(dst, dst + lo, C(0));
                for (int64_t ox = lo; ox < hi; ++ox)
                  dst[ox] = xr[ox * sL];
                std::fill(dst + hi, dst + outL, C(0));
              }
            }
          }
          colData = col.data();
          colStride = pc;
        }
        // y[m, chunk] = sum_t w[m, t] * col[t, chunk]
        for (int64_t m = 0; m < mg; ++m) {
          const int64_t mo = grp * mg + m;
          C *yr = y + (n * g.outChannels + mo) * outSize + r0 * outL;
          const C *wr = w + mo * taps;
          std::fill(yr, yr + pc, C(0));
          for (int64_t t = 0; t < taps; ++t) {
            const C wv = wr[t];
            const C *cr = colData + t * colStride;
            for (int64_t j = 0; j < pc; ++j)
              yr[j] += wv * cr[j];
          }
        }
      }
      if (bias)
        for (int64_t m = 0; m < mg; ++m) {
          const int64_t mo = grp * mg + m;
          const C b = static_cast<C>(readDouble(*bias, mo));
          C *acc = y + (n * g.outChannels + mo) * outSize;
          for (int64_t i = 0; i < outSize; ++i)
            acc[i] += b;
        }
    }
  }
}

KernelStatus convKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("conv", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &x = *inputs[0], &w = *inputs[1];
  const TensorView *bias = optionalInput(inputs, 2);
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("conv", x.dtype);
  if (!isFloat(w.dtype) || out.dtype != x.dtype || (bias && !isFloat(bias->dtype)))
    return fail("conv: operand dtypes must be float and the result must match the input");
  const size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank || out.shape.size() != rank)
    return fail("conv: input, weight and result must have the same rank >= 3");
  ConvGeometry g;
  g.batch = x.shape[0];
  g.inChannels = x.shape[1];
  g.outChannels = w.shape[0];
  g.group = attrs.getInt("group", 1);
  g.inSpatial.assign(x.shape.begin() + 2, x.shape.end());
  g.outSpatial.assign(out.shape.begin() + 2, out.shape.end());
  g.kernel.assign(w.shape.begin() + 2, w.shape.end());
  std::string error;
  if (!readWindow(attrs, rank - 2, g.window, error))
    return fail("conv: " + error);
  if (g.group < 1 || g.inChannels % g.group || g.outChannels % g.group ||
      w.shape[1] * g.group != g.inChannels)
    return fail("conv: channels " + shapeString(x.shape) + " / weight " + shapeString(w.shape) +
                " do not match group " + std::to_string(g.group));
  if (out.shape[0] != g.batch || out.shape[1] != g.outChannels)
    return fail("conv: result shape " + shapeString(out.shape) + " does not match");
  if (bias && bias->numElements() != g.outChannels)
    return fail("conv: bias must have one value per output channel");
  if (x.dtype == DType::F64) {
    Input<double> xi(x), wi(w);
    Output<double> yo(out);
    convCore<double>(g, xi.data(), wi.data(), bias, yo.data());
    yo.commit();
  } else {
    Input<float> xi(x), wi(w);
    Output<float> yo(out);
    convCore<float>(g, xi.data(), wi.data(), bias, yo.data());
    yo.commit();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// conv_transpose
//===----------------------------------------------------------------------===//

template <typename C>
void convTransposeCore(const ConvGeometry &g, const C *x, const C *w, const TensorView *bias,
                       C *y) {
  // Here inSpatial is the (smaller) input and outSpatial the result;
  // out[n, grp*mg+m, i*s - pad + k*d] += x[n, grp*cg+c, i] * w[grp*cg+c, m, k].
  const size_t ns = g.inSpatial.size();
  const int64_t inSize = product(g.inSpatial), outSize = product(g.outSpatial);
  const int64_t kSize = product(g.kernel);
  const int64_t cg = g.inChannels / g.group, mg = g.outChannels / g.group;
  std::vector<int64_t> inStride(ns, 1), outStride(ns, 1);
  for (size_t d = ns - 1; d-- > 0;) {
    inStride[d] = inStride[d + 1] * g.inSpatial[d + 1];
    outStride[d] = outStride[d + 1] * g.outSpatial[d + 1];
  }
  const int64_t last = static_cast<int64_t>(ns) - 1;
  const int64_t sL = g.window.strides[last], pL = g.window.padBegin[last];
  const int64_t dL = g.window.dilations[last];
  const int64_t inL = g.inSpatial[last], outL = g.outSpatial[last];
  std::fill(y, y + g.batch * g.outChannels * outSize, C(0));
  std::vector<int64_t> kIndex;
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
            forEachOuter(g.inSpatial, [&](const std::vector<int64_t> &i) {
              int64_t inOff = 0, outOff = 0;
              for (size_t d = 0; d + 1 < ns; ++d) {
                int64_t o = i[d] * g.window.strides[d] - g.window.padBegin[d] +
                            kIndex[d] * g.window.dilations[d];
                if (o < 0 || o >= g.outSpatial[d])
                  return;
                inOff += i[d] * inStride[d];
                outOff += o * outStride[d];
              }
              const C *xr = xin + inOff;
              C *yr = acc + outOff + off;
              for (int64_t ix = lo; ix < hi; ++ix)
                yr[ix * sL] += wv * xr[ix];
            });
          }
        }
      }
    }
    if (bias)
      for (int64_t mo = 0; mo < g.outChannels; ++mo) {
        const C b = static_cast<C>(readDouble(*bias, mo));
        C *acc = y + (n * g.outChannels + mo) * outSize;
        for (int64_t i = 0; i < outSize; ++i)
          acc[i] += b;
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
  g.batch = x.shape[0];
  g.inChannels = x.shape[1];
  g.group = attrs.getInt("group", 1);
  g.outChannels = out.shape[1];
  g.inSpatial.assign(x.shape.begin() + 2, x.shape.end());
  g.outSpatial.assign(out.shape.begin() + 2, out.shape.end());
  g.kernel.assign(w.shape.begin() + 2, w.shape.end());
  std::string error;
  if (!readWindow(attrs, rank - 2, g.window, error))
    return fail("conv_transpose: " + error);
  if (g.group < 1 || w.shape[0] != g.inChannels || g.inChannels % g.group ||
      w.shape[1] * g.group != g.outChannels || out.shape[0] != g.batch)
    return fail("conv_transpose: input " + shapeString(x.shape) + ", weight " +
                shapeString(w.shape) + " and result " + shapeString(out.shape) +
                " do not match group " + std::to_string(g.group));
  if (bias && bias->numElements() != g.outChannels)
    return fail("conv_transpose: bias must have one value per output channel");
  if (x.dtype == DType::F64) {
    Input<double> xi(x), wi(w);
    Output<double> yo(out);
    convTransposeCore<double>(g, xi.data(), wi.data(), bias, yo.data());
    yo.commit();
  } else {
    Input<float> xi(x), wi(w);
    Output<float> yo(out);
    convTransposeCore<float>(g, xi.data(), wi.data(), bias, yo.data());
    yo.commit();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// gemm, matmul
//===----------------------------------------------------------------------===//

// y[M,N] = a[M,K] * b[K,N] (row-major, leading dims K and N); y overwritten.
template <typename C>
void matmul2d(const C *a, const C *b, C *y, int64_t M, int64_t N, int64_t K) {
  for (int64_t i = 0; i < M; ++i) {
    C *yr = y + i * N;
    std::fill(yr, yr + N, C(0));
    for (int64_t k = 0; k < K; ++k) {
      const C av = a[i * K + k];
      const C *br = b + k * N;
      for (int64_t j = 0; j < N; ++j)
        yr[j] += av * br[j];
    }
  }
}

template <typename C>
void gemmCore(const TensorView &a, const TensorView &b, const TensorView *c, TensorView &out,
              bool transA, bool transB, double alpha, double beta, int64_t M, int64_t N,
              int64_t K) {
  Input<C> ai(a), bi(b);
  // Repack op(A) as M x K and op(B) as K x N when transposed.
  std::vector<C> ap, bp;
  const C *A = ai.data(), *Bm = bi.data();
  if (transA) {
    ap.resize(static_cast<size_t>(M * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < M; ++i)
        ap[i * K + k] = A[k * M + i];
    A = ap.data();
  }
  if (transB) {
    bp.resize(static_cast<size_t>(K * N));
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        bp[k * N + j] = Bm[j * K + k];
    Bm = bp.data();
  }
  Output<C> yo(out);
  C *y = yo.data();
  matmul2d<C>(A, Bm, y, M, N, K);
  const C al = static_cast<C>(alpha), be = static_cast<C>(beta);
  if (c) {
    // Unidirectional broadcast of C to [M, N] (right-aligned).
    const std::vector<int64_t> &cs = c->shape;
    int64_t cm = cs.size() >= 2 ? cs[cs.size() - 2] : 1;
    int64_t cn = cs.empty() ? 1 : cs.back();
    int64_t rowStride = cm == 1 ? 0 : cn, colStride = cn == 1 ? 0 : 1;
    Input<C> ci(*c);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        y[i * N + j] = al * y[i * N + j] + be * ci[i * rowStride + j * colStride];
  } else if (al != C(1)) {
    for (int64_t i = 0; i < M * N; ++i)
      y[i] *= al;
  }
  yo.commit();
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
  const double alpha = attrs.getFloat("alpha", 1.0), beta = attrs.getFloat("beta", 1.0);
  if (a.dtype == DType::F64)
    gemmCore<double>(a, b, c, out, transA, transB, alpha, beta, M, N, K);
  else
    gemmCore<float>(a, b, c, out, transA, transB, alpha, beta, M, N, K);
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
  const size_t outBatchRank = out.shape.size() - trailing;
  {
    size_t t = outBatchRank;
    if (ra != 1 && out.shape[t++] != M)
      return fail("matmul: result shape " + shapeString(out.shape) + " does not match");
    if (rb != 1 && out.shape[t] != N)
      return fail("matmul: result shape " + shapeString(out.shape) + " does not match");
  }
  std::vector<int64_t> batch(out.shape.begin(), out.shape.begin() + outBatchRank);
  // Broadcast strides (in matrices) of each operand's batch dims.
  auto batchStrides = [&](const std::vector<int64_t> &s, size_t matrixRank,
                          std::vector<int64_t> &strides) -> bool {
    size_t r = s.size() - matrixRank;
    if (r > batch.size())
      return false;
    strides.assign(batch.size(), 0);
    int64_t stride = 1;
    for (size_t j = 0; j < r; ++j) {
      size_t i = r - 1 - j, d = batch.size() - 1 - j;
      if (s[i] == batch[d])
        strides[d] = s[i] == 1 ? 0 : stride;
      else if (s[i] != 1)
        return false;
      stride *= s[i];
    }
    return true;
  };
  std::vector<int64_t> sa, sb;
  if (!batchStrides(a.shape, ra == 1 ? 1 : 2, sa) || !batchStrides(b.shape, rb == 1 ? 1 : 2, sb))
    return fail("matmul: batch dims of " + shapeString(a.shape) + " and " +
                shapeString(b.shape) + " do not broadcast to " + shapeString(out.shape));
  auto run = [&](auto tag) {
    using C = decltype(tag);
    Input<C> ai(a), bi(b);
    Output<C> yo(out);
    const int64_t batches = product(batch);
    std::vector<int64_t> index;
    for (int64_t bt = 0; bt < batches; ++bt) {
      unflatten(bt, batch, index);
      int64_t oa = 0, ob = 0;
      for (size_t d = 0; d < batch.size(); ++d) {
        oa += index[d] * sa[d];
        ob += index[d] * sb[d];
      }
      matmul2d<C>(ai.data() + oa * M * K, bi.data() + ob * K * N, yo.data() + bt * M * N, M, N,
                  K);
    }
    yo.commit();
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
  std::vector<double> v(static_cast<size_t>(inner));
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

// Expands a parameter that broadcasts (numpy, right-aligned) to `shape`.
bool expandParam(const TensorView &p, const std::vector<int64_t> &shape,
                 std::vector<double> &values) {
  if (p.shape.size() > shape.size())
    return false;
  const size_t rank = shape.size(), off = rank - p.shape.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = p.shape.size(); i-- > 0;) {
    if (p.shape[i] != 1 && p.shape[i] != shape[off + i])
      return false;
    strides[off + i] = p.shape[i] == 1 ? 0 : stride;
    stride *= p.shape[i];
  }
  const int64_t n = product(shape);
  values.resize(static_cast<size_t>(n));
  std::vector<int64_t> index;
  for (int64_t i = 0; i < n; ++i) {
    unflatten(i, shape, index);
    int64_t o = 0;
    for (size_t d = 0; d < rank; ++d)
      o += index[d] * strides[d];
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
  std::vector<int64_t> normShape(x.shape.begin() + axis, x.shape.end());
  std::vector<double> s, b;
  if (!expandParam(scale, normShape, s) || (bias && !expandParam(*bias, normShape, b)))
    return fail("layer_norm: scale/bias do not broadcast to " + shapeString(normShape));
  const double eps = attrs.getFloat("epsilon", 1e-5);
  const int64_t outer = product(x.shape, 0, static_cast<size_t>(axis));
  const int64_t inner = product(normShape);
  std::vector<double> v(static_cast<size_t>(inner));
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
  std::vector<double> sq(static_cast<size_t>(channels * inner)), sum(static_cast<size_t>(inner));
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t base = n * channels * inner;
    for (int64_t i = 0; i < channels * inner; ++i) {
      double v = readDouble(x, base + i);
      sq[i] = v * v;
    }
    for (int64_t c = 0; c < channels; ++c) {
      std::fill(sum.begin(), sum.end(), 0.0);
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

struct PoolPlan {
  int64_t planes = 0; // N * C
  std::vector<int64_t> inSpatial, outSpatial;
  // Per spatial dim d and output index o: the in-bounds input indices of the
  // window, and how many window taps lie inside the padded input.
  std::vector<std::vector<std::vector<int64_t>>> taps;
  std::vector<std::vector<int64_t>> paddedCount;
};

KernelStatus planPool(const char *op, const Attrs &attrs, const TensorView &x,
                      const TensorView &out, PoolPlan &plan) {
  const size_t rank = x.shape.size();
  if (rank < 3 || out.shape.size() != rank || out.shape[0] != x.shape[0] ||
      out.shape[1] != x.shape[1])
    return fail(std::string(op) + ": input " + shapeString(x.shape) + " and result " +
                shapeString(out.shape) + " must be N, C, spatial...");
  const size_t ns = rank - 2;
  const std::vector<int64_t> &kernel = attrs.getInts("kernel_shape");
  if (kernel.size() != ns)
    return fail(std::string(op) + ": kernel_shape must hold " + std::to_string(ns) + " values");
  Window w;
  std::string error;
  if (!readWindow(attrs, ns, w, error))
    return fail(std::string(op) + ": " + error);
  plan.planes = x.shape[0] * x.shape[1];
  plan.inSpatial.assign(x.shape.begin() + 2, x.shape.end());
  plan.outSpatial.assign(out.shape.begin() + 2, out.shape.end());
  plan.taps.assign(ns, {});
  plan.paddedCount.assign(ns, {});
  for (size_t d = 0; d < ns; ++d) {
    if (kernel[d] < 1)
      return fail(std::string(op) + ": kernel_shape must be positive");
    const int64_t in = plan.inSpatial[d];
    for (int64_t o = 0; o < plan.outSpatial[d]; ++o) {
      std::vector<int64_t> taps;
      int64_t padded = 0;
      for (int64_t k = 0; k < kernel[d]; ++k) {
        int64_t i = o * w.strides[d] - w.padBegin[d] + k * w.dilations[d];
        if (i >= -w.padBegin[d] && i < in + w.padEnd[d])
          ++padded;
        if (i >= 0 && i < in)
          taps.push_back(i);
      }
      plan.taps[d].push_back(std::move(taps));
      plan.paddedCount[d].push_back(padded);
    }
  }
  return {};
}

// Calls f(plane, outIndex, inOffsets, paddedCount) for every output element;
// inOffsets are the plane-relative offsets of the in-bounds window taps.
template <typename F> void forEachPoolWindow(const PoolPlan &plan, F &&f) {
  const size_t ns = plan.inSpatial.size();
  std::vector<int64_t> inStride(ns, 1);
  for (size_t d = ns - 1; d-- > 0;)
    inStride[d] = inStride[d + 1] * plan.inSpatial[d + 1];
  const int64_t outSize = product(plan.outSpatial);
  std::vector<int64_t> o, offsets, next;
  for (int64_t p = 0; p < outSize; ++p) {
    unflatten(p, plan.outSpatial, o);
    offsets.assign(1, 0);
    int64_t padded = 1;
    for (size_t d = 0; d < ns; ++d) {
      const std::vector<int64_t> &taps = plan.taps[d][o[d]];
      padded *= plan.paddedCount[d][o[d]];
      next.clear();
      for (int64_t base : offsets)
        for (int64_t i : taps)
          next.push_back(base + i * inStride[d]);
      offsets.swap(next);
    }
    f(p, offsets, padded);
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
  PoolPlan plan;
  if (auto s = planPool("max_pool", attrs, x, out, plan); !s.ok())
    return s;
  const int64_t inSize = product(plan.inSpatial), outSize = product(plan.outSpatial);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using C = MathType<T>;
    const T *xs = static_cast<const T *>(x.data);
    T *ys = static_cast<T *>(out.data);
    for (int64_t pl = 0; pl < plan.planes; ++pl) {
      const T *xp = xs + pl * inSize;
      T *yp = ys + pl * outSize;
      forEachPoolWindow(plan, [&](int64_t p, const std::vector<int64_t> &offsets, int64_t) {
        C best = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                      : std::numeric_limits<C>::lowest();
        bool any = false;
        T bestRaw{};
        for (int64_t off : offsets) {
          C v = loadElem(xp[off]);
          bool take = !any || v > best;
          if constexpr (std::is_floating_point<C>::value)
            take = take || (std::isnan(v) && !std::isnan(best));
          if (take) {
            best = v;
            bestRaw = xp[off];
            any = true;
          }
        }
        yp[p] = any ? bestRaw : storeElem<T>(best);
      });
    }
  };
  switch (x.dtype) {
  case DType::F32: run(float{}); break;
  case DType::F64: run(double{}); break;
  case DType::F16: run(Half{}); break;
  case DType::I8: run(int8_t{}); break;
  case DType::U8: run(uint8_t{}); break;
  case DType::I32: run(int32_t{}); break;
  case DType::I64: run(int64_t{}); break;
  default: return unsupported("max_pool", x.dtype);
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
  PoolPlan plan;
  if (auto s = planPool("avg_pool", attrs, x, out, plan); !s.ok())
    return s;
  const bool includePad = attrs.getInt("count_include_pad", 0) != 0;
  const int64_t inSize = product(plan.inSpatial), outSize = product(plan.outSpatial);
  for (int64_t pl = 0; pl < plan.planes; ++pl) {
    const int64_t xb = pl * inSize, yb = pl * outSize;
    forEachPoolWindow(plan, [&](int64_t p, const std::vector<int64_t> &offsets, int64_t padded) {
      double sum = 0;
      for (int64_t off : offsets)
        sum += readDouble(x, xb + off);
      const int64_t count = includePad ? padded : static_cast<int64_t>(offsets.size());
      writeDouble(out, yb + p, count ? sum / count : std::numeric_limits<double>::quiet_NaN());
    });
  }
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
