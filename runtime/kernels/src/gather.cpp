//===- gather.cpp - gather, gather_elements, gather_nd and scatter_nd -----===//
//
// The indexing kernels, with ONNX semantics: gather takes whole slices of the
// data along an axis, gather_elements one element per index, gather_nd the
// slice a tuple of indices (the indices' last dim) addresses, and scatter_nd
// writes (or combines) slices of the updates into a copy of the data at the
// slices such tuples address. Indices (i32 or i64; gather_nd and scatter_nd
// i64) may be negative (from the end of their dim); every index is checked
// before anything is written. Elements move by their size, so every dtype
// works (scatter_nd's reductions: the numeric ones).
//
//===----------------------------------------------------------------------===//
#include "dispatch.h"
#include "movement.h"
#include "registry.h"
#include "tessel/elementwise_math.h"

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

/// The indices' tuples (their last dim, k long) checked against `dims` (k
/// extents: the data's dims firstDim .. firstDim + k), each tuple's offset in
/// slices of the dims after them, in the tuples' order: what gather_nd and
/// scatter_nd address. Every index is checked before anything is written.
KernelStatus tupleOffsets(const char *op, const TensorView &indices, const int64_t *dims,
                          int64_t firstDim, std::vector<int64_t> &offsets) {
  const int64_t k = indices.shape.back();
  const int64_t tuples = k ? indices.numElements() / k : 0;
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  offsets.assign(static_cast<size_t>(tuples), 0);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = idx[t * k + j], extent = dims[j];
      if (v < -extent || v >= extent)
        return fail(op, "index " + std::to_string(v) + " is out of range for dim " +
                            std::to_string(firstDim + j) + " of extent " +
                            std::to_string(extent));
      offset = offset * extent + (v < 0 ? v + extent : v);
    }
    offsets[static_cast<size_t>(t)] = offset;
  }
  return {};
}

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
  int64_t tuplesPerBatch = 1, slice = 1, batchSlices = 1;
  for (int64_t d = b; d < q - 1; ++d)
    tuplesPerBatch *= indices.shape[d];
  for (int64_t d = b + k; d < r; ++d)
    slice *= data.shape[d];
  for (int64_t d = b; d < b + k; ++d)
    batchSlices *= data.shape[d];
  std::vector<int64_t> offsets;
  if (KernelStatus s = tupleOffsets("gather_nd", indices, data.shape.data() + b, b, offsets);
      !s.ok())
    return s;
  const size_t sliceBytes = static_cast<size_t>(slice) * dtypeSize(data.dtype);
  if (sliceBytes == 0)
    return {};
  // Tuple t lies in batch t / tuplesPerBatch, whose data block starts at
  // slice batch * batchSlices.
  const auto *src = static_cast<const uint8_t *>(data.data);
  auto *dst = static_cast<uint8_t *>(out.data);
  for (size_t t = 0; t < offsets.size(); ++t) {
    const int64_t batch = static_cast<int64_t>(t) / tuplesPerBatch;
    const int64_t offset = batch * batchSlices + offsets[t];
    std::memcpy(dst, src + static_cast<size_t>(offset) * sliceBytes, sliceBytes);
    dst += sliceBytes;
  }
  return {};
}

//===----------------------------------------------------------------------===//
// scatter_nd
//===----------------------------------------------------------------------===//

/// a combined with b by `op` (tessel/elementwise_math.h, the GPU kernel's
/// formulas too): f16 through float, one rounding; integers wrapping.
template <elementwise::Binary op, typename T> T combine(T a, T b) {
  if constexpr (isFloatElem<T>())
    return storeElem<T>(elementwise::binaryFloat<op>(loadElem(a), loadElem(b)));
  else
    return elementwise::binaryInt<op>(a, b);
}

template <elementwise::Binary op, typename T>
void scatterCombine(const std::vector<int64_t> &offsets, int64_t slice, const T *u, T *y) {
  for (size_t t = 0; t < offsets.size(); ++t)
    for (int64_t j = 0; j < slice; ++j) {
      T &e = y[offsets[t] * slice + j];
      e = combine<op>(e, u[static_cast<int64_t>(t) * slice + j]);
    }
}

/// output = data; then, tuple by tuple in order, the slice of data.shape[k:]
/// that the tuple addresses is replaced by (reduction none) or combined
/// with its slice of the updates.
KernelStatus scatterNDKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("scatter_nd", inputs, outputs, 3); !s.ok())
    return s;
  const TensorView &data = *inputs[0], &indices = *inputs[1], &updates = *inputs[2];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("scatter_nd", data, out); !s.ok())
    return s;
  if (KernelStatus s = checkSameDType("scatter_nd", updates, out); !s.ok())
    return s;
  if (!validDType(data.dtype))
    return fail("scatter_nd", "invalid dtype");
  if (indices.dtype != DType::I64)
    return fail("scatter_nd", std::string("indices must be i64, not ") + dtypeName(indices.dtype));
  using elementwise::Binary;
  const std::string &name = attrs.getString("reduction");
  const bool replace = name.empty() || name == "none";
  Binary reduction = Binary::Add;
  if (name == "mul")
    reduction = Binary::Mul;
  else if (name == "max")
    reduction = Binary::Max;
  else if (name == "min")
    reduction = Binary::Min;
  else if (!replace && name != "add")
    return fail("scatter_nd", "unknown reduction '" + name + "'");
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t q = static_cast<int64_t>(indices.shape.size());
  const int64_t k = q ? indices.shape.back() : 0;
  // updates: indices.shape[:-1] + data.shape[k:]
  bool fits = r >= 1 && q >= 1 && k >= 1 && k <= r && out.shape == data.shape;
  std::vector<int64_t> expected;
  if (fits) {
    expected.assign(indices.shape.begin(), indices.shape.end() - 1);
    expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  }
  if (!fits || updates.shape != expected)
    return fail("scatter_nd", "data of shape " + shapeText(data.shape) + ", indices of shape " +
                                  shapeText(indices.shape) + ", updates of shape " +
                                  shapeText(updates.shape) + " and output of shape " +
                                  shapeText(out.shape) + " do not fit");
  std::vector<int64_t> offsets;
  if (KernelStatus s = tupleOffsets("scatter_nd", indices, data.shape.data(), 0, offsets); !s.ok())
    return s;
  int64_t slice = 1;
  for (int64_t d = k; d < r; ++d)
    slice *= data.shape[static_cast<size_t>(d)];
  const size_t elementBytes = dtypeSize(data.dtype);
  const size_t sliceBytes = static_cast<size_t>(slice) * elementBytes;
  if (out.data != data.data && data.numElements() != 0)
    std::memcpy(out.data, data.data, static_cast<size_t>(data.numElements()) * elementBytes);
  if (sliceBytes == 0)
    return {};
  auto *dst = static_cast<uint8_t *>(out.data);
  const auto *src = static_cast<const uint8_t *>(updates.data);
  if (replace) {
    for (size_t t = 0; t < offsets.size(); ++t)
      std::memcpy(dst + static_cast<size_t>(offsets[t]) * sliceBytes, src + t * sliceBytes,
                  sliceBytes);
    return {};
  }
  const bool typed = dispatch<kNumeric>(data.dtype, kNumeric, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T *y = static_cast<T *>(out.data);
    const T *u = static_cast<const T *>(updates.data);
    switch (reduction) {
    case Binary::Mul: return scatterCombine<Binary::Mul>(offsets, slice, u, y);
    case Binary::Max: return scatterCombine<Binary::Max>(offsets, slice, u, y);
    case Binary::Min: return scatterCombine<Binary::Min>(offsets, slice, u, y);
    default: return scatterCombine<Binary::Add>(offsets, slice, u, y);
    }
  });
  if (!typed)
    return fail("scatter_nd", std::string("reduction '") + name + "' needs a numeric dtype, not " +
                                  dtypeName(data.dtype));
  return {};
}

} // namespace

void addGatherKernels(KernelTable &table) {
  table["gather"] = &gatherKernel;
  table["gather_elements"] = &gatherElementsKernel;
  table["gather_nd"] = &gatherNDKernel;
  table["scatter_nd"] = &scatterNDKernel;
}

} // namespace tessel::cpu
