//===- StepPlanner.cpp - Elementwise ops, data movement, dispatch ---------===//
//
// The planners of the elementwise ops, data movement and selections by
// index, and StepPlanner::plan, which dispatches on the op's declared kernel
// family (KernelFamily in the dialect's ODS).
//
//===----------------------------------------------------------------------===//
#include "StepPlanner.h"

#include "tessel/resize.h"
#include "tessel/window.h"

#include "TesselTraits.h"

#include <cstring>
#include <limits>

namespace tessel::codegen::library {

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Launches StepPlanner::copy() {
  if (in.size() != 1)
    return std::nullopt;
  return copy(in[0], out[0]);
}

Launches StepPlanner::copy(const Operand &from, const Operand &to) const {
  if (from.dtype != to.dtype || from.count() != to.count())
    return std::nullopt;
  const uint64_t bytes = static_cast<uint64_t>(to.count()) * to.elementBytes();
  // A thread per 16 bytes, and at least one per byte of the tail.
  const int64_t threads = std::max<int64_t>(static_cast<int64_t>(bytes / 16), 16);
  return single("tsl_copy", gridFor(threads, kBlock), kBlock,
                {from.address(), to.address(), KernelArg::value(kernels::CopyParams{bytes})});
}

Launches StepPlanner::cast() {
  if (in.size() != 1 || in[0].shape != out[0].shape)
    return std::nullopt;
  const char *from = suffix(in[0].dtype), *to = suffix(out[0].dtype);
  if (!from || !to)
    return std::nullopt;
  kernels::UnaryParams p{};
  p.n = out[0].count();
  return single(std::string("tsl_cast_") + from + "_" + to, gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::unary() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].count() != out[0].count())
    return std::nullopt;
  // The CPU kernel's parameters and defaults (elementwise.cpp: unaryKernel).
  kernels::UnaryParams p{};
  p.n = out[0].count();
  llvm::StringRef op = step.name;
  if (op == "leaky_relu") {
    p.alpha = attrs.getFloat("alpha", 0.01);
  } else if (op == "elu" || op == "celu" || op == "thresholded_relu") {
    p.alpha = attrs.getFloat("alpha", 1.0);
  } else if (op == "selu") {
    p.alpha = attrs.getFloat("alpha", 1.67326319217681884765625);
    p.gamma = attrs.getFloat("gamma", 1.05070102214813232421875);
  } else if (op == "hard_sigmoid") {
    p.alpha = attrs.getFloat("alpha", 0.2);
    p.beta = attrs.getFloat("beta", 0.5);
  } else if (op == "shrink") {
    p.alpha = attrs.getFloat("bias", 0.0);
    p.beta = attrs.getFloat("lambd", 0.5);
  }
  return single(typed(op, in[0].dtype), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::clip() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].count() != out[0].count())
    return std::nullopt;
  const double lo = attrs.getFloat("min", -std::numeric_limits<double>::infinity());
  const double hi = attrs.getFloat("max", std::numeric_limits<double>::infinity());
  kernels::ClipParams p{};
  p.n = out[0].count();
  // The bounds in the tensor's dtype, converted as the CPU kernel converts
  // them (integers saturate, f16 rounds).
  cpu::Bound low, high;
  if (!cpu::convertBound(in[0].dtype, lo, low) || !cpu::convertBound(in[0].dtype, hi, high))
    return std::nullopt;
  p.lo = low.real;
  p.hi = high.real;
  p.ilo = low.integer;
  p.ihi = high.integer;
  return single(typed("clip", in[0].dtype), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

namespace {
/// Numpy broadcasting of `operands` to `result`, coalesced; nullopt when an
/// operand does not broadcast or the result keeps more than kMaxRank dims.
std::optional<kernels::BroadcastParams> broadcastParams(const Dims &result,
                                                        const std::vector<const Dims *> &operands) {
  const size_t rank = result.size();
  std::vector<Dims> strides(operands.size(), Dims(rank, 0));
  for (size_t k = 0; k < operands.size(); ++k) {
    const Dims &shape = *operands[k];
    if (shape.size() > rank)
      return std::nullopt;
    int64_t stride = 1;
    for (size_t j = 0; j < shape.size(); ++j) {
      const size_t i = shape.size() - 1 - j, d = rank - 1 - j;
      if (shape[i] == result[d])
        strides[k][d] = shape[i] == 1 ? 0 : stride;
      else if (shape[i] != 1)
        return std::nullopt;
      stride *= shape[i];
    }
  }
  Dims shape = result;
  coalesce(shape, strides);
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  kernels::BroadcastParams p{};
  p.n = product(result);
  p.rank = static_cast<int32_t>(shape.size());
  copyDims(shape, p.shape);
  for (size_t k = 0; k < strides.size(); ++k)
    copyDims(strides[k], p.stride[k]);
  return p;
}
} // namespace

Launches StepPlanner::broadcastOp() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &a = in[0], &b = in[1], &y = out[0];
  llvm::StringRef op = step.name;
  // Bool results: comparisons, and the logical ops on bools.
  const bool logical = op == "and" || op == "or" || op == "xor";
  std::string kernel;
  if (logical || isComparison(step.op)) {
    if (y.dtype != DType::Bool || a.dtype != b.dtype)
      return std::nullopt;
    kernel = typed(op, a.dtype);
  } else if (a.dtype == b.dtype) {
    if (y.dtype != a.dtype)
      return std::nullopt;
    // ONNX Mod's two signs are two entries (the CPU kernel's default: fmod=0,
    // which the library defines for integers only).
    if (op == "mod" && attrs.getInt("fmod", 0))
      op = "fmod";
    kernel = typed(op, a.dtype);
  } else {
    // Only pow takes mixed operand dtypes (the result has the base's).
    const char *exponent = suffix(b.dtype);
    if (op != "pow" || y.dtype != a.dtype || !exponent)
      return std::nullopt;
    kernel = typed(op, a.dtype) + "_" + exponent;
  }
  std::optional<kernels::BroadcastParams> p = broadcastParams(y.shape, {&a.shape, &b.shape});
  if (!p || kernel.empty())
    return std::nullopt;
  // By 16-byte words where both operands run contiguously along the
  // innermost merged dim, whole words of it (the _vec entry points).
  const int64_t lanes = 16 / static_cast<int64_t>(y.elementBytes());
  const int last = p->rank - 1;
  bool words = a.dtype == b.dtype && lanes > 1 && last >= 0 && p->shape[last] % lanes == 0 &&
               KernelLibrary::familyOf(kernel + "_vec") >= 0;
  for (int k = 0; words && k < 2; ++k) {
    words = p->stride[k][last] == 1;
    for (int d = 0; words && d < last; ++d)
      words = p->stride[k][d] % lanes == 0;
  }
  if (words) {
    kernels::BroadcastParams v = *p;
    v.n = p->n / lanes;
    v.shape[last] /= lanes;
    for (int k = 0; k < 2; ++k)
      for (int d = 0; d < last; ++d)
        v.stride[k][d] /= lanes;
    return single(kernel + "_vec", gridFor(v.n, kBlock), kBlock,
                  {a.address(), b.address(), y.address(), KernelArg::value(v)});
  }
  return single(kernel, gridFor(p->n, kBlock), kBlock,
                {a.address(), b.address(), y.address(), KernelArg::value(*p)});
}

Launches StepPlanner::where() {
  if (in.size() != 3)
    return std::nullopt;
  const Operand &c = in[0], &a = in[1], &b = in[2], &y = out[0];
  if (c.dtype != DType::Bool || a.dtype != b.dtype || a.dtype != y.dtype)
    return std::nullopt;
  std::optional<kernels::BroadcastParams> p =
      broadcastParams(y.shape, {&c.shape, &a.shape, &b.shape});
  if (!p)
    return std::nullopt;
  return single("tsl_where_w" + std::to_string(y.elementBytes()), gridFor(p->n, kBlock), kBlock,
                {c.address(), a.address(), b.address(), y.address(), KernelArg::value(*p)});
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// out[i...] = in[base + sum_d i_d * strides[d]] over the dense `shape`.
/// Where the innermost dim is contiguous in the input too (a transpose or a
/// slice that keeps rows whole: the heads of a transformer, NHWC channels),
/// each thread moves a word of up to 16 bytes of it: the innermost run, the
/// base and every stride whole words.
Launches StepPlanner::affine(int64_t base, Dims shape, Dims strides, int64_t count) {
  std::vector<Dims> strideSets{std::move(strides)};
  coalesce(shape, strideSets);
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  Dims &stride = strideSets[0];
  int64_t word = static_cast<int64_t>(out[0].elementBytes());
  if (!shape.empty() && stride.back() == 1) {
    const int64_t element = word;
    for (int64_t w : {16, 8, 4}) {
      if (w <= element)
        break;
      const int64_t per = w / element;
      bool whole = shape.back() % per == 0 && base % per == 0;
      for (size_t d = 0; d + 1 < stride.size(); ++d)
        whole = whole && stride[d] % per == 0;
      if (!whole)
        continue;
      shape.back() /= per;
      for (size_t d = 0; d + 1 < stride.size(); ++d)
        stride[d] /= per;
      base /= per;
      count /= per;
      word = w;
      break;
    }
  }
  kernels::AffineParams p{};
  p.n = count;
  p.base = base;
  p.rank = static_cast<int32_t>(shape.size());
  copyDims(shape, p.shape);
  copyDims(stride, p.stride);
  return single("tsl_affine_w" + std::to_string(word), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::transpose() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const std::vector<int64_t> &perm = attrs.getInts("perm");
  const size_t rank = in[0].shape.size();
  if (perm.size() != rank || out[0].shape.size() != rank)
    return std::nullopt;
  const Dims inStrides = rowMajorStrides(in[0].shape);
  Dims strides(rank);
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= static_cast<int64_t>(rank) || seen[perm[d]] ||
        out[0].shape[d] != in[0].shape[perm[d]])
      return std::nullopt;
    seen[perm[d]] = true;
    strides[d] = inStrides[perm[d]];
  }
  return affine(0, out[0].shape, strides, out[0].count());
}

Launches StepPlanner::slice() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const std::vector<int64_t> &starts = attrs.getInts("starts");
  const std::vector<int64_t> &steps = attrs.getInts("steps");
  const size_t rank = in[0].shape.size();
  if (starts.size() != rank || steps.size() != rank || out[0].shape.size() != rank)
    return std::nullopt;
  const Dims inStrides = rowMajorStrides(in[0].shape);
  Dims strides(rank);
  int64_t base = 0;
  if (out[0].count() != 0) {
    // As the CPU kernel: every index read lies inside the input.
    for (size_t d = 0; d < rank; ++d) {
      const int64_t extent = out[0].shape[d], start = starts[d], step = steps[d];
      int64_t last;
      bool inRange = step != 0 && start >= 0 && start < in[0].shape[d] &&
                     !__builtin_mul_overflow(extent - 1, step, &last) &&
                     !__builtin_add_overflow(start, last, &last) && last >= 0 &&
                     last < in[0].shape[d];
      if (!inRange)
        return std::nullopt;
      base += start * inStrides[d];
      strides[d] = extent == 1 ? 0 : step * inStrides[d];
    }
  }
  return affine(base, out[0].shape, strides, out[0].count());
}

Launches StepPlanner::expand() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &shape = out[0].shape, &inShape = in[0].shape;
  if (inShape.size() > shape.size())
    return std::nullopt;
  const size_t lead = shape.size() - inShape.size();
  const Dims inStrides = rowMajorStrides(inShape);
  Dims strides(shape.size(), 0);
  for (size_t d = 0; d < inShape.size(); ++d) {
    if (inShape[d] != shape[lead + d] && inShape[d] != 1)
      return std::nullopt;
    strides[lead + d] = inShape[d] == 1 ? 0 : inStrides[d];
  }
  return affine(0, shape, strides, out[0].count());
}

Launches StepPlanner::tile() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &shape = out[0].shape, &inShape = in[0].shape;
  if (inShape.size() != shape.size())
    return std::nullopt;
  const Dims inStrides = rowMajorStrides(inShape);
  Dims keptShape, keptIn, keptStrides;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool repeats = inShape[d] == 0 ? shape[d] == 0 : shape[d] % inShape[d] == 0;
    if (!repeats)
      return std::nullopt;
    if (shape[d] == 1)
      continue;
    keptShape.push_back(shape[d]);
    keptIn.push_back(inShape[d]);
    keptStrides.push_back(inStrides[d]);
  }
  kernels::TileParams p{};
  p.n = out[0].count();
  if (p.n != 0) {
    if (keptShape.size() > static_cast<size_t>(kMaxRank))
      return std::nullopt;
    p.rank = static_cast<int32_t>(keptShape.size());
    copyDims(keptShape, p.shape);
    copyDims(keptIn, p.inShape);
    copyDims(keptStrides, p.inStride);
  }
  return single("tsl_tile_w" + std::to_string(out[0].elementBytes()), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::pad() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const std::string &modeName = attrs.getString("mode");
  int mode;
  if (modeName.empty() || modeName == "constant")
    mode = 0;
  else if (modeName == "reflect")
    mode = 1;
  else if (modeName == "edge")
    mode = 2;
  else
    return std::nullopt;
  const std::vector<int64_t> &pads = attrs.getInts("pads");
  const Dims &inShape = in[0].shape, &shape = out[0].shape;
  const size_t rank = inShape.size();
  if (pads.size() != 2 * rank || shape.size() != rank || rank > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  for (size_t d = 0; d < rank; ++d) {
    if (inShape[d] + pads[d] + pads[rank + d] != shape[d])
      return std::nullopt;
    if (mode != 0 && inShape[d] == 0 && shape[d] != 0)
      return std::nullopt;
  }
  // The fill value's bits, converted by the CPU tier's own cast (f64 -> the
  // dtype), as its pad kernel converts it.
  const size_t width = out[0].elementBytes();
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  double value = attrs.getFloat("value");
  uint64_t fill = 0;
  cpu::TensorView from{DType::F64, {}, &value}, to{out[0].dtype, {}, &fill};
  if (!cpu::findKernel("cast")(cpu::Attrs{}, {&from}, {&to}).ok())
    return std::nullopt;
  // A scalar is a row of one element: the kernel runs along a last dim.
  const Dims rowShape = rank ? shape : Dims{1}, rowInShape = rank ? inShape : Dims{1};
  Dims begin(pads.begin(), pads.begin() + rank);
  if (!rank)
    begin = {0};
  kernels::PadParams p{};
  p.n = out[0].count();
  p.rank = static_cast<int32_t>(rowShape.size());
  p.mode = mode;
  p.fill = fill;
  copyDims(rowShape, p.shape);
  copyDims(rowInShape, p.inShape);
  copyDims(rowMajorStrides(rowInShape), p.inStride);
  copyDims(begin, p.begin);
  // A thread per run of 16 bytes along the last dim (Movement.cuh).
  const int64_t row = rowShape.back(), run = 16 / static_cast<int64_t>(width);
  const int64_t threads = row ? p.n / row * ((row + run - 1) / run) : 0;
  return single("tsl_pad_w" + std::to_string(width), gridFor(threads, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::im2row() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &x = in[0].shape, &y = out[0].shape;
  // The CPU kernel's reading and checks (tessel/window.h).
  cpu::Im2RowWindow w;
  std::string error;
  if (!cpu::readIm2Row(attrs, x, y, w, error) || x[3] < 1)
    return std::nullopt;
  const size_t width = out[0].elementBytes();
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  kernels::Im2RowParams p{x[0] * x[1], x[2], x[3], y[2], y[3], w.kernel, w.stride, w.dilation, w.pad};
  const int64_t run = 16 / static_cast<int64_t>(width);
  // A block per input row where the row, its padding before (16-byte
  // aligned) and the columns read past it fit the shared row
  // (Movement.cuh, im2rowRows: dilation 1, taps contiguous).
  // (Each extent bounded first: readIm2Row has checked only that the
  // columns read do not overflow.)
  const int64_t limit = kernels::kIm2RowRowBytes;
  const int64_t columns = p.outWidth > 0 && p.stride <= limit && p.outWidth <= limit
                              ? (p.outWidth - 1) * p.stride + p.kernel - p.pad
                              : limit + 1;
  if (w.dilation == 1 && p.pad <= limit && p.width <= limit && p.channels <= limit &&
      p.depth <= limit && p.kernel <= limit && columns <= limit) {
    const int64_t lead = p.pad * p.channels, at = (lead + run - 1) / run * run;
    const int64_t staged = at + std::max(p.width, columns) * p.channels;
    if (staged * static_cast<int64_t>(width) <= kernels::kIm2RowRowBytes)
      return single("tsl_im2row_rows_w" + std::to_string(width),
                    static_cast<uint32_t>(std::clamp<int64_t>(p.rows, 1, kMaxGrid)), kIm2RowBlock,
                    {in[0].address(), out[0].address(), KernelArg::value(p)});
  }
  // Else a thread per run of 16 bytes of a position's channels.
  const int64_t threads = p.rows * p.outWidth * ((p.depth + run - 1) / run);
  return single("tsl_im2row_w" + std::to_string(width), gridFor(threads, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::concat() {
  if (in.empty())
    return std::nullopt;
  const Operand &y = out[0];
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  int64_t total = 0;
  for (const Operand &x : in) {
    if (x.dtype != y.dtype || static_cast<int64_t>(x.shape.size()) != rank)
      return std::nullopt;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && x.shape[d] != y.shape[d])
        return std::nullopt;
    total += x.shape[axis];
  }
  if (total != y.shape[axis])
    return std::nullopt;
  // Each operand is `outer` rows of its axis extent times `inner` elements,
  // placed at its running offset within the result's rows.
  const int64_t outer = product(y.shape, 0, axis), inner = product(y.shape, axis + 1);
  const int64_t es = static_cast<int64_t>(y.elementBytes());
  const int64_t dstRowBytes = y.shape[axis] * inner * es;
  std::vector<Launch> launches;
  int64_t offsetBytes = 0;
  for (const Operand &x : in) {
    const int64_t chunkBytes = x.shape[axis] * inner * es;
    if (chunkBytes != 0 && outer != 0) {
      const int w = wordBytes({chunkBytes, dstRowBytes, offsetBytes});
      kernels::ConcatParams p{outer, chunkBytes / w, dstRowBytes / w, offsetBytes / w};
      std::string kernel = "tsl_concat_w" + std::to_string(w);
      if (KernelLibrary::familyOf(kernel) < 0)
        return std::nullopt;
      launches.push_back(makeLaunch(kernel, gridFor(p.rows * p.chunk, kBlock), kBlock,
                                    {x.address(), y.address(), KernelArg::value(p)}));
    }
    offsetBytes += chunkBytes;
  }
  if (launches.empty()) // nothing to move: one launch that does nothing
    return single("tsl_concat_w1", 1, kBlock,
                  {in[0].address(), y.address(), KernelArg::value(kernels::ConcatParams{})});
  return launches;
}

Launches StepPlanner::gather() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &data = in[0], &indices = in[1], &y = out[0];
  if (data.dtype != y.dtype || (indices.dtype != DType::I32 && indices.dtype != DType::I64))
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  Dims expected(data.shape.begin(), data.shape.begin() + axis);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (expected != y.shape)
    return std::nullopt;
  const int64_t innerBytes =
      product(data.shape, axis + 1) * static_cast<int64_t>(data.elementBytes());
  const int w = wordBytes({innerBytes});
  kernels::GatherParams p{product(data.shape, 0, axis), data.shape[axis], indices.count(),
                          innerBytes / w};
  return single("tsl_gather_w" + std::to_string(w) + "_" + suffix(indices.dtype),
                gridFor(p.outer * p.count * p.inner, kBlock), kBlock,
                {data.address(), indices.address(), y.address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Selections by index or position
//===----------------------------------------------------------------------===//

Launches StepPlanner::gatherElements() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &data = in[0], &indices = in[1], &y = out[0];
  if (data.dtype != y.dtype || (indices.dtype != DType::I32 && indices.dtype != DType::I64))
    return std::nullopt;
  // The CPU kernel's checks: one rank, the result of the indices' shape,
  // which extends no dim but the axis past the data's.
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank || rank > kMaxRank ||
      indices.shape.size() != data.shape.size() || y.shape != indices.shape)
    return std::nullopt;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.shape[d] > data.shape[d])
      return std::nullopt;
  const int width = static_cast<int>(data.elementBytes());
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  Dims strides = rowMajorStrides(data.shape);
  kernels::GatherElementsParams p{};
  p.n = y.count();
  p.extent = data.shape[axis];
  p.axisStride = strides[axis];
  strides[axis] = 0;
  p.rank = static_cast<int32_t>(rank);
  copyDims(indices.shape, p.shape);
  copyDims(strides, p.stride);
  return single("tsl_gather_elements_w" + std::to_string(width) + "_" + suffix(indices.dtype),
                gridFor(p.n, kBlock), kBlock,
                {data.address(), indices.address(), y.address(), KernelArg::value(p)});
}

namespace {
/// What gather_nd's and scatter_nd's kernels read of the dims an index
/// tuple addresses, shape[first .. first + k): each one's extent and its
/// step in slices of the dims after them. Returns the slices they span.
int64_t tupleDims(const Dims &shape, int64_t first, int64_t k, int64_t (&extent)[kMaxRank],
                  int64_t (&stride)[kMaxRank]) {
  int64_t slices = 1;
  for (int64_t j = k; j-- > 0;) {
    extent[j] = shape[first + j];
    stride[j] = slices;
    slices *= shape[first + j];
  }
  return slices;
}
} // namespace

Launches StepPlanner::gatherND() {
  if (in.size() != 2)
    return std::nullopt;
  const Operand &data = in[0], &indices = in[1], &y = out[0];
  if (data.dtype != y.dtype || indices.dtype != DType::I64)
    return std::nullopt;
  // The CPU kernel's checks (gather.cpp, gatherNDKernel).
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t q = static_cast<int64_t>(indices.shape.size());
  const int64_t b = attrs.getInt("batch_dims");
  const int64_t k = q ? indices.shape.back() : 0;
  if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q) || k < 1 || k > r - b || k > kMaxRank)
    return std::nullopt;
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[d] != indices.shape[d])
      return std::nullopt;
  Dims expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + b + k, data.shape.end());
  if (y.shape != expected)
    return std::nullopt;
  kernels::GatherNDParams p{};
  p.k = static_cast<int32_t>(k);
  p.tuplesPerBatch = product(indices.shape, b, q - 1);
  p.batchSlices = tupleDims(data.shape, b, k, p.extent, p.stride);
  const int64_t sliceBytes =
      product(data.shape, b + k) * static_cast<int64_t>(data.elementBytes());
  const int w = wordBytes({sliceBytes});
  p.sliceWords = sliceBytes / w;
  p.n = product(indices.shape, 0, q - 1) * p.sliceWords;
  return single("tsl_gather_nd_w" + std::to_string(w) + "_i64", gridFor(p.n, kBlock), kBlock,
                {data.address(), indices.address(), y.address(), KernelArg::value(p)});
}

Launches StepPlanner::scatterND() {
  if (in.size() != 3)
    return std::nullopt;
  const Operand &data = in[0], &indices = in[1], &updates = in[2], &y = out[0];
  if (data.dtype != y.dtype || updates.dtype != y.dtype || indices.dtype != DType::I64 ||
      data.shape != y.shape)
    return std::nullopt;
  // The CPU kernel's checks (gather.cpp, scatterNDKernel).
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t q = static_cast<int64_t>(indices.shape.size());
  const int64_t k = q ? indices.shape.back() : 0;
  if (r < 1 || q < 1 || k < 1 || k > r || k > kMaxRank)
    return std::nullopt;
  Dims expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != expected)
    return std::nullopt;
  const std::string &reduction = attrs.getString("reduction");
  const bool replace = reduction.empty() || reduction == "none";
  kernels::ScatterNDParams p{};
  p.k = static_cast<int32_t>(k);
  p.tuples = product(indices.shape, 0, q - 1);
  tupleDims(data.shape, 0, k, p.extent, p.stride);
  const int64_t slice = product(data.shape, k);
  std::string kernel;
  if (replace) {
    const int w = wordBytes({slice * static_cast<int64_t>(data.elementBytes())});
    p.sliceWords = slice * static_cast<int64_t>(data.elementBytes()) / w;
    p.n = p.tuples * p.sliceWords;
    kernel = "tsl_scatter_nd_w" + std::to_string(w) + "_i64";
  } else {
    p.sliceWords = slice;
    p.n = slice;
    kernel = typed("scatter_nd_" + reduction, data.dtype);
  }
  // The result starts as a copy of the data.
  Launches first = copy(data, y);
  Launches scatter = single(kernel, gridFor(p.n, kBlock), kBlock,
                            {indices.address(), updates.address(), y.address(),
                             KernelArg::value(p)});
  if (!first || !scatter)
    return std::nullopt;
  first->push_back(scatter->front());
  return first;
}

Launches StepPlanner::trilu() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].shape != out[0].shape ||
      in[0].shape.size() < 2)
    return std::nullopt;
  const int width = static_cast<int>(in[0].elementBytes());
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return std::nullopt;
  const Dims &shape = in[0].shape;
  kernels::TriluParams p{};
  p.n = in[0].count();
  p.rows = shape[shape.size() - 2];
  p.cols = shape.back();
  p.k = attrs.getInt("k");
  p.upper = attrs.getInt("upper", 1) != 0;
  return single("tsl_trilu_w" + std::to_string(width), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::resize() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype ||
      (in[0].dtype != DType::F32 && in[0].dtype != DType::F16))
    return std::nullopt;
  resize::Params p;
  if (!resize::readParams(attrs, in[0].shape, out[0].shape, p).empty())
    return std::nullopt;
  // The kernel keeps a thread's taps in registers: at most 8 per axis
  // (linear and cubic at any upscale; antialiased, down to 1/2 for cubic and
  // 1/4 for linear) on at most 4 axes with more than one. Known by
  // evaluating the taps, as the kernel will.
  int activeAxes = 0;
  for (int a = 0; a < p.rank; ++a) {
    bool active = false;
    for (int64_t x = 0; x < p.outShape[a]; ++x) {
      int64_t index[resize::kMaxTaps];
      double weight[resize::kMaxTaps];
      bool outside = false;
      int n = resize::taps(p, a, x, index, weight, outside);
      if (n > 8)
        return std::nullopt;
      active |= std::count_if(weight, weight + n, [](double w) { return w != 0; }) > 1;
    }
    activeAxes += active;
  }
  if (activeAxes > 4)
    return std::nullopt;
  const int64_t n = out[0].count();
  return single(typed("resize", in[0].dtype), gridFor(n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::plan() {
  // The writer's output copies are steps of no op.
  KernelFamily family = step.op ? kernelFamily(step.op->getName()) : KernelFamily::Copy;
  switch (family) {
  case KernelFamily::Copy: return copy();
  case KernelFamily::Cast: return cast();
  case KernelFamily::Unary: return unary();
  case KernelFamily::Clip: return clip();
  case KernelFamily::Binary: return broadcastOp();
  case KernelFamily::Where: return where();
  case KernelFamily::Transpose: return transpose();
  case KernelFamily::Slice: return slice();
  case KernelFamily::Expand: return expand();
  case KernelFamily::Tile: return tile();
  case KernelFamily::Pad: return pad();
  case KernelFamily::Im2Row: return im2row();
  case KernelFamily::Concat: return concat();
  case KernelFamily::Gather: return gather();
  case KernelFamily::Reduce: return reduce();
  case KernelFamily::Softmax: return softmax();
  case KernelFamily::ArgReduce: return argReduce();
  case KernelFamily::Pool: return pool();
  case KernelFamily::LayerNorm: return layerNorm();
  case KernelFamily::InstanceNorm: return instanceNorm();
  case KernelFamily::BatchNorm: return batchNorm();
  case KernelFamily::Lrn: return lrn();
  case KernelFamily::Scan: return scan();
  case KernelFamily::GatherElements: return gatherElements();
  case KernelFamily::GatherND: return gatherND();
  case KernelFamily::ScatterND: return scatterND();
  case KernelFamily::Trilu: return trilu();
  case KernelFamily::Attention: return attention();
  case KernelFamily::Resize: return resize();
  case KernelFamily::TopK: return topK();
  case KernelFamily::Nms: return nms();
  case KernelFamily::PoolFc: return poolFc();
  case KernelFamily::Gemm: // the implicit-GEMM codegen's (ImplicitGemm.h)
  case KernelFamily::ElementwiseGroup: // generated per group (codegen/custom)
  case KernelFamily::None: return std::nullopt;
  }
  return std::nullopt;
}


} // namespace tessel::codegen::library
