//===- conv.cpp - conv and conv_transpose, N-d, in NCHW and NHWC ----------===//
//
// conv: an implicit GEMM on the packed GEMM of gemm_tile.cpp, over im2col
// chunks (NCHW: stored k-major, whole or partial output rows; NHWC: rows of
// taps x channels in the order of the OHWI weight), a direct read where a
// 1x1, stride-1, unpadded conv needs no im2col, and a tap loop for depthwise
// NHWC convs; each output row ends in the epilogue (gemm.h). conv_transpose
// (NCHW): a scatter of each input row into the result, then bias.
//
// Precision: f32 and f16 tensors compute and accumulate in float (f16 is
// widened to float as it is loaded: im2col chunks and packed weights are
// built in float); f64 tensors compute in double. The result is rounded once.
// Scratch comes from per-thread buffers (scratch.h), so after an engine's
// first run these kernels allocate nothing.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "gemm.h"
#include "registry.h"

#include <algorithm>
#include <cstring>

namespace tessel::cpu {
namespace {

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
  const SpatialDims inStride = g.inSpatial.strides();
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
    SpatialDims op;
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
  const SpatialDims inStride = g.inSpatial.strides();

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
          SpatialDims op;
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
  const SpatialDims inStride = g.inSpatial.strides();
  const int64_t sL = g.window.strides[last], pL = g.window.padBegin[last];
  const int64_t inL = g.inSpatial[last], outL = g.outSpatial[last];
  SpatialDims outer; // output rows: all dims but the last
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
  const TensorView &w = *inputs[1];
  const TensorView *bias = optionalInput(inputs, 2);
  const TensorView *residual = optionalInput(inputs, 3);
  const TensorView *scale = optionalInput(inputs, 4);
  TensorView &out = *outputs[0];
  if (!isFloat(inputs[0]->dtype))
    return unsupported("conv", inputs[0]->dtype);
  if (!isFloat(w.dtype) || out.dtype != inputs[0]->dtype || (bias && !isFloat(bias->dtype)) ||
      (residual && !isFloat(residual->dtype)) || (scale && scale->dtype != inputs[0]->dtype))
    return fail("conv: operand dtypes must be float and the result must match the input");
  ConvGeometry g;
  std::string error;
  if (!readConvGeometry(attrs, inputs[0]->shape, w.shape, out.shape, g, error))
    return fail("conv: " + error);
  // The input scale (one value per image and channel): the conv reads x *
  // scale, each product rounded to x's type as a mul step would.
  TensorView scaled = *inputs[0];
  if (scale) {
    const int64_t spatial = g.inSpatial.product();
    if (scale->numElements() != g.batch * g.inChannels)
      return fail("conv: input_scale must have one value per image and input channel");
    withFloatType(scaled.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T *x = static_cast<const T *>(inputs[0]->data);
      const T *s = static_cast<const T *>(scale->data);
      T *y = scratch<T>(kSlotIn0, static_cast<size_t>(scaled.numElements()));
      for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t p = 0; p < spatial; ++p)
          for (int64_t c = 0; c < g.inChannels; ++c) {
            const int64_t at = g.nhwc ? (n * spatial + p) * g.inChannels + c
                                      : (n * g.inChannels + c) * spatial + p;
            y[at] = storeElem<T>(loadElem(x[at]) * loadElem(s[n * g.inChannels + c]));
          }
      scaled.data = y;
    });
  }
  const TensorView &x = scaled;
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
// pool_fc: a squeeze-excitation block's global pool and first 1x1 conv
//===----------------------------------------------------------------------===//

// y[n, m] = act(sum_c w[m, c] * mean_p x[n, p, c] + bias[m]), NHWC: the mean
// in double, then the products and their sum in C (float for f16 and f32),
// the conv's epilogue on the row, one rounding.
template <typename T, typename C>
void poolFcRun(const TensorView &x, const TensorView &w, const TensorView *bias,
               const Activation &act, TensorView &out) {
  const int64_t batch = x.shape.front(), channels = x.shape.back(), outChannels = w.shape.front();
  const int64_t positions = batch ? x.numElements() / (batch * channels) : 0;
  const T *xs = static_cast<const T *>(x.data);
  C *mean = scratch<C>(kSlotCol, static_cast<size_t>(channels));
  C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(outChannels));
  double *sum = scratch<double>(kSlotIndex, static_cast<size_t>(channels));
  for (int64_t n = 0; n < batch; ++n) {
    std::fill(sum, sum + channels, 0.0);
    for (int64_t p = 0; p < positions; ++p) {
      const T *row = xs + (n * positions + p) * channels;
      for (int64_t c = 0; c < channels; ++c)
        sum[c] += static_cast<double>(loadElem(row[c]));
    }
    for (int64_t c = 0; c < channels; ++c)
      mean[c] = static_cast<C>(positions ? sum[c] / static_cast<double>(positions) : 0.0);
    withFloatType(w.dtype, [&](auto tag) {
      using W = decltype(tag);
      const W *ws = static_cast<const W *>(w.data);
      for (int64_t m = 0; m < outChannels; ++m) {
        C a = 0;
        for (int64_t c = 0; c < channels; ++c)
          a += loadAs<C>(ws[m * channels + c]) * mean[c];
        acc[m] = a;
      }
    });
    epilogueRow<C>(acc, outChannels, 1.0, Addend{bias, 0, 1, 1.0}, Addend{}, act, out,
                   n * outChannels);
  }
}

KernelStatus poolFcKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                          const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("pool_fc", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &x = *inputs[0], &w = *inputs[1];
  const TensorView *bias = optionalInput(inputs, 2);
  TensorView &out = *outputs[0];
  if (!isFloat(x.dtype))
    return unsupported("pool_fc", x.dtype);
  if (!isFloat(w.dtype) || out.dtype != x.dtype || (bias && !isFloat(bias->dtype)))
    return fail("pool_fc: operand dtypes must be float and the result must match the input");
  const size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank || out.shape.size() != rank)
    return fail("pool_fc: input, weight and result must have one rank of at least 3");
  const int64_t channels = x.shape.back(), outChannels = w.shape.front();
  bool fits = w.shape.back() == channels && out.shape.front() == x.shape.front() &&
              out.shape.back() == outChannels;
  for (size_t d = 1; d + 1 < rank; ++d)
    fits = fits && w.shape[d] == 1 && out.shape[d] == 1;
  if (!fits)
    return fail("pool_fc: weight " + shapeString(w.shape) + " and result " +
                shapeString(out.shape) + " do not fit input " + shapeString(x.shape));
  if (bias && bias->numElements() != outChannels)
    return fail("pool_fc: bias must have one value per output channel");
  Activation act;
  if (auto s = readActivation("pool_fc", attrs, "activation", "alpha", "beta", act); !s.ok())
    return s;
  switch (x.dtype) {
  case DType::F64: poolFcRun<double, double>(x, w, bias, act, out); break;
  case DType::F16: poolFcRun<Half, float>(x, w, bias, act, out); break;
  default: poolFcRun<float, float>(x, w, bias, act, out); break;
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
  const SpatialDims inStride = g.inSpatial.strides(), outStride = g.outSpatial.strides();
  const int64_t sL = g.window.strides[last], pL = g.window.padBegin[last];
  const int64_t dL = g.window.dilations[last];
  const int64_t inL = g.inSpatial[last], outL = g.outSpatial[last];
  std::fill(y, y + g.batch * g.outChannels * outSize, C(0));
  if (inL == 0)
    return;
  const int64_t inRows = inSize / inL;
  SpatialDims outer; // input rows: all dims but the last
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

} // namespace

void addConvKernels(KernelTable &t) {
  t["conv"] = &convKernel;
  t["conv_transpose"] = &convTransposeKernel;
  t["pool_fc"] = &poolFcKernel;
}

} // namespace tessel::cpu
