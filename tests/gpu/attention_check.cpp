//===- attention_check.cpp - the attention kernels on a GPU ---------------===//
//
// Usage: tessel-gpu-attention-check LIBRARY_DIR [--quick] [--bench] [--image FILE]...
//                                                [--profile]
//
// Runs the kernel library's attention family (LIBRARY_DIR/attention.ptx,
// the PTX every engine carries, JIT-compiled by the driver, and
// LIBRARY_DIR/attention.sm_XY.cubin for the device's SM) on random problems
// and compares each result with a float64 reference computed here from the
// op's definition (scores, mask, causal diagonal, softmax, weighted sum of
// V; naive loops over the inputs as stored). The Tensor Core kernels
// (tsl_attention_f16_tc_d64/80/96/128) and the SIMT kernels
// (tsl_attention_f32_simt, tsl_attention_f16_simt) each on: no mask,
// additive f32 and f16 masks and bool masks of several broadcasts, causal
// with Sq = Sk and Sq < Sk, head dims padded (40/72 -> 80), rank-3 batches,
// one query row, rows of 4096 keys and more, and rows whose keys are all
// masked (NaN, as the unfused softmax). The result buffer is poisoned with
// NaN and followed by a guard that must stay untouched. Prints PASS/FAIL
// per run; exits 1 on any failure. Without a driver or GPU: SKIP, exit 0.
//
// --quick runs the small problems only (for compute-sanitizer). --bench
// then times the Tensor Core kernel from the cubin on b8 h12 s512 d64 and
// b1 h16 s2048 d128 causal (f16, no mask): the median of 100 launches, each
// between two events; --image FILE times the same launches from another
// build of the family (a cubin or PTX) too. --profile only launches each
// benchmark shape once (for a profiler), checking nothing.
//
// Tolerance (per element, worst-case bounds, not fitted): with f16 storage
// and f32 accumulation the result differs from the float64 reference by
//   - its rounding to f16: 2^-11 |ref| (2^-25 absolute for subnormals); f32:
//     2^-24 |ref|;
//   - the Tensor Core kernel's weights rounded to f16 as the operand of the
//     second product (2^-11 each) while the row's sum adds them unrounded:
//     2 * 2^-11 * M, M = sum_j |w_j v_j| (the reference's magnitude);
//   - the f32 scores: the product's sum over D terms, the scale, the mask
//     and the log2(e) factor round, by at most 2^-24 ((D + 2) |scale| *
//     sum_c |q_c k_c| + 8 |score|); a score error e changes the weights by a
//     factor within e of 1: e * M;
//   - the f32 sums over Sk keys (the output's, the softmax's, their
//     rescalings): (Sk + 8) * 2^-24 * M;
//   - ex2.approx: 2 ulp, 2^-21 * M.
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "KernelParams.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace tessel::gpucheck;
using tessel::kernels::AttentionParams;

namespace {

using CUevent = void *;
struct Extra {
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
};
Extra extra{};
constexpr int kMaxDynamicSharedBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

bool resolveExtra() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto resolve = [&](const char *name, auto &fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    return fn != nullptr;
  };
  return lib && resolve("cuFuncSetAttribute", extra.cuFuncSetAttribute) &&
         resolve("cuEventCreate", extra.cuEventCreate) &&
         resolve("cuEventRecord", extra.cuEventRecord) &&
         resolve("cuEventSynchronize", extra.cuEventSynchronize) &&
         resolve("cuEventElapsedTime", extra.cuEventElapsedTime);
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return f ? s.str() : std::string();
}

enum class Mask { None, F32, F16, Bool };

struct Case {
  std::string name;
  bool tc;     // the Tensor Core kernel (f16) or the SIMT kernel
  bool f16;    // storage of Q, K, V and the result
  int64_t b, h, sq, sk, d, dv;
  float scale;
  bool causal = false;
  Mask mask = Mask::None;
  std::vector<int64_t> maskShape; // right-aligned to [b, h, sq, sk]
  // Rows 0..maskedRows-1 of every bool mask keep no key (NaN rows).
  int64_t maskedRows = 0;
  // Q, K and V read as the column blocks of one [b, s, 3, h, d] buffer and
  // the result written [b, sq, h, dv] (views, tessel/attention.h: a merged
  // QKV projection's layout); needs sq = sk and d = dv.
  bool packed = false;
  // The split-keys Tensor Core kernel (tsl_attention_f16_tcsplit_d<HD>,
  // the planner's choice for small grids) instead of the 64-row one.
  bool split = false;
};

struct Data {
  std::vector<double> q, k, v, mask; // the values as stored
  std::vector<uint16_t> q16, k16, v16, mask16;
  std::vector<float> q32, k32, v32, mask32;
  std::vector<uint8_t> maskBool;
  std::vector<double> ref, mag, scoreErr;
};

int64_t numel(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// The mask's element strides over [b, h, sq, sk] (0 where it broadcasts).
std::vector<int64_t> maskStrides(const Case &c) {
  std::vector<int64_t> full = {c.b, c.h, c.sq, c.sk}, strides(4, 0);
  const size_t lead = 4 - c.maskShape.size();
  int64_t stride = 1;
  for (size_t d = c.maskShape.size(); d-- > 0;) {
    if (c.maskShape[d] != 1)
      strides[lead + d] = stride;
    stride *= c.maskShape[d];
  }
  return strides;
}

void fill(std::mt19937 &rng, int64_t n, double lo, double hi, bool f16, std::vector<double> &values,
          std::vector<uint16_t> &halves, std::vector<float> &floats) {
  std::uniform_real_distribution<float> dist(static_cast<float>(lo), static_cast<float>(hi));
  values.resize(n);
  if (f16)
    halves.resize(n);
  else
    floats.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    float x = dist(rng);
    if (f16) {
      halves[i] = toHalf(x);
      values[i] = fromHalf(halves[i]);
    } else {
      floats[i] = x;
      values[i] = x;
    }
  }
}

Data makeData(const Case &c, std::mt19937 &rng) {
  Data data;
  const int64_t bh = c.b * c.h;
  fill(rng, bh * c.sq * c.d, -2, 2, c.f16, data.q, data.q16, data.q32);
  fill(rng, bh * c.sk * c.d, -2, 2, c.f16, data.k, data.k16, data.k32);
  fill(rng, bh * c.sk * c.dv, -2, 2, c.f16, data.v, data.v16, data.v32);
  const int64_t maskCount = numel(c.maskShape);
  if (c.mask == Mask::F32 || c.mask == Mask::F16) {
    fill(rng, maskCount, -3, 1, c.mask == Mask::F16, data.mask, data.mask16, data.mask32);
  } else if (c.mask == Mask::Bool) {
    std::bernoulli_distribution keep(0.7);
    data.maskBool.resize(maskCount);
    data.mask.resize(maskCount);
    const int64_t cols = c.maskShape.back();
    const int64_t rows = c.maskShape.size() >= 2 ? c.maskShape[c.maskShape.size() - 2] : 1;
    for (int64_t i = 0; i < maskCount; ++i) {
      const int64_t row = (i / cols) % rows;
      // Key 0 stays (no row wholly masked), except in the NaN rows.
      bool value = row < c.maskedRows ? false : (i % cols == 0 || keep(rng));
      data.maskBool[i] = value;
      data.mask[i] = value;
    }
  }
  return data;
}

/// The float64 reference, threaded over the rows.
void reference(const Case &c, Data &data) {
  const int64_t bh = c.b * c.h, rows = bh * c.sq;
  data.ref.assign(rows * c.dv, 0.0);
  data.mag.assign(rows * c.dv, 0.0);
  data.scoreErr.assign(rows, 0.0);
  const std::vector<int64_t> ms = maskStrides(c);
  auto work = [&](int64_t first, int64_t step) {
    std::vector<double> s(c.sk), w(c.sk);
    for (int64_t row = first; row < rows; row += step) {
      const int64_t n = row / c.sq, i = row % c.sq, b = n / c.h, h = n % c.h;
      double peak = -INFINITY, qkMax = 0, scoreMax = 0;
      for (int64_t j = 0; j < c.sk; ++j) {
        double dot = 0, qk = 0;
        for (int64_t e = 0; e < c.d; ++e) {
          const double x = data.q[row * c.d + e], y = data.k[(n * c.sk + j) * c.d + e];
          dot += x * y;
          qk += std::fabs(x * y);
        }
        qkMax = std::max(qkMax, qk);
        s[j] = dot * c.scale;
        if (c.mask != Mask::None) {
          const double m = data.mask[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]];
          s[j] = c.mask == Mask::Bool ? (m != 0 ? s[j] : -INFINITY) : s[j] + m;
        }
        if (c.causal && j > i + c.sk - c.sq)
          s[j] = -INFINITY;
        if (std::isfinite(s[j]))
          scoreMax = std::max(scoreMax, std::fabs(s[j]));
        peak = std::max(peak, s[j]);
      }
      data.scoreErr[row] =
          std::ldexp((c.d + 2) * std::fabs(c.scale) * qkMax + 8 * scoreMax, -24);
      const double shift = std::isfinite(peak) ? peak : 0.0;
      double sum = 0;
      for (int64_t j = 0; j < c.sk; ++j)
        sum += w[j] = std::exp(s[j] - shift);
      for (int64_t j = 0; j < c.sk; ++j) {
        const double weight = w[j] / sum;
        for (int64_t e = 0; e < c.dv; ++e) {
          const double term = weight * data.v[(n * c.sk + j) * c.dv + e];
          data.ref[row * c.dv + e] += term;
          data.mag[row * c.dv + e] += std::fabs(term);
        }
      }
    }
  };
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(16, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back(work, t, threads);
  for (std::thread &t : pool)
    t.join();
}

std::string kernelName(const Case &c) {
  if (!c.tc)
    return c.f16 ? "tsl_attention_f16_simt" : "tsl_attention_f32_simt";
  for (int hd : tessel::kernels::kAttentionTcHeadDims)
    if (std::max(c.d, c.dv) <= hd)
      return (c.split ? "tsl_attention_f16_tcsplit_d" : "tsl_attention_f16_tc_d") +
             std::to_string(hd);
  return "";
}

int headDimOf(const std::string &kernel) {
  return std::atoi(kernel.substr(kernel.rfind("_d") + 2).c_str());
}

AttentionParams paramsOf(const Case &c) {
  AttentionParams p{};
  p.batches = c.b * c.h;
  p.heads = c.h;
  p.sq = c.sq;
  p.sk = c.sk;
  p.d = static_cast<int32_t>(c.d);
  p.dv = static_cast<int32_t>(c.dv);
  p.scale = c.scale;
  p.causal = c.causal;
  if (c.packed) {
    const int64_t w = 3 * c.h * c.d;
    p.q = {0, c.sq * w, c.d, w};
    p.k = {c.h * c.d, c.sq * w, c.d, w};
    p.v = {2 * c.h * c.d, c.sq * w, c.d, w};
    p.out = {0, c.sq * c.h * c.dv, c.dv, c.h * c.dv};
  } else {
    p.q = {0, c.h * c.sq * c.d, c.sq * c.d, c.d};
    p.k = {0, c.h * c.sk * c.d, c.sk * c.d, c.d};
    p.v = {0, c.h * c.sk * c.dv, c.sk * c.dv, c.dv};
    p.out = {0, c.h * c.sq * c.dv, c.sq * c.dv, c.dv};
  }
  if (c.mask != Mask::None) {
    std::vector<int64_t> ms = maskStrides(c);
    p.maskB = ms[0];
    p.maskH = ms[1];
    p.maskI = ms[2];
    p.maskJ = ms[3];
    p.maskKind = c.mask == Mask::F32 ? 1 : c.mask == Mask::F16 ? 2 : 3;
  }
  return p;
}

struct Launch {
  unsigned grid[2], shared;
};

Launch launchOf(const Case &c, const std::string &kernel) {
  namespace k = tessel::kernels;
  const int64_t rows = !c.tc ? k::kAttentionSimtRows
                       : c.split ? k::kAttentionSplitRows
                                 : k::kAttentionTcRows;
  const int hd = c.tc ? headDimOf(kernel) : 0;
  Launch l{{static_cast<unsigned>(c.b * c.h), static_cast<unsigned>((c.sq + rows - 1) / rows)},
           !c.tc     ? 0u
           : c.split ? static_cast<unsigned>(k::attentionSplitSharedBytes(hd))
                     : static_cast<unsigned>(k::attentionTcSharedBytes(hd))};
  return l;
}

template <typename T> CUdeviceptr upload(const std::vector<T> &v, size_t guard = 0) {
  CUdeviceptr p = 0;
  const size_t bytes = v.size() * sizeof(T);
  if (!check(driver().cuMemAlloc(&p, bytes + guard + 16), "cuMemAlloc"))
    return 0;
  if (bytes)
    check(driver().cuMemcpyHtoD(p, v.data(), bytes), "cuMemcpyHtoD");
  return p;
}

struct Buffers {
  CUdeviceptr q = 0, k = 0, v = 0, mask = 0, out = 0;
  size_t outBytes = 0;
  static constexpr size_t kGuard = 4096;
  ~Buffers() {
    std::vector<CUdeviceptr> all = {q, k, v, mask, out};
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end()); // packed: q, k and v are one
    for (CUdeviceptr p : all)
      if (p)
        driver().cuMemFree(p);
  }
};

/// The dense [b, h, s, d] Q, K and V as one [b, s, 3, h, d] buffer.
template <typename T>
std::vector<T> pack(const Case &c, const std::vector<T> &q, const std::vector<T> &k,
                    const std::vector<T> &v) {
  std::vector<T> packed(q.size() * 3);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h)
      for (int64_t s = 0; s < c.sq; ++s)
        for (int64_t e = 0; e < c.d; ++e) {
          const int64_t dense = ((b * c.h + h) * c.sq + s) * c.d + e;
          const int64_t at = ((b * c.sq + s) * 3 * c.h + h) * c.d + e;
          packed[at] = q[dense];
          packed[at + c.h * c.d] = k[dense];
          packed[at + 2 * c.h * c.d] = v[dense];
        }
  return packed;
}

/// Where dense result element i ([b, h, sq, dv]) is in the output buffer.
int64_t outputIndex(const Case &c, int64_t i) {
  if (!c.packed)
    return i;
  const int64_t e = i % c.dv, s = i / c.dv % c.sq, h = i / (c.dv * c.sq) % c.h,
                b = i / (c.dv * c.sq * c.h);
  return ((b * c.sq + s) * c.h + h) * c.dv + e;
}

bool upload(const Case &c, const Data &data, Buffers &buf) {
  if (c.packed) {
    buf.q = buf.k = buf.v = c.f16 ? upload(pack(c, data.q16, data.k16, data.v16))
                                  : upload(pack(c, data.q32, data.k32, data.v32));
  } else {
    buf.q = c.f16 ? upload(data.q16) : upload(data.q32);
    buf.k = c.f16 ? upload(data.k16) : upload(data.k32);
    buf.v = c.f16 ? upload(data.v16) : upload(data.v32);
  }
  if (c.mask == Mask::F32)
    buf.mask = upload(data.mask32);
  else if (c.mask == Mask::F16)
    buf.mask = upload(data.mask16);
  else if (c.mask == Mask::Bool)
    buf.mask = upload(data.maskBool);
  buf.outBytes = c.b * c.h * c.sq * c.dv * (c.f16 ? 2 : 4);
  if (!check(driver().cuMemAlloc(&buf.out, buf.outBytes + Buffers::kGuard), "cuMemAlloc"))
    return false;
  // NaN everywhere (0xFF bytes: NaN in f16 and f32), the guard included.
  return check(driver().cuMemsetD8(buf.out, 0xFF, buf.outBytes + Buffers::kGuard), "cuMemsetD8");
}

bool launch(CUfunction f, const Launch &l, Buffers &buf, AttentionParams &p,
            CUstream stream = nullptr) {
  // The mask's address is 0 (a null pointer) where there is none.
  void *args[] = {&buf.q, &buf.k, &buf.v, &buf.mask, &buf.out, &p};
  return check(driver().cuLaunchKernel(f, l.grid[0], l.grid[1], 1,
                                       tessel::kernels::kAttentionThreads, 1, 1, l.shared, stream,
                                       args, nullptr),
               "cuLaunchKernel");
}

CUfunction function(CUmodule module, const std::string &kernel, unsigned shared) {
  CUfunction f = nullptr;
  if (!check(driver().cuModuleGetFunction(&f, module, kernel.c_str()), kernel.c_str()))
    return nullptr;
  if (shared > 48 * 1024 &&
      !check(extra.cuFuncSetAttribute(f, kMaxDynamicSharedBytes, static_cast<int>(shared)),
             "cuFuncSetAttribute"))
    return nullptr;
  return f;
}

/// Runs case `c` from `module` and compares; prints PASS or FAIL.
bool runCase(const Case &c, const Data &data, CUmodule module, const char *image) {
  const std::string kernel = kernelName(c);
  const Launch l = launchOf(c, kernel);
  CUfunction f = function(module, kernel, l.shared);
  Buffers buf;
  AttentionParams p = paramsOf(c);
  if (!f || !upload(c, data, buf) || !launch(f, l, buf, p) ||
      !check(driver().cuCtxSynchronize(), "cuCtxSynchronize")) {
    std::printf("FAIL %s (%s, %s): could not run\n", c.name.c_str(), kernel.c_str(), image);
    return false;
  }
  std::vector<uint8_t> bytes(buf.outBytes + Buffers::kGuard);
  check(driver().cuMemcpyDtoH(bytes.data(), buf.out, bytes.size()), "cuMemcpyDtoH");
  int bad = 0;
  double worst = 0;
  for (size_t i = buf.outBytes; i < bytes.size(); ++i)
    if (bytes[i] != 0xFF && bad++ < 3)
      std::printf("  guard byte %zu past the result was written\n", i - buf.outBytes);
  const int64_t n = static_cast<int64_t>(data.ref.size());
  for (int64_t i = 0; i < n; ++i) {
    double got;
    const int64_t at = outputIndex(c, i);
    if (c.f16) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * at, 2);
      got = fromHalf(h);
    } else {
      float x;
      std::memcpy(&x, bytes.data() + 4 * at, 4);
      got = x;
    }
    const double ref = data.ref[i], mag = data.mag[i];
    const int64_t row = i / c.dv;
    const double tol =
        (c.f16 ? std::ldexp(std::fabs(ref), -11) + std::ldexp(1.0, -25) : std::ldexp(std::fabs(ref), -24)) +
        (c.tc ? 2 * std::ldexp(mag, -11) : 0) + data.scoreErr[row] * mag +
        std::ldexp((c.sk + 8) * mag, -24) + std::ldexp(mag, -21);
    const bool ok = std::isnan(ref) ? std::isnan(got) : std::fabs(got - ref) <= tol;
    if (!std::isnan(ref) && tol > 0)
      worst = std::max(worst, std::fabs(got - ref) / tol);
    if (!ok && bad++ < 5)
      std::printf("  element %lld (row %lld, dim %lld): got %.8g, want %.8g, tolerance %.3g\n",
                  static_cast<long long>(i), static_cast<long long>(row),
                  static_cast<long long>(i % c.dv), got, ref, tol);
  }
  std::printf("%s %s (%s, %s): %s, error at most %.3f of the tolerance\n", bad ? "FAIL" : "PASS",
              c.name.c_str(), kernel.c_str(), image, bad ? "mismatches" : "matches", worst);
  return bad == 0;
}

std::vector<Case> cases(bool quick) {
  using M = Mask;
  std::vector<Case> list = {
      // name, tc, f16, b, h, sq, sk, d, dv, scale, causal, mask, maskShape, maskedRows
      {"plain-d64", true, true, 2, 3, 100, 130, 64, 64, 0.125f},
      {"causal-d64", true, true, 1, 2, 64, 64, 64, 64, 0.125f, true},
      {"padded-40x72-bool-causal", true, true, 2, 2, 77, 200, 40, 72, 0.158f, true, M::Bool, {2, 1, 1, 200}},
      {"d96-f32-mask", true, true, 1, 4, 96, 96, 96, 96, 0.102f, false, M::F32, {96, 96}},
      {"rank3-d80-f16-mask", true, true, 6, 1, 33, 47, 80, 80, 0.11f, false, M::F16, {6, 1, 47}},
      {"one-query", true, true, 2, 2, 1, 300, 128, 128, 0.088f, true, M::F16, {2, 1, 1, 300}},
      {"nan-rows", true, true, 1, 2, 20, 50, 64, 64, 0.125f, false, M::Bool, {1, 2, 20, 50}, 3},
      {"causal-sq-gt-sk", true, true, 1, 1, 70, 40, 64, 64, 0.125f, true},
      {"simt-f32-d100", false, false, 2, 2, 37, 90, 100, 56, 0.1f, true, M::F32, {1, 2, 37, 90}},
      {"simt-f16-bool", false, true, 1, 3, 40, 70, 64, 64, 0.125f, false, M::Bool, {1, 3, 1, 70}},
      {"simt-f32-nan-rows", false, false, 1, 1, 10, 33, 16, 8, 0.25f, false, M::Bool, {10, 33}, 2},
      {"packed-bert-d64", true, true, 2, 12, 128, 128, 64, 64, 0.125f, false, M::F16, {2, 1, 1, 128}, 0, true},
      {"packed-causal-77-d96", true, true, 2, 3, 77, 77, 96, 96, 0.102f, true, M::None, {}, 0, true},
      // Keys in two tiles: causal with a partial second tile and dims
      // padded to 64, and 32-key tiles of head dim 128.
      {"two-key-tiles-causal-d40", true, true, 2, 3, 96, 120, 40, 40, 0.158f, true, M::Bool, {2, 1, 1, 120}},
      {"two-key-tiles-d128", true, true, 1, 2, 70, 64, 128, 128, 0.088f},
      {"simt-f16-packed-causal", false, true, 2, 4, 50, 50, 64, 64, 0.125f, true, M::None, {}, 0, true},
      {"simt-f32-packed-mask", false, false, 1, 3, 33, 33, 40, 40, 0.158f, false, M::F32, {1, 1, 1, 33}, 0, true},
  };
  if (!quick) {
    std::vector<Case> large = {
        {"long-rows-d128", true, true, 1, 2, 130, 4100, 128, 128, 0.088f, false, M::F16, {1, 2, 130, 4100}},
        {"long-rows-d64-bool", true, true, 2, 1, 65, 5000, 64, 64, 0.125f, false, M::Bool, {2, 1, 1, 5000}},
        {"causal-s2048-d128", true, true, 1, 4, 2048, 2048, 128, 128, 0.088f, true},
        {"b8-h12-s512-d64", true, true, 8, 12, 512, 512, 64, 64, 0.125f},
        {"simt-f32-long", false, false, 1, 2, 20, 4096, 64, 64, 0.125f, false, M::F32, {4096}},
        {"simt-f16-causal-d128", false, true, 1, 2, 300, 300, 128, 128, 0.088f, true},
    };
    list.insert(list.end(), large.begin(), large.end());
  }
  // Every Tensor Core case again on the split-keys kernel.
  const size_t plain = list.size();
  for (size_t i = 0; i < plain; ++i)
    if (list[i].tc) {
      Case split = list[i];
      split.name = "split-" + split.name;
      split.split = true;
      list.push_back(split);
    }
  return list;
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// The median time of `reps` launches of `c`'s kernel from `module`, in ms,
/// after `warmups` launches.
double timeKernel(const Case &c, CUmodule module, int reps, int warmups = 10) {
  std::mt19937 rng(7);
  Data data = makeData(c, rng);
  const std::string kernel = kernelName(c);
  const Launch l = launchOf(c, kernel);
  CUfunction f = function(module, kernel, l.shared);
  Buffers buf;
  AttentionParams p = paramsOf(c);
  if (!f || !upload(c, data, buf))
    return -1;
  CUevent start, stop;
  extra.cuEventCreate(&start, 0);
  extra.cuEventCreate(&stop, 0);
  for (int i = 0; i < warmups; ++i)
    launch(f, l, buf, p);
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) {
    extra.cuEventRecord(start, nullptr);
    launch(f, l, buf, p);
    extra.cuEventRecord(stop, nullptr);
    extra.cuEventSynchronize(stop);
    float ms = 0;
    extra.cuEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  return median(times);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIBRARY_DIR [--quick] [--bench] [--image FILE]...\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool quick = false, bench = false, profile = false;
  std::vector<std::string> images;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--bench")
      bench = true;
    else if (a == "--profile")
      profile = true;
    else if (a == "--image" && i + 1 < argc)
      images.push_back(argv[++i]);
  }
  int major = 0, minor = 0;
  switch (openDevice(major, minor)) {
  case Open::Skip: return 0;
  case Open::Fail: return 1;
  case Open::Ready: break;
  }
  if (!resolveExtra()) {
    std::printf("FAIL: libcuda.so.1 lacks cuFuncSetAttribute or the event functions\n");
    return 1;
  }
  const int arch = major * 10 + minor;
  std::printf("device sm_%d\n", arch);
  if (arch < 75) {
    std::printf("SKIP: the library's kernels need compute capability 7.5\n");
    return 0;
  }
  std::string ptx = readFile(dir + "/attention.ptx");
  std::string cubin = readFile(dir + "/attention.sm_" + std::to_string(arch) + ".cubin");
  if (ptx.empty()) {
    std::printf("FAIL: no %s/attention.ptx\n", dir.c_str());
    return 1;
  }
  std::vector<std::pair<std::string, CUmodule>> modules;
  for (auto [name, image] : {std::pair<std::string, std::string *>("ptx", &ptx),
                             std::pair<std::string, std::string *>("cubin", &cubin)}) {
    if (image->empty())
      continue;
    CUmodule m = nullptr;
    if (!check(driver().cuModuleLoadData(&m, image->c_str()), ("cuModuleLoadData " + name).c_str()))
      return 1;
    modules.emplace_back(name, m);
  }
  auto split = [](Case c) {
    c.name = "split " + c.name;
    c.split = true;
    return c;
  };
  // The two shapes, then the transformer rows' own at small batch
  // (ViT-B/16 b1, GPT-2 b1, BERT b8), on both Tensor Core kernels; ViT b32.
  const Case vit{"b1 h12 s197 d64", true, true, 1, 12, 197, 197, 64, 64, 0.125f};
  const Case gpt{"b1 h12 s128 d64 causal", true, true, 1, 12, 128, 128, 64, 64, 0.125f, true};
  const Case bert{"b8 h12 s128 d64", true, true, 8, 12, 128, 128, 64, 64, 0.125f};
  const Case shapes[] = {
      {"b8 h12 s512 d64", true, true, 8, 12, 512, 512, 64, 64, 0.125f},
      {"b1 h16 s2048 d128 causal", true, true, 1, 16, 2048, 2048, 128, 128, 0.0884f, true},
      {"simt b8 h12 s512 d64", false, true, 8, 12, 512, 512, 64, 64, 0.125f},
      vit, split(vit), gpt, split(gpt), bert, split(bert),
      {"b32 h12 s197 d64", true, true, 32, 12, 197, 197, 64, 64, 0.125f}, // ViT-B/16 b32
  };
  if (profile) {
    for (const Case &c : shapes)
      timeKernel(c, modules.back().second, 1, /*warmups=*/0); // one launch a shape
    return 0;
  }
  int failures = 0, runs = 0;
  std::mt19937 rng(20261126);
  for (const Case &c : cases(quick)) {
    Data data = makeData(c, rng);
    reference(c, data);
    for (auto &[name, module] : modules) {
      ++runs;
      if (!runCase(c, data, module, name.c_str()))
        ++failures;
    }
  }
  std::printf("%s: %d of %d runs passed\n", failures ? "FAIL" : "PASS", runs - failures, runs);

  if (bench) {
    std::vector<std::pair<std::string, CUmodule>> timed = {modules.back()};
    for (const std::string &path : images) {
      std::string image = readFile(path);
      CUmodule m = nullptr;
      if (!image.empty() && check(driver().cuModuleLoadData(&m, image.c_str()), path.c_str()))
        timed.emplace_back(path, m);
    }
    for (const Case &c : shapes)
      for (auto &[name, module] : timed) {
        const double ms = timeKernel(c, module, 100);
        // Multiply-adds of both products (4 flops per score element and head
        // dim), halved under a causal mask.
        const double flops = 4.0 * c.b * c.h * c.sq * c.sk * c.d * (c.causal ? 0.5 : 1.0);
        std::printf("bench %s (%s, %s): median %.4f ms, %.1f TFLOP/s\n", c.name.c_str(),
                    kernelName(c).c_str(), name.c_str(), ms, flops / (ms * 1e-3) / 1e12);
      }
  }
  return failures ? 1 : 0;
}
