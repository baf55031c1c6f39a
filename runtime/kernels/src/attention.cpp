//===- attention.cpp - fused attention, the reference semantics -----------===//
//
// attention(Q, K, V, mask?) = softmax(Q K^T * scale + mask) V over the last
// two dims (dialects/TesselOps.td, tessel.attention): Q [..., Sq, D],
// K [..., Sk, D], V [..., Sk, Dv], the same leading dims; a float mask adds,
// a bool mask keeps where true (-inf elsewhere), `causal` hides key j from
// query i where j > i + (Sk - Sq); the mask broadcasts to [..., Sq, Sk].
//
// Everything is in double: the products, the scores, the softmax (as the
// softmax kernel computes it, so that a row without a finite score is NaN as
// in the unfused graph) and the weighted sum of V; each result rounds once
// to the tensor's dtype. This is the reference the GPU kernels are tested
// against, and what the cpu tier runs.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "registry.h"
#include "tessel/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::cpu {
namespace {

double readDouble(const TensorView &v, int64_t i) {
  switch (v.dtype) {
  case DType::F32: return static_cast<const float *>(v.data)[i];
  case DType::F64: return static_cast<const double *>(v.data)[i];
  case DType::F16: return halfToFloat(static_cast<const uint16_t *>(v.data)[i]);
  case DType::Bool: return static_cast<const uint8_t *>(v.data)[i] != 0 ? 1.0 : 0.0;
  default: return 0;
  }
}

/// The mask's element strides in the scores' index space (right-aligned, 0
/// along the dims it broadcasts). False when it does not broadcast to the
/// scores without changing their shape.
bool maskStrides(const std::vector<int64_t> &mask, const std::vector<int64_t> &scores,
                 std::vector<int64_t> &strides) {
  strides.assign(scores.size(), 0);
  if (mask.size() > scores.size())
    return false;
  const size_t offset = scores.size() - mask.size();
  int64_t stride = 1;
  for (size_t d = mask.size(); d-- > 0;) {
    const int64_t extent = mask[d];
    if (extent != 1 && extent != scores[offset + d])
      return false;
    if (extent != 1)
      strides[offset + d] = stride;
    stride *= extent;
  }
  return true;
}

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t e : shape)
    n *= e;
  return n;
}

/// Whether every element (b, h, i, c) of a [batch, heads, rows, cols] view
/// lies inside a tensor of `elements`.
bool inside(const AttentionView &w, int64_t batch, int64_t heads, int64_t rows, int64_t cols,
            int64_t elements) {
  if (w.offset < 0 || w.batch < 0 || w.head < 0 || w.row < 0)
    return false;
  const int64_t last =
      w.offset + (batch - 1) * w.batch + (heads - 1) * w.head + (rows - 1) * w.row + cols - 1;
  return last < elements;
}

/// Whether the view covers a tensor of `elements` exactly once: its strides,
/// sorted, are the dense strides of a permutation of [batch, heads, rows].
bool coversOnce(const AttentionView &w, int64_t batch, int64_t heads, int64_t rows,
                int64_t cols, int64_t elements) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, extent)
  for (auto [extent, stride] : {std::pair{batch, w.batch}, {heads, w.head}, {rows, w.row}})
    if (extent > 1)
      dims.push_back({stride, extent});
  std::sort(dims.begin(), dims.end());
  int64_t expect = cols;
  for (auto [stride, extent] : dims) {
    if (stride != expect)
      return false;
    expect *= extent;
  }
  return w.offset == 0 && expect == elements;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

std::string readAttention(const std::vector<int64_t> &dims, const std::vector<int64_t> &views,
                          const std::vector<int64_t> &q, const std::vector<int64_t> &k,
                          const std::vector<int64_t> &v, const std::vector<int64_t> &out,
                          const std::vector<int64_t> *mask, AttentionGeometry &g) {
  g = {};
  std::vector<int64_t> scores;
  if (dims.empty() && views.empty()) {
    const size_t rank = q.size();
    if (rank != 3 && rank != 4)
      return "query must have rank 3 ([B*H, S, D]) or 4 ([B, H, S, D])";
    if (k.size() != rank || v.size() != rank || out.size() != rank)
      return "query, key, value and result must have one rank";
    for (size_t i = 0; i + 2 < rank; ++i)
      if (k[i] != q[i] || v[i] != q[i] || out[i] != q[i])
        return "query, key, value and result must have the same leading dims";
    g.sq = q[rank - 2];
    g.d = q[rank - 1];
    g.sk = k[rank - 2];
    g.dv = v[rank - 1];
    if (k[rank - 1] != g.d)
      return "key's head dim " + std::to_string(k[rank - 1]) + " differs from query's " +
             std::to_string(g.d);
    if (v[rank - 2] != g.sk)
      return "value has " + std::to_string(v[rank - 2]) + " keys, key has " + std::to_string(g.sk);
    if (out[rank - 2] != g.sq || out[rank - 1] != g.dv)
      return "result must be [..., " + std::to_string(g.sq) + ", " + std::to_string(g.dv) + "]";
    g.batch = q[0];
    g.heads = rank == 4 ? q[1] : 1;
    auto dense = [&](int64_t rows, int64_t cols) {
      return AttentionView{0, g.heads * rows * cols, rows * cols, cols};
    };
    g.q = dense(g.sq, g.d);
    g.k = dense(g.sk, g.d);
    g.v = dense(g.sk, g.dv);
    g.out = dense(g.sq, g.dv);
    scores.assign(q.begin(), q.end() - 1);
    scores.push_back(g.sk);
  } else {
    if (dims.size() != 6 || views.size() != kAttentionViewValues)
      return "dims must hold [B, H, Sq, Sk, D, Dv] and views 16 values (offset, batch, head "
             "and row strides of query, key, value and result)";
    g.batch = dims[0];
    g.heads = dims[1];
    g.sq = dims[2];
    g.sk = dims[3];
    g.d = dims[4];
    g.dv = dims[5];
    for (int64_t e : dims)
      if (e < 1)
        return "dims " + shapeText(dims) + " must be positive";
    AttentionView *all[] = {&g.q, &g.k, &g.v, &g.out};
    for (size_t i = 0; i < 4; ++i)
      *all[i] = {views[4 * i], views[4 * i + 1], views[4 * i + 2], views[4 * i + 3]};
    if (!inside(g.q, g.batch, g.heads, g.sq, g.d, count(q)) ||
        !inside(g.k, g.batch, g.heads, g.sk, g.d, count(k)) ||
        !inside(g.v, g.batch, g.heads, g.sk, g.dv, count(v)))
      return "a view of query, key or value reaches outside its tensor";
    if (!coversOnce(g.out, g.batch, g.heads, g.sq, g.dv, count(out)))
      return "the result's view must cover its tensor " + shapeText(out) +
             " once (dense strides of [B, H, Sq, Dv] permuted)";
    scores = {g.batch, g.heads, g.sq, g.sk};
  }
  if (mask) {
    std::vector<int64_t> strides;
    if (!maskStrides(*mask, scores, strides))
      return "mask must broadcast to the scores' shape " + shapeText(scores);
    const size_t r = scores.size();
    g.maskJ = strides[r - 1];
    g.maskI = strides[r - 2];
    g.maskB = strides[0];
    g.maskH = r == 4 ? strides[1] : 0;
  }
  return "";
}

namespace {

KernelStatus attentionKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                             const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("attention", inputs, outputs, 3); !s.ok())
    return s;
  const TensorView &q = *inputs[0], &k = *inputs[1], &v = *inputs[2];
  const TensorView *mask = optionalInput(inputs, 3);
  TensorView &out = *outputs[0];
  if (!isFloat(q.dtype))
    return unsupported("attention", q.dtype);
  if (k.dtype != q.dtype || v.dtype != q.dtype || out.dtype != q.dtype)
    return fail("attention: query, key, value and result must share a dtype");
  if (mask && !isFloat(mask->dtype) && mask->dtype != DType::Bool)
    return fail("attention: the mask must be float (additive) or bool (keep)");
  AttentionGeometry g;
  if (std::string error = readAttention(attrs.getInts("dims"), attrs.getInts("views"), q.shape,
                                        k.shape, v.shape, out.shape,
                                        mask ? &mask->shape : nullptr, g);
      !error.empty())
    return fail("attention: " + error);
  const bool boolMask = mask && mask->dtype == DType::Bool;
  const bool causal = attrs.getInt("causal", 0) != 0;
  const double scale = attrs.getFloat("scale", 1.0);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  const Input<double> qd(q, kSlotIn0), kd(k, kSlotIn1), vd(v, kSlotA);
  double *row = scratch<double>(kSlotRow, static_cast<size_t>(g.sk));
  double *acc = scratch<double>(kSlotAcc, static_cast<size_t>(g.dv));
  const int64_t sq = g.sq, sk = g.sk, d = g.d, dv = g.dv;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t h = 0; h < g.heads; ++h) {
      auto base = [&](const AttentionView &w) { return w.offset + b * w.batch + h * w.head; };
      const double *qb = qd.data() + base(g.q), *kb = kd.data() + base(g.k);
      const double *vb = vd.data() + base(g.v);
      const int64_t maskBase = b * g.maskB + h * g.maskH;
      for (int64_t i = 0; i < sq; ++i) {
        double peak = kNegInf;
        for (int64_t j = 0; j < sk; ++j) {
          double s;
          if (causal && j > i + (sk - sq)) {
            s = kNegInf;
          } else {
            double dot = 0;
            for (int64_t c = 0; c < d; ++c)
              dot += qb[i * g.q.row + c] * kb[j * g.k.row + c];
            s = dot * scale;
            if (mask) {
              double m = readDouble(*mask, maskBase + i * g.maskI + j * g.maskJ);
              s = boolMask ? (m != 0 ? s : kNegInf) : s + m;
            }
          }
          row[j] = s;
          peak = std::max(peak, s);
        }
        // As the softmax kernel: a row without a finite peak shifts by 0,
        // giving the IEEE results of the unshifted formula (all -inf: NaN).
        const double shift = std::isfinite(peak) ? peak : 0.0;
        double sum = 0;
        for (int64_t j = 0; j < sk; ++j)
          sum += row[j] = std::exp(row[j] - shift);
        std::fill(acc, acc + dv, 0.0);
        for (int64_t j = 0; j < sk; ++j) {
          const double w = row[j] / sum;
          for (int64_t c = 0; c < dv; ++c)
            acc[c] += w * vb[j * g.v.row + c];
        }
        const int64_t at = base(g.out) + i * g.out.row;
        withFloatType(out.dtype, [&](auto tag) {
          using T = decltype(tag);
          T *y = static_cast<T *>(out.data);
          for (int64_t c = 0; c < dv; ++c)
            y[at + c] = storeElem<T>(static_cast<MathType<T>>(acc[c]));
        });
      }
    }
  return {};
}

} // namespace

void addAttentionKernels(KernelTable &t) { t["attention"] = &attentionKernel; }

} // namespace tessel::cpu
