//===- window.cpp - conv and pool windows, read from their attributes ----===//
#include "tessel/window.h"
#include "common.h"
#include "movement.h"

namespace tessel::cpu {

bool readLayout(const Attrs &attrs, bool &nhwc, std::string &error) {
  const std::string &layout = attrs.getString("layout");
  if (layout.empty() || layout == "NCHW") {
    nhwc = false;
  } else if (layout == "NHWC") {
    nhwc = true;
  } else {
    error = "unknown layout '" + layout + "' (NCHW or NHWC)";
    return false;
  }
  return true;
}

bool readWindow(const Attrs &attrs, size_t spatial, Window &w, std::string &error) {
  if (spatial > kMaxSpatial) {
    error = "at most " + std::to_string(kMaxSpatial) + " spatial dims are supported";
    return false;
  }
  const std::vector<int64_t> &strides = attrs.getInts("strides");
  const std::vector<int64_t> &dilations = attrs.getInts("dilations");
  const std::vector<int64_t> &pads = attrs.getInts("pads");
  if ((!strides.empty() && strides.size() != spatial) ||
      (!dilations.empty() && dilations.size() != spatial)) {
    error = "strides and dilations must hold " + std::to_string(spatial) + " values";
    return false;
  }
  if (strides.empty())
    w.strides.assign(spatial, 1);
  else
    w.strides.assign(strides.data(), strides.data() + spatial);
  if (dilations.empty())
    w.dilations.assign(spatial, 1);
  else
    w.dilations.assign(dilations.data(), dilations.data() + spatial);
  if (pads.empty()) {
    w.padBegin.assign(spatial, 0);
    w.padEnd.assign(spatial, 0);
  } else if (pads.size() == 2 * spatial) {
    w.padBegin.assign(pads.data(), pads.data() + spatial);
    w.padEnd.assign(pads.data() + spatial, pads.data() + 2 * spatial);
  } else {
    error = "pads must hold " + std::to_string(2 * spatial) + " values";
    return false;
  }
  for (size_t d = 0; d < spatial; ++d) {
    if (w.strides[d] < 1 || w.dilations[d] < 1) {
      error = "strides and dilations must be positive";
      return false;
    }
    if (w.padBegin[d] < 0 || w.padEnd[d] < 0) {
      error = "pads must not be negative";
      return false;
    }
    if (w.strides[d] > kMaxWindowExtent || w.dilations[d] > kMaxWindowExtent ||
        w.padBegin[d] > kMaxWindowExtent || w.padEnd[d] > kMaxWindowExtent) {
      error = "strides, dilations and pads must be at most " + std::to_string(kMaxWindowExtent);
      return false;
    }
  }
  return true;
}

bool readIm2Row(const Attrs &attrs, const std::vector<int64_t> &x, const std::vector<int64_t> &y,
                Im2RowWindow &w, std::string &error) {
  w = {attrs.getInt("kernel"), attrs.getInt("stride"), attrs.getInt("dilation"),
       attrs.getInt("pad")};
  if (w.kernel < 1 || w.stride < 1 || w.dilation < 1 || w.pad < 0) {
    error = "kernel, stride and dilation must be positive, pad not negative";
    return false;
  }
  int64_t taps = 0;
  if (x.size() != 4 || y.size() != 4 || x[0] != y[0] || x[1] != y[1] ||
      __builtin_mul_overflow(w.kernel, x[3], &taps) || y[3] < taps) {
    error = "input " + shapeText(x) + " and result " + shapeText(y) +
            " are not N x H x W x C and N x H x OW x D with D >= kernel x C";
    return false;
  }
  // The engine fuzzer found a stride of 1.08e18 (9 of them overflowed).
  int64_t last = 0, reach = 0;
  if (y[2] > 0 && (__builtin_mul_overflow(y[2] - 1, w.stride, &last) ||
                   __builtin_mul_overflow(w.kernel - 1, w.dilation, &reach) ||
                   __builtin_add_overflow(last, reach, &last))) {
    error = "stride " + std::to_string(w.stride) + ", dilation " + std::to_string(w.dilation) +
            " and kernel " + std::to_string(w.kernel) + " overflow the columns of " +
            std::to_string(y[2]) + " outputs";
    return false;
  }
  return true;
}

bool readPoolGeometry(const Attrs &attrs, const std::vector<int64_t> &x,
                      const std::vector<int64_t> &out, PoolGeometry &g, std::string &error) {
  const size_t rank = x.size();
  if (!readLayout(attrs, g.nhwc, error))
    return false;
  const size_t channels = channelDim(g.nhwc, rank), firstSpatial = firstSpatialDim(g.nhwc);
  if (rank < 3 || out.size() != rank || out[0] != x[0] || out[channels] != x[channels]) {
    error = "input " + shapeString(x) + " and result " + shapeString(out) +
            (g.nhwc ? " must be N, spatial..., C" : " must be N, C, spatial...");
    return false;
  }
  const size_t ns = rank - 2;
  const std::vector<int64_t> &kernel = attrs.getInts("kernel_shape");
  if (kernel.size() != ns) {
    error = "kernel_shape must hold " + std::to_string(ns) + " values";
    return false;
  }
  if (!readWindow(attrs, ns, g.window, error))
    return false;
  int64_t taps = 1;
  for (size_t d = 0; d < ns; ++d) {
    if (kernel[d] < 1 || kernel[d] > kMaxWindowExtent) {
      error = "kernel_shape must be in [1, " + std::to_string(kMaxWindowExtent) + "]";
      return false;
    }
    taps *= kernel[d];
    const int64_t in = x[firstSpatial + d];
    if ((kernel[d] - 1) * g.window.dilations[d] + 1 >
            in + g.window.padBegin[d] + g.window.padEnd[d] ||
        taps > kMaxWindowTaps) {
      error = "the window (kernel_shape " + shapeString(kernel) +
              ") must fit the padded input and hold at most " +
              std::to_string(kMaxWindowTaps) + " taps";
      return false;
    }
  }
  g.kernel.assign(kernel.data(), kernel.data() + ns);
  g.batch = x[0];
  g.channels = x[channels];
  g.inSpatial.assign(x.data() + firstSpatial, x.data() + firstSpatial + ns);
  g.outSpatial.assign(out.data() + firstSpatial, out.data() + firstSpatial + ns);
  const int64_t inSize = g.inSpatial.product(), outSize = g.outSpatial.product();
  g.inBatch = g.channels * inSize;
  g.outBatch = g.channels * outSize;
  g.inC = g.nhwc ? 1 : inSize;
  g.inS = g.nhwc ? g.channels : 1;
  g.outC = g.nhwc ? 1 : outSize;
  g.outS = g.nhwc ? g.channels : 1;
  return true;
}

bool readConvGeometry(const Attrs &attrs, const std::vector<int64_t> &x,
                      const std::vector<int64_t> &w, const std::vector<int64_t> &out,
                      ConvGeometry &g, std::string &error) {
  const size_t rank = x.size();
  if (rank < 3 || w.size() != rank || out.size() != rank) {
    error = "input, weight and result must have the same rank >= 3";
    return false;
  }
  if (!readLayout(attrs, g.nhwc, error) || !readWindow(attrs, rank - 2, g.window, error))
    return false;
  const size_t channels = channelDim(g.nhwc, rank), firstSpatial = firstSpatialDim(g.nhwc);
  const size_t ns = rank - 2;
  g.batch = x[0];
  g.inChannels = x[channels];
  g.outChannels = w[0];
  g.group = attrs.getInt("group", 1);
  g.inSpatial.assign(x.data() + firstSpatial, x.data() + firstSpatial + ns);
  g.outSpatial.assign(out.data() + firstSpatial, out.data() + firstSpatial + ns);
  g.kernel.assign(w.data() + firstSpatial, w.data() + firstSpatial + ns);
  if (g.group < 1 || g.inChannels % g.group || g.outChannels % g.group ||
      w[channels] * g.group != g.inChannels) {
    error = "channels " + shapeString(x) + " / weight " + shapeString(w) +
            " do not match group " + std::to_string(g.group) +
            (g.nhwc ? " (NHWC, weight OHWI)" : "");
    return false;
  }
  if (out[0] != g.batch || out[channels] != g.outChannels) {
    error = "result shape " + shapeString(out) + " does not match";
    return false;
  }
  for (size_t d = 0; d < ns; ++d) {
    const Window &win = g.window;
    const int64_t span = g.kernel[d] < 1 ? 0 : (g.kernel[d] - 1) * win.dilations[d] + 1;
    const int64_t padded = g.inSpatial[d] + win.padBegin[d] + win.padEnd[d];
    if (g.kernel[d] < 1 || g.kernel[d] > kMaxWindowExtent || span > padded ||
        g.outSpatial[d] != (padded - span) / win.strides[d] + 1) {
      error = "the weight's window " + shapeString(w) + " must fit the padded input " +
              shapeString(x) + " and give the result " + shapeString(out);
      return false;
    }
  }
  return true;
}

} // namespace tessel::cpu
