//===- resize.h - ONNX Resize: coordinates and interpolation taps -*- C++ -*-===//
//
// What Resize computes, written once and compiled twice (as
// elementwise_math.h): by the CPU kernel (runtime/kernels/src/resize.cpp) and
// by the CUDA kernel library (codegen/cuda/kernels/Movement.cuh). The result
// is separable: along each axis an output index maps to a coordinate in the
// input (the coordinate transformation mode) and to taps, input indices with
// weights (the mode: nearest, linear, cubic, each optionally antialiased when
// downscaling); an element is the sum over the product of the axes' taps of
// weight times input, indices clamped to the edge. It follows ONNX's
// reference (onnx/reference/ops/op_resize.py): the ratio of a coordinate
// that is an integer is 1 (its left neighbour's), the taps of a window of n
// are the n indices nearest the coordinate, exclude_outside drops the taps
// outside the input and renormalizes, and tf_crop_and_resize gives
// extrapolation_value where a coordinate falls outside the input.
//
// Weights and sums are double, each result rounded once to the element type.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RESIZE_H
#define TESSEL_RESIZE_H

#include "tessel/elementwise_math.h" // TSL_HOST_DEVICE, TSL_MATH

#include <cstdint>

namespace tessel::resize {

constexpr int kMaxRank = 8;
// The most taps along one axis: a cubic window antialiased at the smallest
// scale the importer accepts (1/16) has 2 * (2 * 16) = 64.
constexpr int kMaxTaps = 64;
constexpr double kMinAntialiasScale = 1.0 / 16;

enum Mode : int32_t { Nearest = 0, Linear = 1, Cubic = 2 };
enum Coordinate : int32_t {
  HalfPixel = 0,
  HalfPixelSymmetric = 1,
  PytorchHalfPixel = 2,
  AlignCorners = 3,
  Asymmetric = 4,
  TfHalfPixelForNn = 5,
  TfCropAndResize = 6
};
enum NearestMode : int32_t { RoundPreferFloor = 0, RoundPreferCeil = 1, Floor = 2, Ceil = 3 };

/// Everything a kernel needs, by value (the CUDA kernel's parameter block).
struct Params {
  int64_t inShape[kMaxRank], outShape[kMaxRank];
  double scale[kMaxRank];               // per axis, as the transformation uses it
  double roiStart[kMaxRank], roiEnd[kMaxRank]; // tf_crop_and_resize, normalized
  double cubicA, extrapolation;
  int32_t rank, mode, coordinate, nearest;
  int32_t excludeOutside, antialias, pad0, pad1;
};

/// The input coordinate of output index `x` along an axis. As ONNX's
/// reference, the output width is the real scale * input (not the integral
/// result extent) except where half_pixel_symmetric adjusts for the two.
TSL_HOST_DEVICE double sourceCoordinate(const Params &p, int axis, int64_t x) {
  const double scale = p.scale[axis];
  const double in = static_cast<double>(p.inShape[axis]);
  const double outWidth = scale * in;
  const double xr = static_cast<double>(x);
  switch (p.coordinate) {
  case HalfPixelSymmetric: {
    const double adjustment = static_cast<double>(p.outShape[axis]) / outWidth;
    const double center = in / 2;
    const double offset = center * (1 - adjustment);
    return offset + (xr + 0.5) / scale - 0.5;
  }
  case PytorchHalfPixel:
    return outWidth == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
  case AlignCorners:
    return outWidth == 1 ? 0.0 : xr * (in - 1) / (outWidth - 1);
  case Asymmetric:
    return xr / scale;
  case TfHalfPixelForNn:
    return (xr + 0.5) / scale;
  case TfCropAndResize: {
    const double start = p.roiStart[axis], end = p.roiEnd[axis];
    const double x0 = outWidth == 1 ? (end - start) * (in - 1) / 2
                                    : xr * (end - start) * (in - 1) / (outWidth - 1);
    return x0 + start * (in - 1);
  }
  case HalfPixel:
  default:
    return (xr + 0.5) / scale - 0.5;
  }
}

/// The cubic convolution kernel (Keys, coefficient a) at distance d.
TSL_HOST_DEVICE double cubicWeight(double d, double a) {
  d = d < 0 ? -d : d;
  if (d <= 1)
    return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2)
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

/// The taps of output index `x` along `axis`: `count` input indices (clamped
/// to the input) with their weights, or `outside` (tf_crop_and_resize: the
/// coordinate is not in the input; the element is the extrapolation value).
TSL_HOST_DEVICE int taps(const Params &p, int axis, int64_t x, int64_t *index, double *weight,
                         bool &outside) {
  const int64_t len = p.inShape[axis];
  const double source = sourceCoordinate(p, axis, x);
  outside = p.coordinate == TfCropAndResize && (source < 0 || source > static_cast<double>(len - 1));
  // ONNX's reference: an integral coordinate has ratio 1 from its left
  // neighbour; otherwise the ratio is its distance from its floor.
  double base = TSL_MATH(floor)(source);
  double ratio = source - base;
  if (ratio == 0) {
    base -= 1;
    ratio = 1;
  }
  const int64_t left = static_cast<int64_t>(base);
  int first = 0, count = 0; // taps are left + first .. left + first + count - 1
  if (p.mode == Nearest) {
    first = 0;
    count = 2;
    bool right = ratio == 1;
    if (ratio != 1) {
      switch (p.nearest) {
      case RoundPreferCeil: right = ratio >= 0.5; break;
      case Floor: right = false; break;
      case Ceil: right = true; break;
      default: right = ratio > 0.5; break;
      }
    }
    weight[0] = right ? 0 : 1;
    weight[1] = right ? 1 : 0;
  } else {
    const double scale = p.antialias && p.scale[axis] < 1 ? p.scale[axis] : 1.0;
    // The window: 2 taps (linear) or 4 (cubic) at scale 1, widened by 1/scale
    // when antialiasing a downscale; taps at distance (i - ratio) * scale.
    const double support = p.mode == Linear ? 1.0 : 2.0;
    first = static_cast<int>(TSL_MATH(floor)(-support / scale) + 1);
    count = p.mode == Linear ? 2 - 2 * first : 2 - first - first;
    if (count > kMaxTaps)
      count = kMaxTaps;
    double sum = 0;
    for (int i = 0; i < count; ++i) {
      const double d = (static_cast<double>(first + i) - ratio) * scale;
      double w;
      if (p.mode == Linear) {
        w = 1 - (d < 0 ? -d : d);
        w = w < 0 ? 0 : w;
      } else {
        w = cubicWeight(d, p.cubicA);
      }
      weight[i] = w;
      sum += w;
    }
    if (p.antialias && scale < 1)
      for (int i = 0; i < count; ++i)
        weight[i] /= sum;
  }
  if (p.excludeOutside) {
    double sum = 0;
    for (int i = 0; i < count; ++i) {
      const int64_t at = left + first + i;
      if (at < 0 || at >= len)
        weight[i] = 0;
      sum += weight[i];
    }
    if (sum != 0)
      for (int i = 0; i < count; ++i)
        weight[i] /= sum;
  }
  for (int i = 0; i < count; ++i) {
    int64_t at = left + first + i;
    index[i] = at < 0 ? 0 : (at >= len ? len - 1 : at);
  }
  return count;
}

} // namespace tessel::resize

#if !defined(__CUDACC__)
#include "tessel/cpu_kernels.h"

#include <string>
#include <vector>

namespace tessel::resize {

/// Reads a resize step's attributes (as the engine stores them: mode,
/// coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
/// exclude_outside, extrapolation_value, antialias, scales per axis, roi as
/// all starts then all ends or empty) for input and result shapes. The CPU
/// kernel and the CUDA planner both read them here; "" on success, else why
/// the step is invalid.
std::string readParams(const cpu::Attrs &attrs, const std::vector<int64_t> &in,
                       const std::vector<int64_t> &out, Params &p);

} // namespace tessel::resize
#endif

#endif // TESSEL_RESIZE_H
