//===- implicit_gemm_check.cpp - run generated implicit-GEMM kernels ------===//
//
// Usage: tessel-gpu-igemm-check KERNEL.ptx...
//
// Each PTX file is written by `tessel-codegen-gemm --conv/--gemm/--matmul`;
// its first line (// tessel-igemm ...) gives the kernel, its launch, and the
// problem: the op's shapes, dtypes and epilogue. The check fills the operands
// with random values (of the operands' dtype), runs the kernel loaded from
// the PTX (the driver compiles it) and, where KERNEL.ptx.sm_XY.cubin exists
// for the device's SM, again from that cubin (nvJitLink's, as engines carry
// it), and compares the result with a float64 reference computed here from
// the op's definition (ONNX Conv on NHWC/OHWI, Gemm, MatMul, then the
// CPU tier's epilogue). Prints PASS or FAIL per run with the largest error
// relative to the largest reference magnitude; exits 1 if any run fails.
//
// The result buffer is poisoned (NaN) with a guard tail, so that an element
// never written or a write past the end fails too. Without a driver or GPU
// it prints SKIP and exits 0.
//
//===----------------------------------------------------------------------===//
#include "CudaCheck.h"
#include "Reference.h"
#include "TestTensor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tessel::gpucheck;

namespace {

struct Problem {
  std::string kernel, tier, op, file;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  bool aF16 = true, bF16 = true, outF16 = true;
  std::string addend = "none", residual = "none", act = "none";
  double actAlpha = 0, actBeta = 0, alpha = 1, beta = 1;
  long m = 0, n = 0, k = 0, batch = 1;
  // conv: N,H,W,C,Cout,kH,kW,sH,sW,pH,pW,dH,dW,group,OH,OW
  std::vector<long> conv;
  bool transA = false, transB = false;
  long cRowStride = 0, cColStride = 1;
  std::vector<std::vector<long>> batchDims; // extent, aStride, bStride
  // Split-K: the partial sums' workspace and the reduction kernel.
  long split = 1;
  unsigned shared = 0; ///< dynamic shared bytes (tc-sm80)
  // tc-sm90 with TMA (tma=1): the kernel takes A's and B's tensor maps
  // first, boxes of the block tile's rows by blockK.
  bool tma = false;
  // With TMA stores (tma_store=1), the output's map third: [M][N] f16, boxes
  // of 64 x 64.
  bool tmaStore = false;
  unsigned blockM = 0, blockN = 0, blockK = 0;
  size_t workspace = 0;
  std::string reduce;
  unsigned reduceGrid[3] = {0, 0, 0}, reduceBlock[3] = {0, 0, 0};
};

std::vector<long> longs(const std::string &text, char sep) {
  std::vector<long> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep))
    values.push_back(std::stol(item));
  return values;
}

bool parseHeader(const std::string &ptx, Problem &p) {
  std::istringstream in(ptx.substr(0, ptx.find('\n')));
  std::string word;
  in >> word >> word;
  if (word != "tessel-igemm")
    return false;
  std::map<std::string, std::string> kv;
  while (in >> word) {
    size_t eq = word.find('=');
    if (eq != std::string::npos)
      kv[word.substr(0, eq)] = word.substr(eq + 1);
  }
  p.kernel = kv["kernel"];
  if (kv.count("shared"))
    p.shared = unsigned(std::stoul(kv["shared"]));
  p.tier = kv["tier"];
  p.tma = kv["tma"] == "1";
  p.tmaStore = kv["tma_store"] == "1";
  std::sscanf(kv["tile"].c_str(), "%ux%ux%u", &p.blockM, &p.blockN, &p.blockK);
  p.op = kv["op"];
  std::sscanf(kv["grid"].c_str(), "%u,%u,%u", &p.grid[0], &p.grid[1], &p.grid[2]);
  std::sscanf(kv["block"].c_str(), "%u,%u,%u", &p.block[0], &p.block[1], &p.block[2]);
  p.aF16 = kv["a"] == "f16";
  p.bF16 = kv["b"] == "f16";
  p.outF16 = kv["out"] == "f16";
  p.addend = kv["addend"];
  p.residual = kv["residual"];
  p.act = kv["act"];
  p.actAlpha = std::stod(kv["act_alpha"]);
  p.actBeta = std::stod(kv["act_beta"]);
  p.m = std::stol(kv["m"]);
  p.n = std::stol(kv["n"]);
  p.k = std::stol(kv["k"]);
  p.batch = std::stol(kv["batch"]);
  if (kv.count("split")) {
    p.split = std::stol(kv["split"]);
    p.workspace = std::stoul(kv["workspace"]);
    p.reduce = kv["reduce"];
    std::sscanf(kv["reduce_grid"].c_str(), "%u,%u,%u", &p.reduceGrid[0], &p.reduceGrid[1],
                &p.reduceGrid[2]);
    std::sscanf(kv["reduce_block"].c_str(), "%u,%u,%u", &p.reduceBlock[0], &p.reduceBlock[1],
                &p.reduceBlock[2]);
    if (p.reduce.empty() || !p.workspace || !p.reduceGrid[0] || !p.reduceBlock[0])
      return false;
  }
  if (p.op == "conv") {
    p.conv = longs(kv["conv"], ',');
    if (p.conv.size() != 16)
      return false;
  } else if (p.op == "gemm") {
    p.transA = kv["trans_a"] == "1";
    p.transB = kv["trans_b"] == "1";
    p.alpha = std::stod(kv["alpha"]);
    p.beta = std::stod(kv["beta"]);
    std::vector<long> s = longs(kv["c_strides"], ',');
    p.cRowStride = s.at(0);
    p.cColStride = s.at(1);
  } else if (p.op == "matmul") {
    if (kv["batch_dims"] != "none") {
      std::stringstream dims(kv["batch_dims"]);
      std::string dim;
      while (std::getline(dims, dim, ';'))
        p.batchDims.push_back(longs(dim, ':'));
    }
  } else {
    return false;
  }
  return !p.kernel.empty() && p.grid[0] && p.block[0];
}

using tessel::test::Operand;

/// TESSEL_IGEMM_TIME_ONLY=1: kernels timed without the float64 reference
/// (minutes on the host for 4096^3 or a batch-256 conv), nothing compared:
/// tile sweeps only.
bool timeOnly() { return std::getenv("TESSEL_IGEMM_TIME_ONLY") != nullptr; }

Operand randomOperand(size_t count, bool f16, std::mt19937 &rng) {
  const tessel::cpu::DType dtype = f16 ? tessel::cpu::DType::F16 : tessel::cpu::DType::F32;
  if (!timeOnly())
    return tessel::test::randomOperand(dtype, static_cast<int64_t>(count), rng);
  // Timing only: one random block repeated (no doubles kept), seconds less a
  // batch-256 operand of hundreds of millions of elements.
  const size_t block = std::min<size_t>(count, 4096);
  Operand seed = tessel::test::randomOperand(dtype, static_cast<int64_t>(block), rng);
  Operand o{tessel::test::Tensor(dtype, {static_cast<int64_t>(count)}), {}};
  const size_t bytes = seed.tensor.bytes().size() - 1, total = o.tensor.bytes().size() - 1;
  for (size_t at = 0; at < total; at += bytes)
    std::memcpy(o.tensor.as<uint8_t>() + at, seed.tensor.as<uint8_t>(),
                std::min(bytes, total - at));
  return o;
}

/// The CPU tier's epilogue activations (the references' ONNX definitions).
double activate(const Problem &p, double v) {
  return tessel::test::refActivation({p.act.c_str(), p.actAlpha, p.actBeta}, v);
}

struct Operands {
  Operand a, b, addend, residual;
  size_t outCount = 0;
  std::vector<double> ref;
};

Operands makeOperands(const Problem &p, std::mt19937 &rng) {
  Operands o;
  const bool addendF16 = p.addend == "f16", residualF16 = p.residual == "f16";
  if (p.op == "conv") {
    const std::vector<long> &c = p.conv;
    const long N = c[0], H = c[1], W = c[2], C = c[3], CO = c[4], KH = c[5], KW = c[6],
               SH = c[7], SW = c[8], PH = c[9], PW = c[10], DH = c[11], DW = c[12], G = c[13],
               OH = c[14], OW = c[15];
    const long CG = C / G, NG = CO / G;
    o.a = randomOperand(N * H * W * C, p.aF16, rng);
    o.b = randomOperand(CO * KH * KW * CG, p.bF16, rng);
    if (p.addend != "none")
      o.addend = randomOperand(CO, addendF16, rng);
    o.outCount = N * OH * OW * CO;
    if (p.residual != "none")
      o.residual = randomOperand(o.outCount, residualF16, rng);
    if (timeOnly())
      return o;
    o.ref.resize(o.outCount);
    for (long n = 0; n < N; ++n)
      for (long oh = 0; oh < OH; ++oh)
        for (long ow = 0; ow < OW; ++ow)
          for (long co = 0; co < CO; ++co) {
            const long g = co / NG;
            double acc = 0;
            for (long kh = 0; kh < KH; ++kh)
              for (long kw = 0; kw < KW; ++kw) {
                const long ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue;
                const double *x = &o.a.values[((n * H + ih) * W + iw) * C + g * CG];
                const double *w = &o.b.values[((co * KH + kh) * KW + kw) * CG];
                for (long ci = 0; ci < CG; ++ci)
                  acc += x[ci] * w[ci];
              }
            const long at = ((n * OH + oh) * OW + ow) * CO + co;
            if (!o.addend.values.empty())
              acc += o.addend.values[co];
            if (!o.residual.values.empty())
              acc += o.residual.values[at];
            o.ref[at] = activate(p, acc);
          }
    return o;
  }
  const long M = p.m, N = p.n, K = p.k;
  if (p.op == "gemm") {
    o.a = randomOperand(M * K, p.aF16, rng);
    o.b = randomOperand(K * N, p.bF16, rng);
    if (p.addend != "none")
      o.addend = randomOperand((M - 1) * p.cRowStride + (N - 1) * p.cColStride + 1, addendF16, rng);
    o.outCount = M * N;
    if (timeOnly())
      return o;
    o.ref.resize(o.outCount);
    for (long i = 0; i < M; ++i)
      for (long j = 0; j < N; ++j) {
        double acc = 0;
        for (long q = 0; q < K; ++q)
          acc += o.a.values[p.transA ? q * M + i : i * K + q] *
                 o.b.values[p.transB ? j * K + q : q * N + j];
        double v = p.alpha * acc;
        if (!o.addend.values.empty())
          v += p.beta * o.addend.values[i * p.cRowStride + j * p.cColStride];
        o.ref[i * N + j] = activate(p, v);
      }
    return o;
  }
  // matmul
  long aMatrices = 1, bMatrices = 1;
  for (const std::vector<long> &d : p.batchDims) {
    aMatrices += (d[0] - 1) * d[1];
    bMatrices += (d[0] - 1) * d[2];
  }
  o.a = randomOperand(aMatrices * M * K, p.aF16, rng);
  o.b = randomOperand(bMatrices * K * N, p.bF16, rng);
  o.outCount = p.batch * M * N;
  if (timeOnly())
    return o;
  o.ref.resize(o.outCount);
  for (long z = 0; z < p.batch; ++z) {
    long rest = z, aOff = 0, bOff = 0;
    for (size_t d = p.batchDims.size(); d-- > 0;) {
      long index = rest % p.batchDims[d][0];
      rest /= p.batchDims[d][0];
      aOff += index * p.batchDims[d][1] * M * K;
      bOff += index * p.batchDims[d][2] * K * N;
    }
    for (long i = 0; i < M; ++i)
      for (long j = 0; j < N; ++j) {
        double acc = 0;
        for (long q = 0; q < K; ++q)
          acc += o.a.values[aOff + i * K + q] * o.b.values[bOff + q * N + j];
        o.ref[(z * M + i) * N + j] = activate(p, acc);
      }
  }
  return o;
}

bool upload(const Operand &t, CUdeviceptr &ptr, const char *what) {
  Driver &d = driver();
  const std::vector<uint8_t> &bytes = t.tensor.bytes();
  return check(d.cuMemAlloc(&ptr, std::max<size_t>(bytes.size(), 16)), what) &&
         check(d.cuMemcpyHtoD(ptr, bytes.data(), bytes.size()), what);
}

/// Runs the kernel of `image` (PTX text or a cubin) once and compares.
bool run(const Problem &p, const Operands &o, const std::string &image, const std::string &how) {
  Driver &d = driver();
  CUmodule module;
  CUfunction fn, reduceFn = nullptr;
  if (!check(d.cuModuleLoadData(&module, image.c_str()), "cuModuleLoadData") ||
      !check(d.cuModuleGetFunction(&fn, module, p.kernel.c_str()), "cuModuleGetFunction") ||
      // Set on every request, as the runtime does: the PTX's static shared
      // bytes (its one-byte __dynamic_shmem__0) count toward the 48 KiB
      // default too, so 48 KiB of dynamic shared memory needs it as well.
      (p.shared > 0 &&
       !check(d.cuFuncSetAttribute(fn, kMaxDynamicSharedSizeBytes, int(p.shared)),
              "cuFuncSetAttribute (dynamic shared memory)")) ||
      (p.split > 1 &&
       !check(d.cuModuleGetFunction(&reduceFn, module, p.reduce.c_str()), "cuModuleGetFunction")))
    return false;
  const size_t outBytes = o.outCount * (p.outF16 ? 2 : 4), guard = 256;
  // All-ones bytes: NaN in f32 and f16.
  std::vector<unsigned char> out(outBytes + guard, 0xff);
  CUdeviceptr dA = 0, dB = 0, dAddend = 0, dResidual = 0, dOut = 0, dWorkspace = 0;
  // Split-K: the partial sums take A, B and the workspace; the reduction
  // takes the workspace and the epilogue's operands.
  std::vector<void *> partialArgs = {&dA, &dB, &dWorkspace};
  std::vector<void *> args = {&dA, &dB};
  if (p.split > 1)
    args = {&dWorkspace};
  bool ok = upload(o.a, dA, "A") && upload(o.b, dB, "B");
  // TMA: A [M, K] and B [N, K] (both K-major, the only kind such kernels
  // take), 128-byte swizzled boxes, zero fill past the edges; a windowed
  // conv's A in im2col mode: the NHWC input as {C, W, H, N}, boxes of
  // blockK channels of blockM output positions, the box from the first
  // output's window origin to the last's.
  CUdeviceptr dMaps[3] = {0, 0, 0};
  if (ok && p.tma) {
    if (!d.cuTensorMapEncodeTiled || !d.cuTensorMapEncodeIm2col) {
      std::fprintf(stderr, "FAIL: the driver has no cuTensorMapEncodeTiled or Im2col\n");
      return false;
    }
    alignas(64) unsigned char maps[2][128];
    const uint64_t rows[2] = {uint64_t(p.m), uint64_t(p.n)};
    const unsigned boxRows[2] = {p.blockM, p.blockN};
    const CUdeviceptr bases[2] = {dA, dB};
    // conv: n, h, w, c, k, r, s, stride h, w, pad h, w, dilation h, w, group,
    // out h, w.
    const std::vector<long> &cv = p.conv;
    const bool windowed = p.op == "conv" && (cv[5] != 1 || cv[6] != 1 || cv[7] != 1 ||
                                             cv[8] != 1 || cv[9] != 0 || cv[10] != 0);
    // MN-major (a gemm's A with transA, B without transB; a matmul's B):
    // rows of M (N) for each k, boxes of 64 by blockK.
    const bool mnMajor[2] = {p.op == "gemm" && p.transA,
                             p.op == "matmul" || (p.op == "gemm" && !p.transB)};
    for (int i = 0; ok && i < 2; ++i) {
      uint64_t dims[2] = {uint64_t(p.k), rows[i]}, strides[1] = {uint64_t(p.k) * 2};
      unsigned box[2] = {p.blockK, boxRows[i]};
      const unsigned unit[2] = {1, 1};
      if (mnMajor[i]) {
        dims[0] = rows[i];
        dims[1] = uint64_t(p.k);
        strides[0] = rows[i] * 2;
        box[0] = 64;
        box[1] = p.blockK;
      }
      if (i == 0 && windowed) {
        const uint64_t pixel = uint64_t(cv[3]) * 2;
        const uint64_t nhwc[4] = {uint64_t(cv[3]), uint64_t(cv[2]), uint64_t(cv[1]),
                                  uint64_t(cv[0])};
        const uint64_t nhwcStrides[3] = {pixel, pixel * cv[2], pixel * cv[2] * cv[1]};
        // The last output's window origin, (out - 1) * stride - pad, from
        // the last input index.
        const int lower[2] = {int(-cv[10]), int(-cv[9])};
        const int upper[2] = {int((cv[15] - 1) * cv[8] - cv[10] - (cv[2] - 1)),
                              int((cv[14] - 1) * cv[7] - cv[9] - (cv[1] - 1))};
        const unsigned steps[4] = {1, unsigned(cv[8]), unsigned(cv[7]), 1};
        ok = check(d.cuTensorMapEncodeIm2col(maps[i], /*FLOAT16*/ 6, 4,
                                             reinterpret_cast<void *>(bases[i]), nhwc,
                                             nhwcStrides, lower, upper, p.blockK, p.blockM,
                                             steps, 0, 3, 3, 0),
                   "cuTensorMapEncodeIm2col") &&
             check(d.cuMemAlloc(&dMaps[i], 128), "tensor map") &&
             check(d.cuMemcpyHtoD(dMaps[i], maps[i], 128), "tensor map");
        continue;
      }
      ok = check(d.cuTensorMapEncodeTiled(maps[i], /*FLOAT16*/ 6, 2,
                                          reinterpret_cast<void *>(bases[i]), dims, strides, box,
                                          unit, /*no interleave*/ 0, /*128B swizzle*/ 3,
                                          /*L2 256B*/ 3, /*zero fill*/ 0),
                 "cuTensorMapEncodeTiled") &&
           check(d.cuMemAlloc(&dMaps[i], 128), "tensor map") &&
           check(d.cuMemcpyHtoD(dMaps[i], maps[i], 128), "tensor map");
    }
    args.insert(args.begin(), {&dMaps[0], &dMaps[1]});
  }
  if (ok && p.split > 1)
    ok = check(d.cuMemAlloc(&dWorkspace, p.workspace), "workspace") &&
         check(d.cuMemsetD8(dWorkspace, 0xff, p.workspace), "poison workspace") &&
         check(d.cuLaunchKernel(fn, p.grid[0], p.grid[1], p.grid[2], p.block[0], p.block[1],
                                p.block[2], p.shared, nullptr, partialArgs.data(), nullptr),
               "cuLaunchKernel (partial sums)");
  if (ok && p.addend != "none") {
    ok = upload(o.addend, dAddend, "addend");
    args.push_back(&dAddend);
  }
  if (ok && p.residual != "none") {
    ok = upload(o.residual, dResidual, "residual");
    args.push_back(&dResidual);
  }
  args.push_back(&dOut);
  ok = ok && check(d.cuMemAlloc(&dOut, out.size()), "out");
  if (ok && p.tmaStore) {
    // The output [M][N] f16 (one group's channels), stored in boxes of
    // 64 x 64, 128-byte swizzled; its map after b_map.
    alignas(64) unsigned char map[128];
    const uint64_t dims[2] = {uint64_t(p.n), uint64_t(p.m)}, strides[1] = {uint64_t(p.n) * 2};
    const unsigned box[2] = {64, 64}, unit[2] = {1, 1};
    ok = check(d.cuTensorMapEncodeTiled(map, /*FLOAT16*/ 6, 2, reinterpret_cast<void *>(dOut),
                                        dims, strides, box, unit, 0, 3, 3, 0),
               "cuTensorMapEncodeTiled (out)") &&
         check(d.cuMemAlloc(&dMaps[2], 128), "tensor map") &&
         check(d.cuMemcpyHtoD(dMaps[2], map, 128), "tensor map");
    args.insert(args.begin() + 2, &dMaps[2]);
  }
  ok = ok && check(d.cuMemcpyHtoD(dOut, out.data(), out.size()), "poison out") &&
       (p.split > 1
            ? check(d.cuLaunchKernel(reduceFn, p.reduceGrid[0], p.reduceGrid[1],
                                     p.reduceGrid[2], p.reduceBlock[0], p.reduceBlock[1],
                                     p.reduceBlock[2], 0, nullptr, args.data(), nullptr),
                    "cuLaunchKernel (reduction)")
            : check(d.cuLaunchKernel(fn, p.grid[0], p.grid[1], p.grid[2], p.block[0],
                                     p.block[1], p.block[2], p.shared, nullptr, args.data(),
                                     nullptr),
                    "cuLaunchKernel")) &&
       check(d.cuCtxSynchronize(), "kernel") &&
       check(d.cuMemcpyDtoH(out.data(), dOut, out.size()), "copy out");
  // TESSEL_IGEMM_TIME=N: the cubin's launches again, N times back to back,
  // timed on the host around them (kernels of tens of microseconds and up).
  const char *timeEnv = std::getenv("TESSEL_IGEMM_TIME");
  const int timed = timeEnv ? std::atoi(timeEnv) : 0;
  if (ok && timed > 0 && how == "cubin") {
    auto once = [&] {
      if (p.split > 1)
        return check(d.cuLaunchKernel(fn, p.grid[0], p.grid[1], p.grid[2], p.block[0],
                                      p.block[1], p.block[2], p.shared, nullptr,
                                      partialArgs.data(), nullptr),
                     "timed partial sums") &&
               check(d.cuLaunchKernel(reduceFn, p.reduceGrid[0], p.reduceGrid[1],
                                      p.reduceGrid[2], p.reduceBlock[0], p.reduceBlock[1],
                                      p.reduceBlock[2], 0, nullptr, args.data(), nullptr),
                     "timed reduction");
      return check(d.cuLaunchKernel(fn, p.grid[0], p.grid[1], p.grid[2], p.block[0], p.block[1],
                                    p.block[2], p.shared, nullptr, args.data(), nullptr),
                   "timed launch");
    };
    ok = once() && check(d.cuCtxSynchronize(), "warm-up");
    auto start = std::chrono::steady_clock::now();
    for (int r = 0; ok && r < timed; ++r)
      ok = once();
    ok = ok && check(d.cuCtxSynchronize(), "timed runs");
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count() /
                timed;
    double flops = 2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.batch);
    std::printf("TIME %-28s %s %8.4f ms %7.1f TFLOP/s\n", p.file.c_str(), p.tier.c_str(), ms,
                flops / ms / 1e9);
  }
  for (CUdeviceptr ptr :
       {dA, dB, dAddend, dResidual, dOut, dWorkspace, dMaps[0], dMaps[1], dMaps[2]})
    if (ptr)
      d.cuMemFree(ptr);
  d.cuModuleUnload(module);
  if (!ok)
    return false;
  if (timeOnly())
    return true;

  double maxErr = 0, maxRef = 0;
  long bad = 0;
  for (size_t i = 0; i < o.outCount; ++i) {
    double v;
    if (p.outF16) {
      uint16_t h;
      std::memcpy(&h, &out[i * 2], 2);
      v = fromHalf(h);
    } else {
      float f;
      std::memcpy(&f, &out[i * 4], 4);
      v = f;
    }
    if (!std::isfinite(v))
      ++bad;
    else
      maxErr = std::max(maxErr, std::fabs(v - o.ref[i]));
    maxRef = std::max(maxRef, std::fabs(o.ref[i]));
  }
  bool guardIntact = std::all_of(out.begin() + outBytes, out.end(),
                                 [](unsigned char c) { return c == 0xff; });
  double rel = maxErr / std::max(maxRef, 1e-30);
  // f16 results carry one f16 rounding (2^-11 relative); f32 results only
  // f32 accumulation and the epilogue's f32 arithmetic.
  double tolerance = p.outF16 ? 1e-3 : 2e-5;
  bool pass = bad == 0 && guardIntact && rel <= tolerance;
  std::printf("%s %-12s %-8s %-6s m=%ld n=%ld k=%ld batch=%ld act=%s: max rel err %.3g "
              "(tolerance %.0e)%s%s\n",
              pass ? "PASS" : "FAIL", p.file.c_str(), how.c_str(), p.op.c_str(), p.m, p.n, p.k,
              p.batch, p.act.c_str(), rel, tolerance,
              bad ? (", " + std::to_string(bad) + " not finite").c_str() : "",
              guardIntact ? "" : ", wrote past the end");
  return pass;
}

std::string readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), {});
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s KERNEL.ptx...\n", argv[0]);
    return 2;
  }
  int major = 0, minor = 0;
  switch (openDevice(major, minor)) {
  case Open::Skip: return 0;
  case Open::Fail: return 1;
  case Open::Ready: break;
  }
  const int arch = major * 10 + minor;
  std::printf("device sm_%d\n", arch);
  int failures = 0, runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::string path = argv[i], ptx = readFile(path);
    Problem p;
    p.file = path.substr(path.find_last_of('/') + 1);
    if (ptx.empty() || !parseHeader(ptx, p)) {
      std::printf("FAIL %s: no '// tessel-igemm' first line (write it with "
                  "tessel-codegen-gemm --conv/--gemm/--matmul)\n",
                  path.c_str());
      ++failures;
      continue;
    }
    std::mt19937 rng(20261123);
    Operands o = makeOperands(p, rng);
    // Timing only: the cubin alone (the PTX's driver JIT is seconds on the
    // largest kernels, and only the cubin is timed).
    if (!timeOnly()) {
      ++runs;
      if (!run(p, o, ptx, "ptx"))
        ++failures;
    }
    std::string cubin = readFile(path + ".sm_" + std::to_string(arch) + ".cubin");
    if (!cubin.empty()) {
      ++runs;
      if (!run(p, o, cubin, "cubin"))
        ++failures;
    }
  }
  std::printf("%s: %d of %d runs passed\n", failures ? "FAIL" : "PASS", runs - failures, runs);
  return failures ? 1 : 0;
}
