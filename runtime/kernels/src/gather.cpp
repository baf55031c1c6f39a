//===- gather.cpp - gather, gather_elements and gather_nd -----------------===//
//
// The indexing kernels, with ONNX semantics: gather takes whole slices of the
// data along an axis, gather_elements one element per index, gather_nd the
// slice a tuple of indices (the indices' last dim) addresses. Indices (i32 or
// i64; gather_nd i64) may be negative (from the end of their dim); every
// index is checked before anything is written. Elements move by their size,
// so every dtype works.
//
//===----------------------------------------------------------------------===//
#include "movement.h"
#include "registry.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tessel::cpu {
namespace {

/// Every index within [-extent, extent) of the axis, checked before anything
/// is written, so a bad index leaves no half-written output behind.
template <typename I>
KernelStatus checkIndices(const char *op, const I *idx, int64_t count, int64_t axis,
                          int64_t extent) {
  for (int64_t j = 0; j < count; ++j) {
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -extent || v >= extent)
      return fail(op, "index " + std::to_string(v) + " is out of range for axis " +
                          std::to_string(axis) + " of extent " + std::to_string(extent));
  }
  return {};
}

template <typename I>
KernelStatus gatherTyped(const TensorView &data, const TensorView &indices, int64_t axis,
                         TensorView &out) {
  const I *idx = static_cast<const I *>(indices.data);
  const int64_t count = indices.numElements(), extent = data.shape[axis];
  if (KernelStatus s = checkIndices("gather", idx, count, axis, extent); !s.ok())
    return s;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.shape[d];
  for (size_t d = axis + 1; d < data.shape.size(); ++d)
    inner *= data.shape[d];
  const size_t chunk = static_cast<size_t>(inner) * dtypeSize(data.dtype);
  if (chunk == 0)
    return {};
  const auto *src = static_cast<const uint8_t *>(data.data);
  auto *dst = static_cast<uint8_t *>(out.data);
  for (int64_t o = 0; o < outer; ++o) {
    const uint8_t *block = src + static_cast<size_t>(o * extent) * chunk;
    for (int64_t j = 0; j < count; ++j) {
      int64_t v = static_cast<int64_t>(idx[j]);
      if (v < 0)
        v += extent;
      std::memcpy(dst, block + static_cast<size_t>(v) * chunk, chunk);
      dst += chunk;
    }
  }
  return {};
}

KernelStatus gatherKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("gather", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &data = *inputs[0], &indices = *inputs[1];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("gather", data, out); !s.ok())
    return s;
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return fail("gather", "axis " + std::to_string(attrs.getInt("axis")) +
                              " is out of range for data rank " + std::to_string(rank));
  // data.shape[:axis] + indices.shape + data.shape[axis+1:]
  std::array<int64_t, 2 * kMaxRank> expected{};
  size_t expectedRank = 0;
  for (int64_t d = 0; d < axis; ++d)
    expected[expectedRank++] = data.shape[d];
  for (int64_t d : indices.shape)
    expected[expectedRank++] = d;
  for (int64_t d = axis + 1; d < rank; ++d)
    expected[expectedRank++] = data.shape[d];
  if (out.shape.size() != expectedRank ||
      !std::equal(out.shape.begin(), out.shape.end(), expected.begin()))
    return fail("gather", "output shape " + shapeText(out.shape) + " is not data shape " +
                              shapeText(data.shape) + " gathered along axis " +
                              std::to_string(axis) + " by indices of shape " +
                              shapeText(indices.shape));
  switch (indices.dtype) {
  case DType::I32: return gatherTyped<int32_t>(data, indices, axis, out);
  case DType::I64: return gatherTyped<int64_t>(data, indices, axis, out);
  default:
    return fail("gather", std::string("indices must be i32 or i64, not ") +
                              dtypeName(indices.dtype));
  }
}

//===----------------------------------------------------------------------===//
// gather_elements
//===----------------------------------------------------------------------===//

template <typename I>
KernelStatus gatherElementsTyped(const TensorView &data, const TensorView &indices, int64_t axis,
                                 TensorView &out) {
  const I *idx = static_cast<const I *>(indices.data);
  const int64_t count = indices.numElements(), extent = data.shape[axis];
  if (KernelStatus s = checkIndices("gather_elements", idx, count, axis, extent); !s.ok())
    return s;
  const size_t rank = data.shape.size();
  const Dims strides = stridesOf(data.shape);
  withElementBits(dtypeSize(data.dtype), [&](auto bits) {
    using T = decltype(bits);
    const T *src = static_cast<const T *>(data.data);
    T *dst = static_cast<T *>(out.data);
    Dims index{};
    for (int64_t j = 0; j < count; ++j) {
      int64_t v = static_cast<int64_t>(idx[j]);
      if (v < 0)
        v += extent;
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d)
        offset += (static_cast<int64_t>(d) == axis ? v : index[d]) * strides[d];
      dst[j] = src[offset];
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < indices.shape[d])
          break;
        index[d] = 0;
      }
    }
  });
  return {};
}

KernelStatus gatherElementsKernel(const Attrs &attrs, const Inputs &inputs,
                                  const Outputs &outputs) {
  if (KernelStatus s = checkOperands("gather_elements", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &data = *inputs[0], &indices = *inputs[1];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("gather_elements", data, out); !s.ok())
    return s;
  if (!validDType(data.dtype))
    return fail("gather_elements", "invalid dtype");
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return fail("gather_elements", "axis " + std::to_string(attrs.getInt("axis")) +
                                       " is out of range for data rank " + std::to_string(rank));
  bool fits = indices.shape.size() == data.shape.size() && out.shape == indices.shape;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == axis || indices.shape[d] <= data.shape[d];
  if (!fits)
    return fail("gather_elements", "indices of shape " + shapeText(indices.shape) +
                                       " and output of shape " + shapeText(out.shape) +
                                       " do not fit data of shape " + shapeText(data.shape) +
                                       " along axis " + std::to_string(axis));
  switch (indices.dtype) {
  case DType::I32: return gatherElementsTyped<int32_t>(data, indices, axis, out);
  case DType::I64: return gatherElementsTyped<int64_t>(data, indices, axis, out);
  default:
    return fail("gather_elements", std::string("indices must be i32 or i64, not ") +
                                       dtypeName(indices.dtype));
  }
}

//===----------------------------------------------------------------------===//
// gather_nd
//===----------------------------------------------------------------------===//

/// result[i..., j...] = data[i[0..b)..., indices[i...][0..k)..., j...]: for
/// each of the indices' tuples (outer order), one contiguous slice of
/// data.shape[b + k:] elements, from the data block of the tuple's batch.
KernelStatus gatherNDKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("gather_nd", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &data = *inputs[0], &indices = *inputs[1];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("gather_nd", data, out); !s.ok())
    return s;
  if (!validDType(data.dtype))
    return fail("gather_nd", "invalid dtype");
  if (indices.dtype != DType::I64)
    return fail("gather_nd", std::string("indices must be i64, not ") + dtypeName(indices.dtype));
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t q = static_cast<int64_t>(indices.shape.size());
  const int64_t b = attrs.getInt("batch_dims");
  const int64_t k = q ? indices.shape.back() : 0;
  bool fits = r >= 1 && q >= 1 && b >= 0 && b < std::min(r, q) && k >= 1 && k <= r - b;
  for (int64_t d = 0; fits && d < b; ++d)
    fits = data.shape[d] == indices.shape[d];
  // indices.shape[:-1] + data.shape[b + k:]
  std::vector<int64_t> expected;
  if (fits) {
    expected.assign(indices.shape.begin(), indices.shape.end() - 1);
    expected.insert(expected.end(), data.shape.begin() + b + k, data.shape.end());
  }
  if (!fits || out.shape != expected)
    return fail("gather_nd", "data of shape " + shapeText(data.shape) + ", indices of shape " +
                                 shapeText(indices.shape) + ", batch_dims " + std::to_string(b) +
                                 " and output of shape " + shapeText(out.shape) + " do not fit");
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  int64_t batches = 1, tuplesPerBatch = 1, slice = 1;
  for (int64_t d = 0; d < b; ++d)
    batches *= indices.shape[d];
  for (int64_t d = b; d < q - 1; ++d)
    tuplesPerBatch *= indices.shape[d];
  for (int64_t d = b + k; d < r; ++d)
    slice *= data.shape[d];
  // Each index within [-extent, extent) of its dim, before anything is written.
  for (int64_t t = 0; t < batches * tuplesPerBatch; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = idx[t * k + j], extent = data.shape[b + j];
      if (v < -extent || v >= extent)
        return fail("gather_nd", "index " + std::to_string(v) + " is out of range for dim " +
                                     std::to_string(b + j) + " of extent " +
                                     std::to_string(extent));
    }
  // Strides in slices of the data's dims b .. b + k, and one batch's slices.
  std::vector<int64_t> stride(static_cast<size_t>(k));
  int64_t batchSlices = 1;
  for (int64_t j = k; j-- > 0;) {
    stride[static_cast<size_t>(j)] = batchSlices;
    batchSlices *= data.shape[b + j];
  }
  const size_t sliceBytes = static_cast<size_t>(slice) * dtypeSize(data.dtype);
  if (sliceBytes == 0)
    return {};
  const auto *src = static_cast<const uint8_t *>(data.data);
  auto *dst = static_cast<uint8_t *>(out.data);
  for (int64_t batch = 0; batch < batches; ++batch)
    for (int64_t t = 0; t < tuplesPerBatch; ++t) {
      const int64_t *tuple = idx + (batch * tuplesPerBatch + t) * k;
      int64_t offset = batch * batchSlices;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = tuple[j];
        if (v < 0)
          v += data.shape[b + j];
        offset += v * stride[static_cast<size_t>(j)];
      }
      std::memcpy(dst, src + static_cast<size_t>(offset) * sliceBytes, sliceBytes);
      dst += sliceBytes;
    }
  return {};
}

} // namespace

void addGatherKernels(KernelTable &table) {
  table["gather"] = &gatherKernel;
  table["gather_elements"] = &gatherElementsKernel;
  table["gather_nd"] = &gatherNDKernel;
}

} // namespace tessel::cpu
