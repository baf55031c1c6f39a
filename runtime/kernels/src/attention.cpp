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

/// The mask's element strides in the scores' index space [lead..., Sq, Sk]:
/// the mask right-aligned, 0 along the dims it broadcasts. False when it does
/// not broadcast to the scores without changing their shape.
bool maskStrides(const std::vector<int64_t> &mask, const std::vector<int64_t> &scores,
                 int64_t *strides) {
  if (mask.size() > scores.size())
    return false;
  const size_t offset = scores.size() - mask.size();
  int64_t stride = 1;
  for (size_t d = scores.size(); d-- > 0;) {
    strides[d] = 0;
    if (d < offset)
      continue;
    const int64_t extent = mask[d - offset];
    if (extent != 1 && extent != scores[d])
      return false;
    if (extent != 1)
      strides[d] = stride;
    stride *= extent;
  }
  return true;
}

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
  const size_t rank = q.shape.size();
  if (rank < 2 || k.shape.size() != rank || v.shape.size() != rank || out.shape.size() != rank)
    return fail("attention: query, key, value and result must have one rank >= 2");
  const int64_t sq = q.shape[rank - 2], d = q.shape[rank - 1];
  const int64_t sk = k.shape[rank - 2], dv = v.shape[rank - 1];
  for (size_t i = 0; i + 2 < rank; ++i)
    if (k.shape[i] != q.shape[i] || v.shape[i] != q.shape[i] || out.shape[i] != q.shape[i])
      return fail("attention: query, key, value and result must have the same leading dims");
  if (k.shape[rank - 1] != d || v.shape[rank - 2] != sk || out.shape[rank - 2] != sq ||
      out.shape[rank - 1] != dv)
    return fail("attention: shapes " + shapeString(q.shape) + ", " + shapeString(k.shape) +
                ", " + shapeString(v.shape) + " -> " + shapeString(out.shape) +
                " are not [..., Sq, D], [..., Sk, D], [..., Sk, Dv] -> [..., Sq, Dv]");
  std::vector<int64_t> scores(q.shape.begin(), q.shape.end() - 1);
  scores.push_back(sk);
  int64_t *strides = scratch<int64_t>(kSlotIndex, rank);
  if (mask && !maskStrides(mask->shape, scores, strides))
    return fail("attention: mask " + shapeString(mask->shape) + " does not broadcast to " +
                shapeString(scores));
  const bool boolMask = mask && mask->dtype == DType::Bool;
  const bool causal = attrs.getInt("causal", 0) != 0;
  const double scale = attrs.getFloat("scale", 1.0);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();

  const Input<double> qd(q, kSlotIn0), kd(k, kSlotIn1), vd(v, kSlotA);
  double *row = scratch<double>(kSlotRow, static_cast<size_t>(sk));
  double *acc = scratch<double>(kSlotAcc, static_cast<size_t>(dv));
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i)
    batches *= q.shape[i];
  for (int64_t b = 0; b < batches; ++b) {
    // The mask's offset of batch b: b unflattened over the leading dims.
    int64_t maskBase = 0;
    for (int64_t rest = b, dim = static_cast<int64_t>(rank) - 3; dim >= 0; --dim) {
      maskBase += (rest % q.shape[dim]) * strides[dim];
      rest /= q.shape[dim];
    }
    const double *qb = qd.data() + b * sq * d, *kb = kd.data() + b * sk * d;
    const double *vb = vd.data() + b * sk * dv;
    for (int64_t i = 0; i < sq; ++i) {
      double peak = kNegInf;
      for (int64_t j = 0; j < sk; ++j) {
        double s;
        if (causal && j > i + (sk - sq)) {
          s = kNegInf;
        } else {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += qb[i * d + c] * kb[j * d + c];
          s = dot * scale;
          if (mask) {
            double m = readDouble(*mask, maskBase + i * strides[rank - 2] + j * strides[rank - 1]);
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
          acc[c] += w * vb[j * dv + c];
      }
      const int64_t base = (b * sq + i) * dv;
      withFloatType(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        T *y = static_cast<T *>(out.data);
        for (int64_t c = 0; c < dv; ++c)
          y[base + c] = storeElem<T>(static_cast<MathType<T>>(acc[c]));
      });
    }
  }
  return {};
}

} // namespace

void addAttentionKernels(KernelTable &t) { t["attention"] = &attentionKernel; }

} // namespace tessel::cpu
