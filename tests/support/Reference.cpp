//===- Reference.cpp - what the kernel tests' float64 references share ----===//
#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessel::test {

using cpu::DType;

void expectClose(const Tensor &got, const std::vector<double> &ref, const std::vector<double> &tol,
                 const std::string &what) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(ref.size())) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    const double g = got.get(i), r = ref[i];
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (std::isinf(r))
      ok = g == r;
    else
      ok = std::fabs(g - r) <= tol[i];
    if (!ok && ++failures <= 5)
      ADD_FAILURE() << what << ": element " << i << " got " << g << " expected " << r
                    << " (tol " << tol[i] << ", diff " << std::fabs(g - r) << ")";
  }
  EXPECT_EQ(failures, 0) << what;
}

std::vector<double> relTol(const std::vector<double> &ref, double rel, double abs) {
  std::vector<double> t(ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    t[i] = rel * std::fabs(ref[i]) + abs;
  return t;
}

double roundingRel(DType t) {
  switch (t) {
  case DType::F16: return std::ldexp(1.0, -10);
  case DType::F32: return std::ldexp(1.0, -23);
  default: return 1e-14;
  }
}

std::vector<double> accTol(DType t, const std::vector<double> &ref, const std::vector<double> &mag) {
  std::vector<double> tol(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    switch (t) {
    case DType::F32: tol[i] = 1e-5 * mag[i] + 1e-30; break;
    case DType::F16:
      tol[i] = std::ldexp(1.0, -10) * std::fabs(ref[i]) + 1e-5 * mag[i] + std::ldexp(1.0, -25);
      break;
    default: tol[i] = 1e-12 * mag[i] + 1e-300; break;
    }
  }
  return tol;
}

std::vector<double> fusedTol(DType t, const std::vector<double> &ref, const std::vector<double> &mag) {
  std::vector<double> tol(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = std::fabs(ref[i]);
    const double e32 = 1.5e-5 * mag[i] + std::ldexp(r, -20) + 1e-30;
    switch (t) {
    case DType::F32: tol[i] = e32; break;
    case DType::F16: tol[i] = std::ldexp(r + e32, -11) + e32 + std::ldexp(1.0, -25); break;
    default: tol[i] = 1.5e-12 * mag[i] + 1e-14 * r + 1e-300; break;
    }
  }
  return tol;
}

Shape broadcastShape(const Shape &a, const Shape &b) {
  Shape r(std::max(a.size(), b.size()));
  for (size_t j = 0; j < r.size(); ++j) {
    int64_t da = j < a.size() ? a[a.size() - 1 - j] : 1;
    int64_t db = j < b.size() ? b[b.size() - 1 - j] : 1;
    r[r.size() - 1 - j] = da == 1 ? db : da;
  }
  return r;
}

int64_t broadcastIndex(const Shape &idx, const Shape &in) {
  int64_t o = 0;
  const size_t off = idx.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    o = o * in[d] + (in[d] == 1 ? 0 : idx[off + d]);
  return o;
}

const ActCase kActivations[11] = {
    {"none", 0, 0},       {"relu", 0, 0},        {"clip", -0.3, 0.4}, {"leaky_relu", 0.1, 0},
    {"sigmoid", 0, 0},    {"tanh", 0, 0},        {"hard_swish", 0, 0}, {"gelu", 0, 0},
    {"gelu_tanh", 0, 0},  {"silu", 0, 0},        {"hard_sigmoid", 0.25, 0.375}};

double refActivation(const ActCase &a, double v) {
  const std::string n = a.name;
  if (n == "relu")
    return std::max(0.0, v);
  if (n == "clip")
    return std::min(std::max(v, a.alpha), a.beta);
  if (n == "leaky_relu")
    return v < 0 ? a.alpha * v : v;
  if (n == "sigmoid")
    return 1.0 / (1.0 + std::exp(-v));
  if (n == "tanh")
    return std::tanh(v);
  if (n == "hard_swish")
    return v * std::min(std::max(v / 6.0 + 0.5, 0.0), 1.0);
  if (n == "gelu_tanh") {
    // x/2 (1 + tanh(u)): as written where u >= 0; where u < 0 as
    // x / (1 + e^-2u), which does not cancel (and is 0 where e^-2u
    // overflows). e^u / cosh(u) was NaN (inf / inf) past u = 710, x > 26.
    const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
    return u >= 0 ? 0.5 * v * (1.0 + std::tanh(u)) : v / (1.0 + std::exp(-2.0 * u));
  }
  if (n == "gelu")
    return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
  if (n == "silu")
    return v / (1.0 + std::exp(-v));
  if (n == "hard_sigmoid")
    return std::min(std::max(a.alpha * v + a.beta, 0.0), 1.0);
  return v;
}

Operand randomOperand(cpu::DType dtype, int64_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Operand o{Tensor(dtype, {count}), {}};
  for (int64_t i = 0; i < count; ++i)
    o.tensor.set(i, dist(rng));
  o.values = o.tensor.doubles();
  return o;
}

Tensor channelsLast(const Tensor &t) {
  const Shape &s = t.shape();
  Shape ls{s[0]};
  ls.insert(ls.end(), s.begin() + 2, s.end());
  ls.push_back(s[1]);
  Tensor r(t.dtype(), ls);
  const size_t e = cpu::dtypeSize(t.dtype());
  for (int64_t i = 0; i < t.size(); ++i) {
    const Shape idx = unravel(i, s);
    Shape li{idx[0]};
    li.insert(li.end(), idx.begin() + 2, idx.end());
    li.push_back(idx[1]);
    std::memcpy(r.as<uint8_t>() + ravel(li, ls) * e, t.as<uint8_t>() + i * e, e);
  }
  return r;
}

Tensor channelsFirst(const Tensor &t) {
  const Shape &s = t.shape();
  Shape fs{s[0], s.back()};
  fs.insert(fs.end(), s.begin() + 1, s.end() - 1);
  Tensor r(t.dtype(), fs);
  const size_t e = cpu::dtypeSize(t.dtype());
  for (int64_t i = 0; i < r.size(); ++i) {
    const Shape idx = unravel(i, fs);
    Shape li{idx[0]};
    li.insert(li.end(), idx.begin() + 2, idx.end());
    li.push_back(idx[1]);
    std::memcpy(r.as<uint8_t>() + i * e, t.as<uint8_t>() + ravel(li, s) * e, e);
  }
  return r;
}

} // namespace tessel::test
