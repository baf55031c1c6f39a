//===- window.h - conv and pool windows, read from their attributes -*- C++ -*-===//
//
// The window of a conv or a pool (strides, dilations, pads; a pool's
// kernel_shape) and the layout attribute, read once, with ONNX's defaults and
// checks. The CPU kernels read their attributes through these functions, and
// the CUDA kernel library's planner (codegen/cuda/KernelLibrary.cpp) derives
// a pool's launch parameters from the same reading: the two tiers cannot
// disagree on what an attribute means, nor on which steps are invalid (where
// the CPU kernel would fail, the planner plans no GPU kernel).
//
// Attribute conventions (as the engine stores them, and the dialect): pads
// hold all spatial begins, then all ends; an absent strides, dilations or
// pads means 1, 1 and 0 in every spatial dim; layout is "NCHW" (also absent
// or empty) or "NHWC".
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_WINDOW_H
#define TESSEL_WINDOW_H

#include "tessel/cpu_kernels.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cpu {

// The most spatial dims a conv or pool takes (ONNX models use 1 to 3).
constexpr size_t kMaxSpatial = 8;

// Spatial extents (or per-dim window parameters) without the heap: kernels
// read them on every call, and a run allocates nothing.
struct SpatialDims {
  int64_t v[kMaxSpatial] = {};
  size_t n = 0;

  int64_t &operator[](size_t i) { return v[i]; }
  int64_t operator[](size_t i) const { return v[i]; }
  size_t size() const { return n; }
  void assign(size_t count, int64_t value) {
    n = count;
    for (size_t i = 0; i < n; ++i)
      v[i] = value;
  }
  void assign(const int64_t *begin, const int64_t *end) {
    n = static_cast<size_t>(end - begin);
    for (size_t i = 0; i < n; ++i)
      v[i] = begin[i];
  }
  int64_t product() const {
    int64_t p = 1;
    for (size_t i = 0; i < n; ++i)
      p *= v[i];
    return p;
  }
  // Row-major strides of these extents.
  SpatialDims strides() const {
    SpatialDims s;
    s.assign(n, 1);
    for (size_t d = n; d-- > 1;)
      s[d - 1] = s[d] * v[d];
    return s;
  }
  // Advances `index` (row-major) within these extents; false after the last.
  bool next(SpatialDims &index) const {
    for (size_t d = n; d-- > 0;) {
      if (++index[d] < v[d])
        return true;
      index[d] = 0;
    }
    return false;
  }
};

// The layout attribute: false for "NCHW" (also an absent or empty
// attribute), true for "NHWC"; anything else is an error.
bool readLayout(const Attrs &attrs, bool &nhwc, std::string &error);

// Where a layout keeps the channels and the first spatial dim of a tensor of
// rank `rank` (N, C, spatial... or N, spatial..., C).
inline size_t channelDim(bool nhwc, size_t rank) { return nhwc ? rank - 1 : 1; }
inline size_t firstSpatialDim(bool nhwc) { return nhwc ? 1 : 2; }

// A window's strides, dilations and pads over `spatial` dims.
struct Window {
  SpatialDims strides, padBegin, padEnd, dilations;
};

// The largest stride, dilation, pad or kernel extent a window may have, and
// the most taps a pool window may hold: far beyond any model's (a global
// pool of a 4096x4096 map is 2^24 taps), small enough that no index
// arithmetic overflows and no scratch buffer is absurd, whatever an engine
// file says.
constexpr int64_t kMaxWindowExtent = int64_t(1) << 24;
constexpr int64_t kMaxWindowTaps = int64_t(1) << 24;

// Reads strides, dilations and pads with their defaults. Errors: more than
// kMaxSpatial spatial dims; strides, dilations or pads of the wrong length;
// strides or dilations below 1, pads below 0, any above kMaxWindowExtent.
// (conv and conv_transpose take their kernel extents from the weight, not
// from an attribute.)
bool readWindow(const Attrs &attrs, size_t spatial, Window &window, std::string &error);

// tessel.im2row's window along W (kernel taps at stride, dilation, pad)
// for an input N x H x W x C and a result N x H x OW x D. Errors, in this
// order: a kernel, stride or dilation below 1 or a pad below 0; shapes not
// of that form or D < kernel x C; taps whose columns, o x stride + s x
// dilation, leave int64 (untrusted attributes).
struct Im2RowWindow {
  int64_t kernel = 1, stride = 1, dilation = 1, pad = 0;
};
bool readIm2Row(const Attrs &attrs, const std::vector<int64_t> &input,
                const std::vector<int64_t> &result, Im2RowWindow &window, std::string &error);

// A pool's geometry and its one index mapping: element (n, c, spatial
// position s) of the input is at n * inBatch + c * inC + s * inS, with s the
// row-major linear spatial position (NCHW: inC = spatial size, inS = 1;
// NHWC: inC = 1, inS = C), and likewise for the result.
struct PoolGeometry {
  bool nhwc = false;
  int64_t batch = 0, channels = 0;
  SpatialDims inSpatial, outSpatial, kernel;
  Window window;
  int64_t inBatch = 0, inC = 0, inS = 0, outBatch = 0, outC = 0, outS = 0;
};

// Reads max_pool's and avg_pool's layout, kernel_shape and window for an
// input and a result of these shapes. Errors, in this order: the layout; a
// rank below 3 or a result whose rank, batch or channels differ from the
// input's; a kernel_shape not of one value per spatial dim; the window
// (readWindow); a kernel_shape value below 1 or above kMaxWindowExtent, a
// window of more than kMaxWindowTaps taps, or one (dilated) larger than the
// padded input.
bool readPoolGeometry(const Attrs &attrs, const std::vector<int64_t> &input,
                      const std::vector<int64_t> &result, PoolGeometry &geometry,
                      std::string &error);

// A conv's geometry (NCHW: x N,C,spatial; w M,C/group,k; y N,M,spatial.
// NHWC: x N,spatial,C; w M,k,C/group; y N,spatial,M).
struct ConvGeometry {
  int64_t batch = 0, inChannels = 0, outChannels = 0, group = 1;
  SpatialDims inSpatial, outSpatial, kernel;
  Window window;
  bool nhwc = false;
};

// Reads conv's layout, window and group for an input, a weight and a result
// of these shapes. Errors, in this order: ranks that differ or are below 3;
// the layout; the window (readWindow); channels that do not match the group;
// a result whose batch or channels differ; a weight extent above
// kMaxWindowExtent, a window (dilated) larger than the padded input, or a
// result whose spatial extents are not the window's
// (floor((in + pads - dilated window) / stride) + 1).
bool readConvGeometry(const Attrs &attrs, const std::vector<int64_t> &input,
                      const std::vector<int64_t> &weight, const std::vector<int64_t> &result,
                      ConvGeometry &geometry, std::string &error);

} // namespace tessel::cpu

#endif // TESSEL_WINDOW_H
