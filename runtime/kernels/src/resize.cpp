//===- resize.cpp - ONNX Resize on the CPU ---------------------------------===//
//
// tessel/resize.h's taps per axis, tabulated once per call, then per output
// element the sum over the product of its axes' taps (axes with one tap of
// weight 1, the unresized ones, cost nothing).
//
//===----------------------------------------------------------------------===//
#include "dispatch.h"
#include "registry.h"
#include "tessel/half.h"
#include "tessel/resize.h"

#include <cmath>
#include <string>
#include <vector>

namespace tessel::resize {

std::string readParams(const cpu::Attrs &attrs, const std::vector<int64_t> &in,
                       const std::vector<int64_t> &out, Params &p) {
  p = Params{};
  const size_t rank = in.size();
  if (rank == 0 || rank > static_cast<size_t>(kMaxRank) || out.size() != rank)
    return "input and result must have one rank, 1 to " + std::to_string(kMaxRank);
  p.rank = static_cast<int32_t>(rank);
  const std::string &mode = attrs.getString("mode");
  if (mode == "nearest" || mode.empty())
    p.mode = Nearest;
  else if (mode == "linear")
    p.mode = Linear;
  else if (mode == "cubic")
    p.mode = Cubic;
  else
    return "unknown mode '" + mode + "'";
  static const char *const coordinates[] = {"half_pixel",  "half_pixel_symmetric",
                                            "pytorch_half_pixel", "align_corners",
                                            "asymmetric",  "tf_half_pixel_for_nn",
                                            "tf_crop_and_resize"};
  const std::string &coordinate = attrs.getString("coordinate_transformation_mode");
  p.coordinate = -1;
  for (int i = 0; i < 7; ++i)
    if (coordinate == coordinates[i] || (coordinate.empty() && i == 0))
      p.coordinate = i;
  if (p.coordinate < 0)
    return "unknown coordinate_transformation_mode '" + coordinate + "'";
  static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
  const std::string &nearest = attrs.getString("nearest_mode");
  p.nearest = -1;
  for (int i = 0; i < 4; ++i)
    if (nearest == nearests[i] || (nearest.empty() && i == 0))
      p.nearest = i;
  if (p.nearest < 0)
    return "unknown nearest_mode '" + nearest + "'";
  p.cubicA = attrs.getFloat("cubic_coeff_a", -0.75);
  p.extrapolation = attrs.getFloat("extrapolation_value", 0.0);
  p.excludeOutside = attrs.getInt("exclude_outside", 0) != 0;
  p.antialias = attrs.getInt("antialias", 0) != 0;
  const std::vector<double> &scales = attrs.getFloats("scales");
  const std::vector<double> &roi = attrs.getFloats("roi");
  if (scales.size() != rank)
    return "scales must have one value per axis";
  if (!roi.empty() && roi.size() != 2 * rank)
    return "roi must have two values per axis";
  for (size_t a = 0; a < rank; ++a) {
    if (in[a] <= 0 || out[a] <= 0)
      return "empty input or result";
    if (!(scales[a] > 0) || !std::isfinite(scales[a]))
      return "scales must be positive";
    if (p.antialias && p.mode != Nearest && scales[a] < kMinAntialiasScale)
      return "antialiased scales below 1/16 are not supported";
    p.inShape[a] = in[a];
    p.outShape[a] = out[a];
    p.scale[a] = scales[a];
    p.roiStart[a] = roi.empty() ? 0.0 : roi[a];
    p.roiEnd[a] = roi.empty() ? 1.0 : roi[rank + a];
  }
  return "";
}

} // namespace tessel::resize

namespace tessel::cpu {
namespace {

using resize::kMaxTaps;

KernelStatus resizeKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                          const std::vector<TensorView *> &outputs) {
  if (inputs.size() != 1 || !inputs[0] || outputs.size() != 1 || !outputs[0])
    return fail("resize: expected one input and one output");
  const TensorView &in = *inputs[0];
  TensorView &out = *outputs[0];
  if (in.dtype != out.dtype)
    return fail("resize: the result must have the input's dtype");
  resize::Params p;
  if (std::string error = resize::readParams(attrs, in.shape, out.shape, p); !error.empty())
    return fail("resize: " + error);
  const int rank = p.rank;
  // Per axis, per output index: its taps (count, indices, weights) and
  // whether it lies outside (tf_crop_and_resize).
  struct Axis {
    std::vector<int> count;
    std::vector<int64_t> index;
    std::vector<double> weight;
    std::vector<char> outside;
  };
  std::vector<Axis> axes(rank);
  std::vector<int64_t> stride(rank, 1);
  for (int a = rank - 2; a >= 0; --a)
    stride[a] = stride[a + 1] * p.inShape[a + 1];
  for (int a = 0; a < rank; ++a) {
    Axis &axis = axes[a];
    const int64_t n = p.outShape[a];
    axis.count.resize(n);
    axis.index.resize(n * kMaxTaps);
    axis.weight.resize(n * kMaxTaps);
    axis.outside.resize(n);
    for (int64_t x = 0; x < n; ++x) {
      bool outside = false;
      int count = resize::taps(p, a, x, &axis.index[x * kMaxTaps], &axis.weight[x * kMaxTaps],
                               outside);
      // Taps of weight 0 (nearest's other one, linear's at an integral
      // coordinate) are dropped: every element costs only what it reads.
      int kept = 0;
      for (int t = 0; t < count; ++t)
        if (axis.weight[x * kMaxTaps + t] != 0) {
          axis.index[x * kMaxTaps + kept] = axis.index[x * kMaxTaps + t] * stride[a];
          axis.weight[x * kMaxTaps + kept] = axis.weight[x * kMaxTaps + t];
          ++kept;
        }
      axis.count[x] = kept;
      axis.outside[x] = outside;
    }
  }
  bool handled = dispatchOnly<kNumeric>(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = static_cast<const T *>(in.data);
    T *y = static_cast<T *>(out.data);
    const int64_t total = out.numElements();
    std::vector<int64_t> coord(rank, 0);
    for (int64_t e = 0; e < total; ++e) {
      bool outside = false;
      for (int a = 0; a < rank; ++a)
        outside |= axes[a].outside[coord[a]] != 0;
      double sum = 0;
      if (outside) {
        sum = p.extrapolation;
      } else {
        // Odometer over the axes' taps.
        int tap[resize::kMaxRank] = {};
        while (true) {
          int64_t offset = 0;
          double w = 1;
          for (int a = 0; a < rank; ++a) {
            const int64_t slot = coord[a] * kMaxTaps + tap[a];
            offset += axes[a].index[slot];
            w *= axes[a].weight[slot];
          }
          sum += w * static_cast<double>(loadElem(x[offset]));
          int a = rank - 1;
          while (a >= 0 && ++tap[a] == axes[a].count[coord[a]])
            tap[a--] = 0;
          if (a < 0)
            break;
        }
      }
      if constexpr (std::is_integral_v<T>)
        y[e] = static_cast<T>(sum);
      else
        y[e] = saturateCast<T>(sum);
      for (int a = rank - 1; a >= 0 && ++coord[a] == p.outShape[a]; --a)
        coord[a] = 0;
    }
  });
  return handled ? KernelStatus{} : unsupported("resize", in.dtype);
}

} // namespace

void addResizeKernels(KernelTable &table) { table["resize"] = &resizeKernel; }

} // namespace tessel::cpu
