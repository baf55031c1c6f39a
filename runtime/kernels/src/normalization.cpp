//===- normalization.cpp - batch, instance and layer norm, and LRN --------===//
//
// The normalizations accumulate in double for every dtype (numerically
// sensitive: means, variances, sums of squares); elements are read as double
// and the result is stored in the tensor's dtype (f16 through float).
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "registry.h"

#include <algorithm>
#include <cmath>

namespace tessel::cpu {
namespace {

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

// Product of v[begin:end) (end clamped to the size).
int64_t product(const std::vector<int64_t> &v, size_t begin = 0, size_t end = SIZE_MAX) {
  int64_t p = 1;
  auto last = v.begin() + static_cast<std::ptrdiff_t>(std::min(end, v.size()));
  for (auto it = v.begin() + static_cast<std::ptrdiff_t>(std::min(begin, v.size())); it < last; ++it)
    p *= *it;
  return p;
}

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

} // namespace

void addNormalizationKernels(KernelTable &t) {
  t["batch_norm"] = &batchNormKernel;
  t["instance_norm"] = &instanceNormKernel;
  t["layer_norm"] = &layerNormKernel;
  t["lrn"] = &lrnKernel;
}

} // namespace tessel::cpu
