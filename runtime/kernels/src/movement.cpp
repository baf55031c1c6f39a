//===- movement.cpp - data movement and type conversion kernels -----------===//
//
// identity, copy, reshape, cast, transpose, concat, slice, pad, im2row,
// trilu, expand and tile, with ONNX semantics (dialects/TesselOps.td). Apart
// from cast (and pad's fill value), these kernels never look at element
// values: they move elements by their size, so every dtype works, f16 and
// bf16 included.
//
// Kernels validate shapes, dtypes and attributes and report a KernelStatus
// instead of touching memory they do not own. They allocate nothing (index
// state lives in fixed arrays of kMaxRank), which keeps the executor's promise
// that a run allocates nothing.
//
//===----------------------------------------------------------------------===//
#include "movement.h"
#include "tessel/half.h"
#include "tessel/cpu_kernels.h"
#include "tessel/window.h"
#include "registry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tessel::cpu {
namespace {

/// out[i...] = in[base + sum_d i_d * strides[d]] for the dense output `shape`
/// (element units). Serves transpose and slice.
template <typename T>
void affineCopy(const T *in, int64_t base, const Dims &strides,
                const std::vector<int64_t> &shape, T *out) {
  const size_t rank = shape.size();
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (total == 0)
    return;
  if (rank == 0) {
    out[0] = in[base];
    return;
  }
  const int64_t inner = shape[rank - 1], innerStride = strides[rank - 1];
  Dims index{};
  int64_t offset = base;
  for (int64_t o = 0; o < total; o += inner) {
    const T *src = in + offset;
    T *dst = out + o;
    if (innerStride == 1)
      std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(T));
    else
      for (int64_t i = 0; i < inner; ++i)
        dst[i] = src[i * innerStride];
    for (size_t d = rank - 1; d-- > 0;) {
      offset += strides[d];
      if (++index[d] < shape[d])
        break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

/// out[i...] = in[i_d % inShape[d] ...], where `inShape` has the output's rank.
/// Serves tile, and expand (whose broadcast dims have extent 1).
template <typename T>
void repeatCopy(const T *in, const Dims &inShape, const std::vector<int64_t> &shape, T *out) {
  const size_t rank = shape.size();
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (total == 0)
    return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  Dims inStrides{};
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    inStrides[d] = stride;
    stride *= inShape[d];
  }
  const int64_t inner = shape[rank - 1], innerIn = inShape[rank - 1];
  Dims index{}, inIndex{};
  int64_t offset = 0;
  for (int64_t o = 0; o < total; o += inner) {
    const T *row = in + offset;
    T *dst = out + o;
    if (innerIn == 1) {
      for (int64_t i = 0; i < inner; ++i)
        dst[i] = row[0];
    } else {
      for (int64_t i = 0; i < inner; i += innerIn)
        std::memcpy(dst + i, row, static_cast<size_t>(innerIn) * sizeof(T));
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < shape[d]) {
        if (++inIndex[d] == inShape[d]) {
          offset -= (inShape[d] - 1) * inStrides[d];
          inIndex[d] = 0;
        } else {
          offset += inStrides[d];
        }
        break;
      }
      offset -= inIndex[d] * inStrides[d];
      index[d] = inIndex[d] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// identity, copy, reshape
//===----------------------------------------------------------------------===//

template <bool SameShape> KernelStatus copyKernelImpl(const char *op, const Inputs &inputs,
                                                      const Outputs &outputs) {
  if (KernelStatus s = checkOperands(op, inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType(op, in, out); !s.ok())
    return s;
  if (SameShape ? in.shape != out.shape : in.numElements() != out.numElements())
    return fail(op, "input shape " + shapeText(in.shape) + " does not match output shape " +
                        shapeText(out.shape));
  // memmove: a planner may place a reshape's output on its input.
  if (in.data != out.data && out.sizeBytes() != 0)
    std::memmove(out.data, in.data, out.sizeBytes());
  return {};
}

KernelStatus identityKernel(const Attrs &, const Inputs &inputs, const Outputs &outputs) {
  return copyKernelImpl<true>("identity", inputs, outputs);
}
KernelStatus copyKernel(const Attrs &, const Inputs &inputs, const Outputs &outputs) {
  return copyKernelImpl<true>("copy", inputs, outputs);
}
KernelStatus reshapeKernel(const Attrs &, const Inputs &inputs, const Outputs &outputs) {
  return copyKernelImpl<false>("reshape", inputs, outputs);
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

// Element types the cast kernel distinguishes beyond their bits.
struct BF16 {
  uint16_t bits;
};
struct Bool8 { // any nonzero byte reads as true; writes 0 or 1
  uint8_t byte;
};

float bf16ToFloat(uint16_t bits) { return bitsFloat(static_cast<uint32_t>(bits) << 16); }

// Round to nearest even; NaN stays a quiet NaN with its sign.
uint16_t floatToBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// Why "round to odd": converting to f16/bf16 through float would round twice
// (to float, then to half) and can miss ties. Rounding the first step to odd
// (truncate, then set the last bit if anything was cut off) keeps the
// information the second, round-to-nearest-even step needs, provided the
// intermediate has 2+ more bits than the target: float has 24, f16 11, bf16 8.
float roundToOddFloat(double d) {
  if (std::isnan(d))
    return static_cast<float>(d);
  if (std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()))
    return d < 0 ? -std::numeric_limits<float>::max() : std::numeric_limits<float>::max();
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d)
    return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d))
    f = std::nextafter(f, 0.0f);
  return bitsFloat(floatBits(f) | 1u);
}

float roundToOddFloat(uint64_t magnitude) {
  if (magnitude < (uint64_t(1) << 24))
    return static_cast<float>(magnitude);
  int shift = 64 - __builtin_clzll(magnitude) - 24;
  uint64_t kept = magnitude >> shift;
  if (magnitude & ((uint64_t(1) << shift) - 1))
    kept |= 1;
  return std::ldexp(static_cast<float>(kept), shift);
}

template <typename T> constexpr bool kIsFloatLike =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
    std::is_same_v<T, BF16>;

// Exact for every floating source.
template <typename S> double toDouble(S v) {
  if constexpr (std::is_same_v<S, Half>)
    return halfToFloat(v.bits);
  else if constexpr (std::is_same_v<S, BF16>)
    return bf16ToFloat(v.bits);
  else
    return v;
}

// The source rounded to float with round-to-odd (exact when representable).
template <typename S> float toOddFloat(S v) {
  if constexpr (kIsFloatLike<S>)
    return std::is_same_v<S, double> ? roundToOddFloat(toDouble(v))
                                     : static_cast<float>(toDouble(v));
  else if constexpr (std::is_signed_v<S>)
    return v < 0 ? -roundToOddFloat(uint64_t(0) - static_cast<uint64_t>(v))
                 : roundToOddFloat(static_cast<uint64_t>(v));
  else
    return roundToOddFloat(static_cast<uint64_t>(v));
}

// Truncation toward zero, as numpy's astype. C++ leaves out-of-range
// conversions undefined, so they are defined here: within int64 (or uint64
// for u64) the truncated value wraps modulo 2^bits, as numpy does on x86;
// beyond that it saturates; NaN gives 0.
template <typename D> D floatToInt(double d) {
  if (std::isnan(d))
    return 0;
  double t = std::trunc(d);
  constexpr double kTwo63 = 9223372036854775808.0, kTwo64 = 18446744073709551616.0;
  if (t >= -kTwo63 && t < kTwo63)
    return static_cast<D>(static_cast<int64_t>(t));
  if (std::is_same_v<D, uint64_t> && t >= 0 && t < kTwo64)
    return static_cast<D>(static_cast<uint64_t>(t));
  return t < 0 ? std::numeric_limits<D>::lowest() : std::numeric_limits<D>::max();
}

template <typename D, typename S> D convert(S v) {
  if constexpr (std::is_same_v<S, Bool8>) {
    return convert<D>(static_cast<uint8_t>(v.byte != 0));
  } else if constexpr (std::is_same_v<D, Bool8>) {
    if constexpr (kIsFloatLike<S>)
      return Bool8{toDouble(v) != 0}; // NaN is true, as in numpy
    else
      return Bool8{v != 0};
  } else if constexpr (std::is_same_v<D, Half>) {
    return Half{floatToHalf(toOddFloat(v))};
  } else if constexpr (std::is_same_v<D, BF16>) {
    return BF16{floatToBf16(toOddFloat(v))};
  } else if constexpr (std::is_floating_point_v<D>) {
    // One correctly rounded conversion from the exact source value.
    if constexpr (kIsFloatLike<S>)
      return static_cast<D>(toDouble(v));
    else
      return static_cast<D>(v);
  } else if constexpr (kIsFloatLike<S>) {
    return floatToInt<D>(toDouble(v));
  } else {
    return static_cast<D>(v); // integers wrap modulo 2^bits
  }
}

template <typename T> struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the element type of `dtype`.
template <typename F> void withElementType(DType dtype, F &&f) {
  switch (dtype) {
  case DType::F32: f(Tag<float>{}); break;
  case DType::F16: f(Tag<Half>{}); break;
  case DType::F64: f(Tag<double>{}); break;
  case DType::BF16: f(Tag<BF16>{}); break;
  case DType::I8: f(Tag<int8_t>{}); break;
  case DType::I16: f(Tag<int16_t>{}); break;
  case DType::I32: f(Tag<int32_t>{}); break;
  case DType::I64: f(Tag<int64_t>{}); break;
  case DType::U8: f(Tag<uint8_t>{}); break;
  case DType::U16: f(Tag<uint16_t>{}); break;
  case DType::U32: f(Tag<uint32_t>{}); break;
  case DType::U64: f(Tag<uint64_t>{}); break;
  case DType::Bool: f(Tag<Bool8>{}); break;
  }
}

KernelStatus castKernel(const Attrs &, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("cast", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (!validDType(in.dtype) || !validDType(out.dtype))
    return fail("cast", "invalid dtype");
  if (in.shape != out.shape)
    return fail("cast", "input shape " + shapeText(in.shape) + " differs from output shape " +
                            shapeText(out.shape));
  const int64_t n = in.numElements();
  withElementType(in.dtype, [&](auto source) {
    using S = typename decltype(source)::type;
    withElementType(out.dtype, [&](auto destination) {
      using D = typename decltype(destination)::type;
      const S *src = static_cast<const S *>(in.data);
      D *dst = static_cast<D *>(out.data);
      for (int64_t i = 0; i < n; ++i)
        dst[i] = convert<D>(src[i]);
    });
  });
  return {};
}

//===----------------------------------------------------------------------===//
// transpose, slice
//===----------------------------------------------------------------------===//

KernelStatus transposeKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("transpose", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("transpose", in, out); !s.ok())
    return s;
  const std::vector<int64_t> &perm = attrs.getInts("perm");
  const size_t rank = in.shape.size();
  if (perm.size() != rank || out.shape.size() != rank)
    return fail("transpose", "perm has " + std::to_string(perm.size()) +
                                 " entries for input rank " + std::to_string(rank) +
                                 " and output rank " + std::to_string(out.shape.size()));
  std::array<bool, kMaxRank> seen{};
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return fail("transpose", "perm " + shapeText(perm) + " is not a permutation");
    seen[p] = true;
  }
  Dims inStrides = stridesOf(in.shape), strides{};
  for (size_t d = 0; d < rank; ++d) {
    int64_t p = perm[d];
    if (out.shape[d] != in.shape[p])
      return fail("transpose", "output shape " + shapeText(out.shape) + " is not input shape " +
                                   shapeText(in.shape) + " permuted by " + shapeText(perm));
    strides[d] = inStrides[p];
  }
  withElementBits(dtypeSize(in.dtype), [&](auto bits) {
    using T = decltype(bits);
    affineCopy(static_cast<const T *>(in.data), 0, strides, out.shape,
               static_cast<T *>(out.data));
  });
  return {};
}

KernelStatus sliceKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("slice", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("slice", in, out); !s.ok())
    return s;
  const std::vector<int64_t> &starts = attrs.getInts("starts");
  const std::vector<int64_t> &steps = attrs.getInts("steps");
  const size_t rank = in.shape.size();
  if (starts.size() != rank || steps.size() != rank || out.shape.size() != rank)
    return fail("slice", "starts/steps/output rank do not match input rank " +
                             std::to_string(rank));
  if (out.numElements() == 0)
    return {};
  Dims inStrides = stridesOf(in.shape), strides{};
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = out.shape[d], start = starts[d], step = steps[d];
    // Every index read, start + i * step for i < extent, lies in [0, in dim).
    int64_t last;
    bool inRange = step != 0 && start >= 0 && start < in.shape[d] &&
                   !__builtin_mul_overflow(extent - 1, step, &last) &&
                   !__builtin_add_overflow(start, last, &last) && last >= 0 &&
                   last < in.shape[d];
    if (!inRange)
      return fail("slice", "dim " + std::to_string(d) + ": start " + std::to_string(start) +
                               ", step " + std::to_string(step) + " and extent " +
                               std::to_string(extent) + " read outside the input extent " +
                               std::to_string(in.shape[d]));
    base += start * inStrides[d];
    // An extent-1 dim never advances; a zero stride keeps the index math
    // clear of any overflow from a huge step.
    strides[d] = extent == 1 ? 0 : step * inStrides[d];
  }
  withElementBits(dtypeSize(in.dtype), [&](auto bits) {
    using T = decltype(bits);
    affineCopy(static_cast<const T *>(in.data), base, strides, out.shape,
               static_cast<T *>(out.data));
  });
  return {};
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

KernelStatus concatKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (inputs.empty())
    return fail("concat", "no inputs");
  if (KernelStatus s = checkOperands("concat", inputs, outputs, inputs.size()); !s.ok())
    return s;
  TensorView &out = *outputs[0];
  const int64_t rank = static_cast<int64_t>(out.shape.size());
  int64_t axis = attrs.getInt("axis");
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return fail("concat", "axis " + std::to_string(attrs.getInt("axis")) +
                              " is out of range for rank " + std::to_string(rank));
  int64_t total = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorView &in = *inputs[k];
    if (KernelStatus s = checkSameDType("concat", in, out); !s.ok())
      return s;
    bool fits = static_cast<int64_t>(in.shape.size()) == rank;
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == axis || in.shape[d] == out.shape[d];
    if (!fits)
      return fail("concat", "input " + std::to_string(k) + " shape " + shapeText(in.shape) +
                                " does not fit output shape " + shapeText(out.shape) +
                                " along axis " + std::to_string(axis));
    total += in.shape[axis];
  }
  if (total != out.shape[axis])
    return fail("concat", "inputs sum to " + std::to_string(total) + " along axis " +
                              std::to_string(axis) + ", the output has " +
                              std::to_string(out.shape[axis]));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= out.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= out.shape[d];
  const size_t elementSize = dtypeSize(out.dtype);
  auto *dst = static_cast<uint8_t *>(out.data);
  for (int64_t o = 0; o < outer; ++o) {
    for (const TensorView *in : inputs) {
      size_t chunk = static_cast<size_t>(in->shape[axis] * inner) * elementSize;
      if (chunk == 0)
        continue;
      std::memcpy(dst, static_cast<const uint8_t *>(in->data) + o * chunk, chunk);
      dst += chunk;
    }
  }
  return {};
}

//===----------------------------------------------------------------------===//
// pad
//===----------------------------------------------------------------------===//

enum class PadMode { Constant, Reflect, Edge };

// The input index that output index `i` reads along one dim, or -1 for the
// fill value. `begin` may be negative (a crop).
int64_t padSource(int64_t i, int64_t begin, int64_t extent, PadMode mode) {
  int64_t j = i - begin;
  if (j >= 0 && j < extent)
    return j;
  switch (mode) {
  case PadMode::Constant:
    return -1;
  case PadMode::Edge:
    return j < 0 ? 0 : extent - 1;
  case PadMode::Reflect: {
    if (extent == 1)
      return 0;
    // Mirror without repeating the edge (numpy "reflect"), periodically for
    // pads wider than the input.
    int64_t period = 2 * (extent - 1);
    j %= period;
    if (j < 0)
      j += period;
    return j < extent ? j : period - j;
  }
  }
  return -1;
}

template <typename T>
void padCopy(const T *in, const std::vector<int64_t> &inShape, const int64_t *begins,
             PadMode mode, T fill, const std::vector<int64_t> &shape, T *out) {
  const size_t rank = shape.size();
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  if (total == 0)
    return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  Dims inStrides = stridesOf(inShape);
  const int64_t inner = shape[rank - 1];
  Dims index{};
  for (int64_t o = 0; o < total; o += inner) {
    T *dst = out + o;
    int64_t offset = 0;
    bool filled = false;
    for (size_t d = 0; d + 1 < rank && !filled; ++d) {
      int64_t source = padSource(index[d], begins[d], inShape[d], mode);
      filled = source < 0;
      offset += source * inStrides[d];
    }
    if (filled) {
      for (int64_t i = 0; i < inner; ++i)
        dst[i] = fill;
    } else {
      const T *row = in + offset;
      for (int64_t i = 0; i < inner; ++i) {
        int64_t source = padSource(i, begins[rank - 1], inShape[rank - 1], mode);
        dst[i] = source < 0 ? fill : row[source];
      }
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

KernelStatus padKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("pad", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("pad", in, out); !s.ok())
    return s;
  if (!validDType(in.dtype))
    return fail("pad", "invalid dtype");
  const std::string &modeName = attrs.getString("mode");
  PadMode mode;
  if (modeName.empty() || modeName == "constant")
    mode = PadMode::Constant;
  else if (modeName == "reflect")
    mode = PadMode::Reflect;
  else if (modeName == "edge")
    mode = PadMode::Edge;
  else
    return fail("pad", "unsupported mode '" + modeName + "' (constant, reflect or edge)");
  const std::vector<int64_t> &pads = attrs.getInts("pads");
  const size_t rank = in.shape.size();
  if (pads.size() != 2 * rank || out.shape.size() != rank)
    return fail("pad", "pads has " + std::to_string(pads.size()) + " entries for rank " +
                           std::to_string(rank) + " (begins then ends)");
  for (size_t d = 0; d < rank; ++d) {
    int64_t extent;
    if (__builtin_add_overflow(in.shape[d], pads[d], &extent) ||
        __builtin_add_overflow(extent, pads[rank + d], &extent) || extent != out.shape[d])
      return fail("pad", "input shape " + shapeText(in.shape) + " padded by " +
                             shapeText(pads) + " is not output shape " + shapeText(out.shape));
    if (mode != PadMode::Constant && in.shape[d] == 0 && out.shape[d] != 0)
      return fail("pad", "mode '" + modeName + "' cannot pad an empty dim");
  }
  if (out.numElements() == 0)
    return {};

  // The fill value as the element's bits, converted as cast would convert it.
  uint64_t fillBits = 0;
  withElementType(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T fill = convert<T>(attrs.getFloat("value"));
    std::memcpy(&fillBits, &fill, sizeof(T));
  });
  withElementBits(dtypeSize(out.dtype), [&](auto bits) {
    using T = decltype(bits);
    T fill;
    std::memcpy(&fill, &fillBits, sizeof(T));
    padCopy(static_cast<const T *>(in.data), in.shape, pads.data(), mode, fill, out.shape,
            static_cast<T *>(out.data));
  });
  return {};
}

//===----------------------------------------------------------------------===//
// im2row: an NHWC conv's windows along W unfolded into the channels
//===----------------------------------------------------------------------===//

KernelStatus im2rowKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("im2row", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("im2row", in, out); !s.ok())
    return s;
  if (!validDType(in.dtype))
    return fail("im2row", "invalid dtype");
  Im2RowWindow window;
  std::string error;
  if (!readIm2Row(attrs, in.shape, out.shape, window, error))
    return fail("im2row", error);
  const auto [kernel, stride, dilation, pad] = window;
  const int64_t rows = in.shape[0] * in.shape[1], width = in.shape[2], c = in.shape[3],
                outWidth = out.shape[2], depth = out.shape[3];
  withElementBits(dtypeSize(in.dtype), [&](auto bits) {
    using T = decltype(bits);
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < outWidth; ++o) {
        T *dst = y + (r * outWidth + o) * depth;
        std::memset(dst, 0, depth * sizeof(T));
        for (int64_t s = 0; s < kernel; ++s) {
          const int64_t column = o * stride + s * dilation - pad;
          if (column >= 0 && column < width)
            std::memcpy(dst + s * c, x + (r * width + column) * c, c * sizeof(T));
        }
      }
  });
  return {};
}


//===----------------------------------------------------------------------===//
// trilu
//===----------------------------------------------------------------------===//

KernelStatus triluKernel(const Attrs &attrs, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("trilu", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("trilu", in, out); !s.ok())
    return s;
  if (!validDType(in.dtype))
    return fail("trilu", "invalid dtype");
  const size_t rank = in.shape.size();
  if (rank < 2 || out.shape != in.shape)
    return fail("trilu", "input " + shapeText(in.shape) + " and output " + shapeText(out.shape) +
                             " must be one shape of rank 2 or more");
  const int64_t k = attrs.getInt("k"), rows = in.shape[rank - 2], cols = in.shape[rank - 1];
  const bool upper = attrs.getInt("upper", 1) != 0;
  const int64_t matrices = rows * cols ? in.numElements() / (rows * cols) : 0;
  withElementBits(dtypeSize(in.dtype), [&](auto bits) {
    using T = decltype(bits);
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    for (int64_t m = 0; m < matrices; ++m)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = upper ? j - i >= k : j - i <= k;
          const int64_t e = (m * rows + i) * cols + j;
          y[e] = keep ? x[e] : T{};
        }
  });
  return {};
}

//===----------------------------------------------------------------------===//
// expand, tile
//===----------------------------------------------------------------------===//

KernelStatus expandKernel(const Attrs &, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("expand", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("expand", in, out); !s.ok())
    return s;
  const size_t rank = out.shape.size();
  if (in.shape.size() > rank)
    return fail("expand", "input rank " + std::to_string(in.shape.size()) +
                              " exceeds output rank " + std::to_string(rank));
  // Align dims from the right; missing leading dims have extent 1.
  Dims inShape;
  inShape.fill(1);
  const size_t lead = rank - in.shape.size();
  for (size_t d = 0; d < in.shape.size(); ++d) {
    int64_t dim = in.shape[d];
    if (dim != out.shape[lead + d] && dim != 1)
      return fail("expand", "input shape " + shapeText(in.shape) +
                                " does not broadcast to output shape " + shapeText(out.shape));
    inShape[lead + d] = dim;
  }
  withElementBits(dtypeSize(in.dtype), [&](auto bits) {
    using T = decltype(bits);
    repeatCopy(static_cast<const T *>(in.data), inShape, out.shape,
               static_cast<T *>(out.data));
  });
  return {};
}

KernelStatus tileKernel(const Attrs &, const Inputs &inputs, const Outputs &outputs) {
  if (KernelStatus s = checkOperands("tile", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (KernelStatus s = checkSameDType("tile", in, out); !s.ok())
    return s;
  const size_t rank = in.shape.size();
  if (out.shape.size() != rank)
    return fail("tile", "input rank " + std::to_string(rank) + " differs from output rank " +
                            std::to_string(out.shape.size()));
  Dims inShape{};
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = in.shape[d];
    bool repeats = dim == 0 ? out.shape[d] == 0 : out.shape[d] % dim == 0;
    if (!repeats)
      return fail("tile", "output shape " + shapeText(out.shape) +
                              " is not a whole repetition of input shape " +
                              shapeText(in.shape));
    inShape[d] = dim;
  }
  withElementBits(dtypeSize(in.dtype), [&](auto bits) {
    using T = decltype(bits);
    repeatCopy(static_cast<const T *>(in.data), inShape, out.shape,
               static_cast<T *>(out.data));
  });
  return {};
}

} // namespace

void addMovementKernels(KernelTable &table) {
  table["identity"] = &identityKernel;
  table["copy"] = &copyKernel;
  table["reshape"] = &reshapeKernel;
  table["cast"] = &castKernel;
  table["transpose"] = &transposeKernel;
  table["concat"] = &concatKernel;
  table["slice"] = &sliceKernel;
  table["pad"] = &padKernel;
  table["im2row"] = &im2rowKernel;
  table["trilu"] = &triluKernel;
  table["expand"] = &expandKernel;
  table["tile"] = &tileKernel;
}

} // namespace tessel::cpu
