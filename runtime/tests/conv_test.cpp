//===- conv_test.cpp - conv and conv_transpose kernels --------------------===//
//
// conv and conv_transpose (conv.cpp) against naive float64 references: N-d
// windows, groups, depthwise, the NCHW and NHWC paths (NHWC checked as the
// NCHW reference on transposed data), and the fused epilogue (bias, residual,
// each activation).
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

//===----------------------------------------------------------------------===//
// conv, conv_transpose
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n, c, m, group;
  Shape in, kernel, strides, pads, dilations, outputPadding;
  bool bias;
};

const ConvCase kConvCases[] = {
    // 2-D, groups, asymmetric pads, strides and dilations
    {2, 4, 6, 2, {7, 9}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, {0, 0}, true},
    // 1-D
    {1, 3, 5, 1, {11}, {3}, {2}, {1, 1}, {2}, {1}, false},
    // 3-D
    {1, 2, 3, 1, {5, 4, 6}, {2, 3, 2}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}, {1, 1, 2}, {0, 1, 0}, true},
    // depthwise
    {2, 4, 4, 4, {6, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
    // 1x1, no padding
    {1, 8, 5, 1, {4, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, false},
    // stride larger than kernel, big padding
    {1, 3, 4, 1, {8, 8}, {2, 2}, {3, 3}, {2, 1, 0, 2}, {1, 1}, {2, 1}, true},
    // large enough (16*25 taps x 60x60 positions) for conv's im2col to work in
    // several row chunks
    {1, 16, 2, 1, {62, 60}, {5, 5}, {1, 1}, {1, 2, 1, 2}, {1, 1}, {0, 0}, true},
    // a long 1-D conv: its chunks end inside the one output row
    {1, 64, 3, 1, {2000}, {5}, {1}, {2, 2}, {1}, {0}, true},
};

TEST(KernelConv, MatchesNaiveReference) {
  std::mt19937 rng(23);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    int caseIndex = 0;
    for (const ConvCase &cc : kConvCases) {
      const size_t ns = cc.in.size();
      Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group}, os{cc.n, cc.m};
      for (size_t d = 0; d < ns; ++d) {
        xs.push_back(cc.in[d]);
        ws.push_back(cc.kernel[d]);
        const int64_t span = (cc.kernel[d] - 1) * cc.dilations[d] + 1;
        os.push_back((cc.in[d] + cc.pads[d] + cc.pads[ns + d] - span) / cc.strides[d] + 1);
      }
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng), b = randomTensor(t, {cc.m}, rng);
      Tensor y(t, os);
      Attrs a;
      a.set("strides", cc.strides);
      a.set("pads", cc.pads);
      a.set("dilations", cc.dilations);
      a.set("group", cc.group);
      RUN_OK("conv", a, {&x, &w, cc.bias ? &b : nullptr}, y);
      // Reference: y[n,m,o] = b[m] + sum_{c,k} x[n, g*Cg+c, o*s - pb + k*d] * w[m,c,k]
      const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
      const Shape outSp(os.begin() + 2, os.end()), kSp(cc.kernel);
      std::vector<double> ref(y.size()), mag(y.size());
      for (int64_t i = 0; i < y.size(); ++i) {
        const Shape oi = unravel(i, os);
        const int64_t n = oi[0], m = oi[1], g = m / mg;
        double acc = cc.bias ? b.get(m) : 0, s = std::fabs(acc);
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t kp = 0; kp < numel(kSp); ++kp) {
            const Shape k = unravel(kp, kSp);
            Shape xi{n, g * cg + c};
            bool inside = true;
            for (size_t d = 0; d < ns; ++d) {
              int64_t p = oi[2 + d] * cc.strides[d] - cc.pads[d] + k[d] * cc.dilations[d];
              inside = inside && p >= 0 && p < cc.in[d];
              xi.push_back(p);
            }
            if (!inside)
              continue;
            Shape wi{m, c};
            wi.insert(wi.end(), k.begin(), k.end());
            const double term = x.get(ravel(xi, xs)) * w.get(ravel(wi, ws));
            acc += term;
            s += std::fabs(term);
          }
        ref[i] = acc;
        mag[i] = s;
      }
      expectClose(y, ref, accTol(t, ref, mag),
                  std::string("conv ") + dtypeName(t) + " case " + std::to_string(caseIndex));
      ++caseIndex;
    }
  }
}

TEST(KernelConvTranspose, MatchesNaiveReference) {
  std::mt19937 rng(29);
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    int caseIndex = 0;
    for (const ConvCase &cc : kConvCases) {
      const size_t ns = cc.in.size();
      // weight (C, M/group, k...); output extent from the ONNX formula plus
      // output_padding (the kernel must take it from the result view).
      Shape xs{cc.n, cc.c}, ws{cc.c, cc.m / cc.group}, os{cc.n, cc.m};
      for (size_t d = 0; d < ns; ++d) {
        xs.push_back(cc.in[d]);
        ws.push_back(cc.kernel[d]);
        const int64_t span = (cc.kernel[d] - 1) * cc.dilations[d] + 1;
        os.push_back((cc.in[d] - 1) * cc.strides[d] - cc.pads[d] - cc.pads[ns + d] + span +
                     cc.outputPadding[d]);
      }
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng), b = randomTensor(t, {cc.m}, rng);
      Tensor y(t, os);
      Attrs a;
      a.set("strides", cc.strides);
      a.set("pads", cc.pads);
      a.set("dilations", cc.dilations);
      a.set("group", cc.group);
      RUN_OK("conv_transpose", a, {&x, &w, cc.bias ? &b : nullptr}, y);
      const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
      const Shape inSp(cc.in), kSp(cc.kernel);
      std::vector<double> ref(y.size(), 0.0), mag(y.size(), 0.0);
      for (int64_t n = 0; n < cc.n; ++n)
        for (int64_t ci = 0; ci < cc.c; ++ci)
          for (int64_t ip = 0; ip < numel(inSp); ++ip)
            for (int64_t m = 0; m < mg; ++m)
              for (int64_t kp = 0; kp < numel(kSp); ++kp) {
                const Shape i = unravel(ip, inSp), k = unravel(kp, kSp);
                const int64_t g = ci / cg;
                Shape oi{n, g * mg + m};
                bool inside = true;
                for (size_t d = 0; d < ns; ++d) {
                  int64_t o = i[d] * cc.strides[d] - cc.pads[d] + k[d] * cc.dilations[d];
                  inside = inside && o >= 0 && o < os[2 + d];
                  oi.push_back(o);
                }
                if (!inside)
                  continue;
                Shape xi{n, ci}, wi{ci, m};
                xi.insert(xi.end(), i.begin(), i.end());
                wi.insert(wi.end(), k.begin(), k.end());
                const double term = x.get(ravel(xi, xs)) * w.get(ravel(wi, ws));
                ref[ravel(oi, os)] += term;
                mag[ravel(oi, os)] += std::fabs(term);
              }
      if (cc.bias)
        for (int64_t i = 0; i < y.size(); ++i) {
          const double bv = b.get(unravel(i, os)[1]);
          ref[i] += bv;
          mag[i] += std::fabs(bv);
        }
      expectClose(y, ref, accTol(t, ref, mag),
                  std::string("conv_transpose ") + dtypeName(t) + " case " +
                      std::to_string(caseIndex));
      ++caseIndex;
    }
  }
}

//===----------------------------------------------------------------------===//
// conv epilogue (bias, residual, activation) and the NHWC layout
//===----------------------------------------------------------------------===//

Shape convOutShape(const ConvCase &cc) {
  const size_t ns = cc.in.size();
  Shape os{cc.n, cc.m};
  for (size_t d = 0; d < ns; ++d) {
    const int64_t span = (cc.kernel[d] - 1) * cc.dilations[d] + 1;
    os.push_back((cc.in[d] + cc.pads[d] + cc.pads[ns + d] - span) / cc.strides[d] + 1);
  }
  return os;
}

// Naive float64 conv on NCHW operands: ref = act(conv(x, w) + bias +
// residual), mag = sum of |terms| (products, bias, residual) per element.
void refConv(const ConvCase &cc, const Tensor &x, const Tensor &w, const Tensor *bias,
             const Tensor *residual, const ActCase &act, std::vector<double> &ref,
             std::vector<double> &mag) {
  const size_t ns = cc.in.size();
  const Shape os = convOutShape(cc), &xs = x.shape(), &ws = w.shape();
  const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
  const Shape kSp(cc.kernel);
  ref.assign(numel(os), 0);
  mag.assign(numel(os), 0);
  for (int64_t i = 0; i < numel(os); ++i) {
    const Shape oi = unravel(i, os);
    const int64_t n = oi[0], m = oi[1], g = m / mg;
    double acc = 0, s = 0;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t kp = 0; kp < numel(kSp); ++kp) {
        const Shape k = unravel(kp, kSp);
        Shape xi{n, g * cg + c};
        bool inside = true;
        for (size_t d = 0; d < ns; ++d) {
          const int64_t p = oi[2 + d] * cc.strides[d] - cc.pads[d] + k[d] * cc.dilations[d];
          inside = inside && p >= 0 && p < cc.in[d];
          xi.push_back(p);
        }
        if (!inside)
          continue;
        Shape wi{m, c};
        wi.insert(wi.end(), k.begin(), k.end());
        const double term = x.get(ravel(xi, xs)) * w.get(ravel(wi, ws));
        acc += term;
        s += std::fabs(term);
      }
    if (bias) {
      acc += bias->get(m);
      s += std::fabs(bias->get(m));
    }
    if (residual) {
      acc += residual->get(i);
      s += std::fabs(residual->get(i));
    }
    ref[i] = refActivation(act, acc);
    mag[i] = s;
  }
}

Attrs convAttrs(const ConvCase &cc, const char *layout, const ActCase &act) {
  Attrs a;
  a.set("strides", cc.strides);
  a.set("pads", cc.pads);
  a.set("dilations", cc.dilations);
  a.set("group", cc.group);
  if (layout)
    a.set("layout", std::string(layout));
  a.set("activation", std::string(act.name));
  a.set("alpha", act.alpha);
  a.set("beta", act.beta);
  return a;
}

// Random conv shapes: 1-3 spatial dims, strides, asymmetric pads, dilations,
// 1x1 kernels, groups and depthwise (with channel multipliers), channel counts
// past one 16-wide weight panel.
std::vector<ConvCase> randomConvCases(std::mt19937 &rng, int count) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<ConvCase> cases;
  for (int i = 0; i < count; ++i) {
    ConvCase cc;
    const int64_t kind = pick(0, 5); // 0-2 dense, 3 grouped, 4 depthwise, 5 1x1
    const size_t ns = static_cast<size_t>(pick(0, 5) == 0 ? pick(1, 3) : 2);
    cc.n = pick(1, 2);
    cc.group = kind == 3 ? pick(2, 3) : 1;
    int64_t cg = pick(1, 9), mg = pick(1, 40);
    if (kind == 4) {
      cc.group = pick(2, 12);
      cg = 1;
      mg = pick(1, 3);
    }
    cc.c = cg * cc.group;
    cc.m = mg * cc.group;
    cc.pads.assign(2 * ns, 0);
    for (size_t d = 0; d < ns; ++d) {
      const int64_t k = kind == 5 ? 1 : pick(1, 4);
      const int64_t dil = pick(0, 3) == 0 ? 2 : 1;
      const int64_t s = pick(0, 2) == 0 ? pick(2, 3) : 1;
      cc.kernel.push_back(k);
      cc.dilations.push_back(dil);
      cc.strides.push_back(kind == 5 && pick(0, 1) ? 1 : s);
      cc.pads[d] = kind == 5 ? 0 : pick(0, 2);
      cc.pads[ns + d] = kind == 5 ? 0 : pick(0, 2);
      const int64_t span = (k - 1) * dil + 1;
      cc.in.push_back(std::max<int64_t>(1, span - cc.pads[d] - cc.pads[ns + d]) + pick(0, ns == 1 ? 12 : 6));
      cc.outputPadding.push_back(0);
    }
    cc.bias = pick(0, 1) != 0;
    cases.push_back(cc);
  }
  return cases;
}

std::string convCaseName(const ConvCase &cc) {
  return "n" + std::to_string(cc.n) + " c" + std::to_string(cc.c) + " m" + std::to_string(cc.m) +
         " g" + std::to_string(cc.group) + " in" + shapeStr(cc.in) + " k" + shapeStr(cc.kernel) +
         " s" + shapeStr(cc.strides) + " p" + shapeStr(cc.pads) + " d" + shapeStr(cc.dilations);
}

// More fixed shapes for the NHWC paths: several 16-wide weight panels, a
// direct (1x1, stride 1) conv, a depthwise conv with channel multiplier 2, a
// strided 1x1 (ResNet downsample), ResNet's stem.
const ConvCase kNhwcCases[] = {
    {1, 8, 37, 1, {9, 7}, {3, 3}, {1, 2}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
    {2, 24, 40, 1, {5, 6}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, true},
    {1, 6, 12, 6, {7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
    {1, 32, 48, 1, {8, 8}, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, {0, 0}, false},
    {1, 3, 16, 1, {30, 30}, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, {0, 0}, true},
    {1, 40, 20, 4, {6, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0, 0}, true},
};

// conv in NHWC (input N,spatial,C; weight OHWI; result N,spatial,M) is the
// NCHW conv on transposed data: the kernel runs on channelsLast operands and
// its result, moved back to channels-first, is compared with the float64
// reference of the NCHW operands.
TEST(KernelConvNhwc, MatchesReferenceOnTransposedData) {
  std::mt19937 rng(101);
  std::vector<ConvCase> cases(std::begin(kConvCases), std::end(kConvCases));
  cases.insert(cases.end(), std::begin(kNhwcCases), std::end(kNhwcCases));
  const std::vector<ConvCase> random = randomConvCases(rng, 40);
  cases.insert(cases.end(), random.begin(), random.end());
  const ActCase none = kActivations[0];
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const ConvCase &cc : cases) {
      Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group};
      xs.insert(xs.end(), cc.in.begin(), cc.in.end());
      ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
      const Shape os = convOutShape(cc);
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng), b = randomTensor(t, {cc.m}, rng);
      std::vector<double> ref, mag;
      refConv(cc, x, w, cc.bias ? &b : nullptr, nullptr, none, ref, mag);
      const Tensor xl = channelsLast(x), wl = channelsLast(w);
      Tensor yl(t, channelsLast(Tensor(t, os)).shape());
      RUN_OK("conv", convAttrs(cc, "NHWC", none), {&xl, &wl, cc.bias ? &b : nullptr}, yl);
      expectClose(channelsFirst(yl), ref, fusedTol(t, ref, mag),
                  std::string("conv NHWC ") + dtypeName(t) + " " + convCaseName(cc));
    }
  }
}

// Timing, not correctness (run with --gtest_also_run_disabled_tests): the 53
// convolutions of ResNet-50 at batch 1 (4.1 GMAC), each with bias + relu
// (+ residual on the blocks' last conv), in both layouts and f32/f16.
TEST(KernelConvNhwc, DISABLED_ResNet50ConvStackTiming) {
  struct Layer {
    int64_t cin, cout, k, stride, pad, hw;
    bool residual;
  };
  std::vector<Layer> layers = {{3, 64, 7, 2, 3, 224, false}};
  int64_t in = 64, hw = 56;
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int st = 0; st < 4; ++st)
    for (int64_t b = 0; b < blocks[st]; ++b) {
      const int64_t w = widths[st], s = st > 0 && b == 0 ? 2 : 1, out = hw / s;
      layers.push_back({in, w, 1, 1, 0, hw, false});
      layers.push_back({w, w, 3, s, 1, hw, false});
      layers.push_back({w, 4 * w, 1, 1, 0, out, true});
      if (b == 0)
        layers.push_back({in, 4 * w, 1, s, 0, hw, false});
      in = 4 * w;
      hw = out;
    }
  double macs = 0;
  for (const Layer &l : layers) {
    const int64_t o = (l.hw + 2 * l.pad - l.k) / l.stride + 1;
    macs += double(o * o) * l.cout * l.cin * l.k * l.k;
  }
  std::printf("%zu convs, %.2f GMAC\n", layers.size(), macs * 1e-9);
  std::mt19937 rng(1);
  for (DType t : {DType::F32, DType::F16})
    for (const char *layout : {"NHWC", "NCHW"}) {
      const bool nhwc = layout[1] == 'H';
      double seconds = 0;
      for (const Layer &l : layers) {
        const int64_t o = (l.hw + 2 * l.pad - l.k) / l.stride + 1;
        Tensor x = randomTensor(t, nhwc ? Shape{1, l.hw, l.hw, l.cin} : Shape{1, l.cin, l.hw, l.hw}, rng);
        Tensor w = randomTensor(t, nhwc ? Shape{l.cout, l.k, l.k, l.cin} : Shape{l.cout, l.cin, l.k, l.k}, rng);
        Tensor b = randomTensor(t, {l.cout}, rng);
        const Shape os = nhwc ? Shape{1, o, o, l.cout} : Shape{1, l.cout, o, o};
        Tensor r = randomTensor(t, os, rng), y(t, os);
        ConvCase cc{1, l.cin, l.cout, 1, {l.hw, l.hw}, {l.k, l.k}, {l.stride, l.stride},
                    {l.pad, l.pad, l.pad, l.pad}, {1, 1}, {0, 0}, true};
        const Attrs a = convAttrs(cc, layout, kActivations[1]);
        const auto start = std::chrono::steady_clock::now();
        RUN_OK("conv", a, {&x, &w, &b, l.residual ? &r : nullptr}, y);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      std::printf("%s %s: %.3f s (%.1f GFLOP/s)\n", dtypeName(t), layout, seconds,
                  2 * macs / seconds * 1e-9);
    }
}

// The epilogue y = act(conv + bias + residual), each activation, both
// layouts, with and without bias and residual (a missing residual given as
// nullptr or by a 3-operand list).
TEST(KernelConvEpilogue, BiasResidualAndEachActivation) {
  std::mt19937 rng(103);
  std::vector<ConvCase> cases = {kConvCases[0], kConvCases[2], kConvCases[3], kConvCases[4],
                                 kNhwcCases[0], kNhwcCases[2]};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const ConvCase &cc : cases) {
      Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group};
      xs.insert(xs.end(), cc.in.begin(), cc.in.end());
      ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
      const Shape os = convOutShape(cc);
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng);
      Tensor b = randomTensor(t, {cc.m}, rng), r = randomTensor(t, os, rng, -2, 2);
      const Tensor xl = channelsLast(x), wl = channelsLast(w), rl = channelsLast(r);
      for (const ActCase &act : kActivations)
        for (int operands = 0; operands < 4; ++operands) {
          const bool withBias = operands & 1, withResidual = operands & 2;
          std::vector<double> ref, mag;
          refConv(cc, x, w, withBias ? &b : nullptr, withResidual ? &r : nullptr, act, ref, mag);
          const std::string what = std::string("conv ") + dtypeName(t) + " " + act.name +
                                   (withBias ? " +bias" : "") + (withResidual ? " +residual" : "") +
                                   " " + convCaseName(cc);
          for (const char *layout : {"NCHW", "NHWC"}) {
            const bool nhwc = layout[1] == 'H';
            Tensor y(t, nhwc ? rl.shape() : os);
            std::vector<const Tensor *> ins{nhwc ? &xl : &x, nhwc ? &wl : &w,
                                            withBias ? &b : nullptr};
            if (withResidual || operands == 0) // operands == 0: explicit nullptr residual
              ins.push_back(withResidual ? (nhwc ? &rl : &r) : nullptr);
            RUN_OK("conv", convAttrs(cc, layout, act), ins, y);
            expectClose(nhwc ? channelsFirst(y) : y, ref, fusedTol(t, ref, mag),
                        what + " " + layout);
          }
        }
    }
  }
}

// The input scale (a squeeze-excitation gate's, fused into the conv): the
// conv reads x * scale[n, c], each product rounded to x's type (Tensor::set
// rounds as a mul step would), in both layouts, with and without bias.
TEST(KernelConvEpilogue, InputScale) {
  std::mt19937 rng(109);
  std::vector<ConvCase> cases = {kConvCases[0], kNhwcCases[0], kNhwcCases[1], kNhwcCases[3]};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const ConvCase &cc : cases) {
      Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group};
      xs.insert(xs.end(), cc.in.begin(), cc.in.end());
      ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
      Shape ss(xs.size(), 1);
      ss[0] = cc.n;
      ss[1] = cc.c;
      Tensor x = randomTensor(t, xs, rng), w = randomTensor(t, ws, rng);
      Tensor b = randomTensor(t, {cc.m}, rng), scale = randomTensor(t, ss, rng);
      Tensor scaled = x;
      const int64_t spatial = numel(xs) / (cc.n * cc.c);
      for (int64_t i = 0; i < numel(xs); ++i)
        scaled.set(i, x.get(i) * scale.get(i / spatial));
      std::vector<double> ref, mag;
      refConv(cc, scaled, w, cc.bias ? &b : nullptr, nullptr, kActivations[1], ref, mag);
      const Tensor xl = channelsLast(x), wl = channelsLast(w), sl = channelsLast(scale);
      for (const char *layout : {"NCHW", "NHWC"}) {
        const bool nhwc = layout[1] == 'H';
        Tensor y(t, nhwc ? channelsLast(Tensor(t, convOutShape(cc))).shape() : convOutShape(cc));
        RUN_OK("conv", convAttrs(cc, layout, kActivations[1]),
               {nhwc ? &xl : &x, nhwc ? &wl : &w, cc.bias ? &b : nullptr, nullptr,
                nhwc ? &sl : &scale},
               y);
        expectClose(nhwc ? channelsFirst(y) : y, ref, fusedTol(t, ref, mag),
                    std::string("conv scaled ") + dtypeName(t) + " " + convCaseName(cc) + " " +
                        layout);
      }
    }
  }
  // One value per image and channel, no other count.
  Tensor x(DType::F32, {2, 4, 3, 3}), w(DType::F32, {6, 4, 1, 1}), y(DType::F32, {2, 6, 3, 3});
  Tensor perChannel(DType::F32, {1, 4, 1, 1});
  ConvCase cc{2, 4, 6, 1, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, false};
  KernelStatus s = run("conv", convAttrs(cc, "NCHW", kActivations[0]),
                       {&x, &w, nullptr, nullptr, &perChannel}, y);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error.find("input_scale"), std::string::npos) << s.error;
}

// An absent or empty layout attribute is NCHW: the three give the same bits.
TEST(KernelConvEpilogue, AbsentLayoutIsNchw) {
  std::mt19937 rng(107);
  const ConvCase &cc = kConvCases[0];
  Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.group};
  xs.insert(xs.end(), cc.in.begin(), cc.in.end());
  ws.insert(ws.end(), cc.kernel.begin(), cc.kernel.end());
  Tensor x = randomTensor(DType::F32, xs, rng), w = randomTensor(DType::F32, ws, rng);
  Tensor y0(DType::F32, convOutShape(cc)), y1 = y0, y2 = y0;
  RUN_OK("conv", convAttrs(cc, "NCHW", kActivations[1]), {&x, &w}, y0);
  RUN_OK("conv", convAttrs(cc, "", kActivations[1]), {&x, &w}, y1);
  RUN_OK("conv", convAttrs(cc, nullptr, kActivations[1]), {&x, &w}, y2);
  EXPECT_EQ(y0.bytes(), y1.bytes());
  EXPECT_EQ(y0.bytes(), y2.bytes());
}

TEST(KernelConvEpilogue, BadAttributesAndOperandsReturnErrors) {
  Tensor x(DType::F32, {1, 4, 5, 5}), w(DType::F32, {6, 4, 3, 3}), y(DType::F32, {1, 6, 3, 3});
  Tensor res(DType::F32, {1, 6, 3, 3}), badRes(DType::F32, {1, 6, 9}), bias(DType::F32, {6});
  ConvCase cc{1, 4, 6, 1, {5, 5}, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {0, 0}, false};
  EXPECT_TRUE(run("conv", convAttrs(cc, "NCHW", kActivations[0]), {&x, &w, &bias, &res}, y).ok());
  KernelStatus s = run("conv", convAttrs(cc, "NCWH", kActivations[0]), {&x, &w}, y);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error.find("layout"), std::string::npos) << s.error;
  s = run("conv", convAttrs(cc, "NCHW", ActCase{"swiglu", 0, 0}), {&x, &w}, y);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error.find("swiglu"), std::string::npos) << s.error;
  EXPECT_FALSE(run("conv", convAttrs(cc, "NCHW", kActivations[0]), {&x, &w, &bias, &badRes}, y).ok());
  // NHWC reads channels from the last dim: these NCHW shapes do not fit.
  EXPECT_FALSE(run("conv", convAttrs(cc, "NHWC", kActivations[0]), {&x, &w}, y).ok());
}

// pool_fc (a squeeze-excitation block's global pool and first 1x1 conv,
// NHWC): against the mean in double and the products summed in double.
TEST(KernelPoolFc, MatchesFloat64) {
  std::mt19937 rng(131);
  struct Case {
    int64_t n, h, w, c, m;
    bool bias;
  };
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const Case &pc : {Case{2, 5, 3, 16, 12, true}, Case{1, 7, 7, 24, 8, false},
                           Case{3, 1, 1, 8, 40, true}})
      for (const ActCase &act : kActivations) {
        Tensor x = randomTensor(t, {pc.n, pc.h, pc.w, pc.c}, rng);
        Tensor w = randomTensor(t, {pc.m, 1, 1, pc.c}, rng), b = randomTensor(t, {pc.m}, rng);
        Tensor y(t, {pc.n, 1, 1, pc.m});
        Attrs a;
        a.set("activation", std::string(act.name));
        a.set("alpha", act.alpha);
        a.set("beta", act.beta);
        RUN_OK("pool_fc", a, {&x, &w, pc.bias ? &b : nullptr}, y);
        const int64_t rows = pc.h * pc.w;
        std::vector<double> ref, mag;
        for (int64_t n = 0; n < pc.n; ++n)
          for (int64_t m = 0; m < pc.m; ++m) {
            double acc = 0, s = 0;
            for (int64_t c = 0; c < pc.c; ++c) {
              double mean = 0;
              for (int64_t r = 0; r < rows; ++r)
                mean += x.get((n * rows + r) * pc.c + c);
              mean /= static_cast<double>(rows);
              acc += w.get(m * pc.c + c) * mean;
              s += std::fabs(w.get(m * pc.c + c) * mean);
            }
            if (pc.bias) {
              acc += b.get(m);
              s += std::fabs(b.get(m));
            }
            ref.push_back(refActivation(act, acc));
            mag.push_back(s);
          }
        expectClose(y, ref, fusedTol(t, ref, mag),
                    std::string("pool_fc ") + dtypeName(t) + " " + act.name + " c" +
                        std::to_string(pc.c));
      }
}

TEST(KernelPoolFc, BadOperandsReturnErrors) {
  Tensor x(DType::F32, {1, 4, 4, 8}), w(DType::F32, {6, 1, 1, 8}), y(DType::F32, {1, 1, 1, 6});
  Tensor badW(DType::F32, {6, 1, 1, 4}), wideW(DType::F32, {6, 3, 3, 8}),
      badBias(DType::F32, {5}), badY(DType::F32, {1, 2, 2, 6}), i32x(DType::I32, {1, 4, 4, 8});
  Attrs a;
  EXPECT_TRUE(run("pool_fc", a, {&x, &w}, y).ok());
  for (const auto &[operands, what] :
       std::vector<std::pair<std::vector<const Tensor *>, const char *>>{
           {{&x, &badW}, "weight"}, {{&x, &wideW}, "weight"}, {{&x, &w, &badBias}, "bias"},
           {{&i32x, &w}, "pool_fc"}}) {
    KernelStatus s = run("pool_fc", a, operands, y);
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_NE(s.error.find(what), std::string::npos) << s.error;
  }
  EXPECT_FALSE(run("pool_fc", a, {&x, &w}, badY).ok());
  Attrs swiglu;
  swiglu.set("activation", std::string("swiglu"));
  KernelStatus s = run("pool_fc", swiglu, {&x, &w}, y);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error.find("swiglu"), std::string::npos) << s.error;
}

} // namespace
} // namespace tessel::test
