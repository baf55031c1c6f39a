//===- wmma_gemm_check.cpp - run one generated GEMM kernel on the GPU -----===//
//
// Usage: tessel-gpu-gemm-check kernel.ptx M N K
//
// Loads the PTX written by tessel-codegen-gemm (its first line gives the
// kernel name and launch shape), runs C = A * B on random f16 A and B, and
// compares C with a float64 CPU reference by ||C - ref|| / ||ref||.
// Prints PASS or FAIL with the relative error; exits 0 on PASS, 1 otherwise.
//
// Nothing of CUDA is linked: libcuda.so.1 is opened with dlopen, so the
// binary builds and runs anywhere; without a driver it prints SKIP, exits 0.
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tessel::gpucheck;

namespace {

struct Launch {
  std::string kernel, out;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  unsigned shared = 0;
  long m = 0, n = 0, k = 0;
};

bool parseLaunch(const std::string &ptx, Launch &l) {
  std::istringstream in(ptx.substr(0, ptx.find('\n')));
  std::string word;
  in >> word >> word;
  if (word != "tessel-launch")
    return false;
  while (in >> word) {
    size_t eq = word.find('=');
    std::string key = word.substr(0, eq), v = word.substr(eq + 1);
    if (key == "kernel")
      l.kernel = v;
    else if (key == "out")
      l.out = v;
    else if (key == "grid")
      std::sscanf(v.c_str(), "%u,%u,%u", &l.grid[0], &l.grid[1], &l.grid[2]);
    else if (key == "block")
      std::sscanf(v.c_str(), "%u,%u,%u", &l.block[0], &l.block[1],
                  &l.block[2]);
    else if (key == "shared")
      l.shared = unsigned(std::stoul(v));
    else if (key == "m")
      l.m = std::stol(v);
    else if (key == "n")
      l.n = std::stol(v);
    else if (key == "k")
      l.k = std::stol(v);
  }
  return !l.kernel.empty() && l.grid[0] && l.block[0] &&
         (l.out == "f32" || l.out == "f16");
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s kernel.ptx M N K\n", argv[0]);
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::string ptx((std::istreambuf_iterator<char>(file)), {});
  Launch l;
  if (ptx.empty() || !parseLaunch(ptx, l)) {
    std::fprintf(stderr,
                 "FAIL: %s has no '// tessel-launch' first line "
                 "(write it with tessel-codegen-gemm)\n",
                 argv[1]);
    return 1;
  }
  const long m = std::atol(argv[2]), n = std::atol(argv[3]),
             k = std::atol(argv[4]);
  if (m != l.m || n != l.n || k != l.k) {
    std::fprintf(stderr, "FAIL: %s was generated for %ldx%ldx%ld, not %ldx%ldx%ld\n",
                 argv[1], l.m, l.n, l.k, m, n, k);
    return 1;
  }

  int major = 0, minor = 0;
  switch (openDevice(major, minor)) {
  case Open::Skip: return 0;
  case Open::Fail: return 1;
  case Open::Ready: break;
  }
  Driver &d = driver();
  std::printf("device sm_%d%d, kernel %s, %ldx%ldx%ld, C %s, grid %u,%u,%u "
              "block %u,%u,%u\n",
              major, minor, l.kernel.c_str(), m, n, k, l.out.c_str(),
              l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
              l.block[2]);

  CUmodule module;
  CUfunction fn;
  if (!check(d.cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData") ||
      !check(d.cuModuleGetFunction(&fn, module, l.kernel.c_str()),
             "cuModuleGetFunction"))
    return 1;

  // Random f16 operands, never zero, from a fixed seed.
  std::mt19937 rng(20261122);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto fill = [&](std::vector<uint16_t> &h, std::vector<double> &v) {
    for (size_t i = 0; i < h.size(); ++i) {
      float x;
      do
        x = fromHalf(toHalf(dist(rng)));
      while (x == 0.0f);
      h[i] = toHalf(x);
      v[i] = x;
    }
  };
  std::vector<uint16_t> aH(m * k), bH(k * n);
  std::vector<double> a(m * k), b(k * n), ref(m * n, 0.0);
  fill(aH, a);
  fill(bH, b);
  for (long i = 0; i < m; ++i)
    for (long p = 0; p < k; ++p)
      for (long j = 0; j < n; ++j)
        ref[i * n + j] += a[i * k + p] * b[p * n + j];

  const bool outF16 = l.out == "f16";
  const size_t cBytes = size_t(m * n) * (outF16 ? 2 : 4);
  // Poison C (all-ones bytes: NaN in f32 and f16) so that an element the
  // kernel never writes fails the comparison.
  std::vector<unsigned char> cHost(cBytes, 0xff);
  CUdeviceptr dA, dB, dC;
  if (!check(d.cuMemAlloc(&dA, aH.size() * 2), "cuMemAlloc A") ||
      !check(d.cuMemAlloc(&dB, bH.size() * 2), "cuMemAlloc B") ||
      !check(d.cuMemAlloc(&dC, cBytes), "cuMemAlloc C") ||
      !check(d.cuMemcpyHtoD(dA, aH.data(), aH.size() * 2), "copy A") ||
      !check(d.cuMemcpyHtoD(dB, bH.data(), bH.size() * 2), "copy B") ||
      !check(d.cuMemcpyHtoD(dC, cHost.data(), cBytes), "poison C"))
    return 1;
  void *args[] = {&dA, &dB, &dC};
  if (!check(d.cuLaunchKernel(fn, l.grid[0], l.grid[1], l.grid[2], l.block[0],
                              l.block[1], l.block[2], 0, nullptr, args,
                              nullptr),
             "cuLaunchKernel") ||
      !check(d.cuCtxSynchronize(), "kernel") ||
      !check(d.cuMemcpyDtoH(cHost.data(), dC, cBytes), "copy C"))
    return 1;
  d.cuMemFree(dA);
  d.cuMemFree(dB);
  d.cuMemFree(dC);

  double errSq = 0, refSq = 0;
  long bad = 0;
  for (long i = 0; i < m * n; ++i) {
    double c;
    if (outF16) {
      uint16_t h;
      std::memcpy(&h, &cHost[i * 2], 2);
      c = fromHalf(h);
    } else {
      float f;
      std::memcpy(&f, &cHost[i * 4], 4);
      c = f;
    }
    if (!std::isfinite(c))
      ++bad;
    errSq += (c - ref[i]) * (c - ref[i]);
    refSq += ref[i] * ref[i];
  }
  double rel = std::sqrt(errSq / refSq);
  // f16 operands are exact in f32 accumulation, so f32 C differs from the
  // float64 reference only by f32 rounding; f16 C adds one f16 rounding.
  double tolerance = outF16 ? 1e-3 : 1e-5;
  bool pass = bad == 0 && rel < tolerance;
  std::printf("%s: relative error %.3g (tolerance %.0e), %ld non-finite of %ld\n",
              pass ? "PASS" : "FAIL", rel, tolerance, bad, m * n);
  return pass ? 0 : 1;
}
