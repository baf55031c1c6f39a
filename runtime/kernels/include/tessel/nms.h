//===- nms.h - ONNX NonMaxSuppression: boxes, overlap, order -----*- C++ -*-===//
//
// What NonMaxSuppression decides, written once and compiled twice (as
// elementwise_math.h): by the CPU kernel (runtime/kernels/src/detection.cpp)
// and by the CUDA kernel library (codegen/cuda/kernels/Detection.cuh). It
// follows ONNX's reference (onnx/reference/ops/op_non_max_suppression.py, as
// ONNX Runtime): per batch and class, the boxes whose score exceeds the
// score threshold (strictly; every box when there is none) are taken in
// descending score order, equal scores by index, and a box is selected
// unless its IoU with a box already selected in that class exceeds the IoU
// threshold (strictly); at most max_output_boxes_per_class per class. The
// result is one row (batch, class, box) per selection, batch-major, then
// class, then selection order. IoU is computed in f32 as the reference does.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_NMS_H
#define TESSEL_NMS_H

#include "tessel/elementwise_math.h" // TSL_HOST_DEVICE

#include <cstdint>

namespace tessel::nms {

/// A box by its extent along each axis (min <= max).
struct Box {
  float xMin, xMax, yMin, yMax;
};

TSL_HOST_DEVICE void ordered(float a, float b, float &lo, float &hi) {
  lo = a < b ? a : b;
  hi = a < b ? b : a;
}

/// Box b[0..3] as center_point_box says: 0, any two diagonal corners
/// (y1, x1, y2, x2); 1, (x center, y center, width, height).
TSL_HOST_DEVICE Box decode(const float *b, bool centerPoint) {
  Box box;
  if (centerPoint) {
    const float halfWidth = b[2] / 2.0f, halfHeight = b[3] / 2.0f;
    box.xMin = b[0] - halfWidth;
    box.xMax = b[0] + halfWidth;
    box.yMin = b[1] - halfHeight;
    box.yMax = b[1] + halfHeight;
  } else {
    ordered(b[1], b[3], box.xMin, box.xMax);
    ordered(b[0], b[2], box.yMin, box.yMax);
  }
  return box;
}

/// Whether `a` suppresses `b`: their IoU exceeds the threshold. Boxes that do
/// not overlap, or of no area, never suppress.
TSL_HOST_DEVICE bool suppresses(const Box &a, const Box &b, float iouThreshold) {
  const float xMin = a.xMin > b.xMin ? a.xMin : b.xMin;
  const float xMax = a.xMax < b.xMax ? a.xMax : b.xMax;
  const float yMin = a.yMin > b.yMin ? a.yMin : b.yMin;
  const float yMax = a.yMax < b.yMax ? a.yMax : b.yMax;
  if (xMax <= xMin || yMax <= yMin)
    return false;
  const float intersection = (xMax - xMin) * (yMax - yMin);
  const float areaA = (a.xMax - a.xMin) * (a.yMax - a.yMin);
  const float areaB = (b.xMax - b.xMin) * (b.yMax - b.yMin);
  const float unionArea = areaA + areaB - intersection;
  if (intersection <= 0.0f || areaA <= 0.0f || areaB <= 0.0f || unionArea <= 0.0f)
    return false;
  return intersection / unionArea > iouThreshold;
}

/// Whether box ia (score sa) is taken before box ib (score sb).
TSL_HOST_DEVICE bool before(float sa, int64_t ia, float sb, int64_t ib) {
  return sa != sb ? sa > sb : ia < ib;
}

/// Whether a score is a candidate at all.
TSL_HOST_DEVICE bool candidate(float score, bool hasThreshold, float threshold) {
  return !hasThreshold || score > threshold;
}

} // namespace tessel::nms

#endif // TESSEL_NMS_H
