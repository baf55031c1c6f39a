//===- pool.cpp - max_pool and avg_pool, N-d, in NCHW and NHWC ------------===//
//
// Both pools visit the same windows (forEachPoolWindow): per output
// position, the in-bounds taps in row-major tap order, as offsets that serve
// every channel. The geometry, including the one index mapping that lets
// NCHW and NHWC share the window logic, is read by window.h's
// readPoolGeometry, which the CUDA planner reads pools with too.
//
// max_pool keeps the first greatest element's bits (NaN wins), and
// max_pool_indices gives its flat NCHW index (MaxPool's Indices); avg_pool
// accumulates in double for every dtype and rounds the mean once.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "registry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel::cpu {
namespace {

// The pool's geometry, its errors named after the op.
KernelStatus planPool(const char *op, const Attrs &attrs, const TensorView &x,
                      const TensorView &out, PoolGeometry &g) {
  std::string error;
  if (!readPoolGeometry(attrs, x.shape, out.shape, g, error))
    return fail(std::string(op) + ": " + error);
  return {};
}

// Advances k (row-major) within [lo, hi) per dim; false after the last.
bool nextInBox(SpatialDims &k, const SpatialDims &lo, const SpatialDims &hi) {
  for (size_t d = k.size(); d-- > 0;) {
    if (++k[d] < hi[d])
      return true;
    k[d] = lo[d];
  }
  return false;
}

// Calls f(inBase, outBase, offsets, count, padded) for every batch index and
// output position: channel c's window is the `count` input elements at
// inBase + c * inC + offsets[i] (the in-bounds taps, row-major tap order),
// `padded` the number of taps inside the padded input (count_include_pad),
// and its result goes to outBase + c * outC.
template <typename F> void forEachPoolWindow(const PoolGeometry &g, F &&f) {
  const size_t ns = g.inSpatial.size();
  const int64_t outSize = g.outSpatial.product();
  if (outSize == 0 || g.batch == 0)
    return;
  int64_t *offsets = scratch<int64_t>(kSlotIndex, static_cast<size_t>(g.kernel.product()));
  const SpatialDims inStride = g.inSpatial.strides();
  SpatialDims o, first, lo, hi, k;
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

// The window's greatest element, as the position in `offsets` of its first
// occurrence (a NaN wins: the first NaN); -1 for an empty window.
template <typename T>
int64_t maxTap(const T *xp, const int64_t *offsets, int64_t count) {
  using C = MathType<T>;
  int64_t tap = -1;
  C best{};
  for (int64_t i = 0; i < count; ++i) {
    const C v = loadElem(xp[offsets[i]]);
    bool take = tap < 0 || v > best;
    if constexpr (std::is_floating_point<C>::value)
      take = take || (std::isnan(v) && !std::isnan(best));
    if (take) {
      best = v;
      tap = i;
    }
  }
  return tap;
}

// Calls run(T{}) for the dtypes max_pool takes; false for the others.
template <typename F> bool forMaxPoolTypes(DType dtype, F &&run) {
  switch (dtype) {
  case DType::F32: run(float{}); return true;
  case DType::F64: run(double{}); return true;
  case DType::F16: run(Half{}); return true;
  case DType::I8: run(int8_t{}); return true;
  case DType::U8: run(uint8_t{}); return true;
  case DType::I32: run(int32_t{}); return true;
  case DType::I64: run(int64_t{}); return true;
  default: return false;
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
        const int64_t tap = maxTap(xp, offsets, count);
        ys[outBase + c * g.outC] =
            tap >= 0 ? xp[offsets[tap]]
                     : storeElem<T>(std::numeric_limits<C>::has_infinity
                                        ? -std::numeric_limits<C>::infinity()
                                        : std::numeric_limits<C>::lowest());
      }
    });
  };
  if (!forMaxPoolTypes(x.dtype, run))
    return unsupported("max_pool", x.dtype);
  return {};
}

// MaxPool's Indices: the flat NCHW index into x of each window's maximum
// (maxTap's choice, as max_pool's), its spatial part row-major, or
// column-major with storage_order 1; -1 for a window with no tap in the
// input.
KernelStatus maxPoolIndicesKernel(const Attrs &attrs,
                                  const std::vector<const TensorView *> &inputs,
                                  const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("max_pool_indices", inputs, outputs, 1); !s.ok())
    return s;
  const TensorView &x = *inputs[0];
  TensorView &out = *outputs[0];
  if (out.dtype != DType::I64)
    return fail("max_pool_indices: the result must be i64");
  PoolGeometry g;
  if (auto s = planPool("max_pool_indices", attrs, x, out, g); !s.ok())
    return s;
  static const std::string kStorageOrder = "storage_order";
  const bool columnMajor = attrs.getInt(kStorageOrder, 0) == 1;
  const int64_t spatial = g.inSpatial.product();
  const SpatialDims rowStrides = g.inSpatial.strides();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T *xs = static_cast<const T *>(x.data);
    int64_t *ys = static_cast<int64_t *>(out.data);
    forEachPoolWindow(g, [&](int64_t inBase, int64_t outBase, const int64_t *offsets,
                             int64_t count, int64_t) {
      const int64_t n = g.inBatch ? inBase / g.inBatch : 0;
      for (int64_t c = 0; c < g.channels; ++c) {
        const T *xp = xs + inBase + c * g.inC;
        const int64_t tap = maxTap(xp, offsets, count);
        int64_t index = -1;
        if (tap >= 0) {
          int64_t rest = offsets[tap] / g.inS, position = 0, columnStride = 1;
          if (!columnMajor) {
            position = rest;
          } else {
            for (size_t d = 0; d < g.inSpatial.size(); ++d) {
              position += rest / rowStrides[d] * columnStride;
              rest %= rowStrides[d];
              columnStride *= g.inSpatial[d];
            }
          }
          index = (n * g.channels + c) * spatial + position;
        }
        ys[outBase + c * g.outC] = index;
      }
    });
  };
  if (!forMaxPoolTypes(x.dtype, run))
    return unsupported("max_pool_indices", x.dtype);
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

void addPoolKernels(KernelTable &t) {
  t["max_pool"] = &maxPoolKernel;
  t["max_pool_indices"] = &maxPoolIndicesKernel;
  t["avg_pool"] = &avgPoolKernel;
}

} // namespace tessel::cpu
