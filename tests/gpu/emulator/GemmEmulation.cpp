//===- GemmEmulation.cpp - GEMM kernels run by the emulator, checked ------===//
//
// Random operands, the float64 references (ONNX Conv on NHWC/OHWI, Gemm,
// MatMul, then the CPU tier's epilogue), and the run of a kernel (and its
// split-K reduction) on the emulator with every write counted.
//
//===----------------------------------------------------------------------===//
#include "GemmEmulation.h"

#include "CudaCheck.h"
#include "GpuIrEmulator.h"
#include "Reference.h"
#include "TestTensor.h"

#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>

using namespace mlir;
using namespace tessel::codegen;
using tessel::gpucheck::fromHalf;

namespace tessel::gpuemu {

namespace {

using test::Operand;

Operand randomOperand(int64_t count, ElemType type, std::mt19937 &rng) {
  return test::randomOperand(type == ElemType::F16 ? cpu::DType::F16 : cpu::DType::F32, count,
                             rng);
}

/// The epilogue's activation (the references' ONNX definitions).
double activate(const GemmProblem &p, double v) {
  return test::refActivation({activationName(p.act).data(), p.actAlpha, p.actBeta}, v);
}

struct Operands {
  Operand a, b, scale, addend, residual;
  int64_t outCount = 0;
  std::vector<double> ref;
};

Operands makeOperands(const GemmProblem &p) {
  std::mt19937 rng(7);
  Operands o;
  const int64_t M = p.m, N = p.n, K = p.k;
  if (p.op == GemmOpKind::Conv) {
    const ConvShape &c = p.conv;
    const int64_t CG = c.inC / c.group;
    o.a = randomOperand(c.batch * c.inH * c.inW * c.inC, p.a, rng);
    o.b = randomOperand(c.outC * c.kH * c.kW * CG, p.b, rng);
    // The input scale: the conv reads x * scale, each product rounded to
    // A's type (f16: refDoubleToHalf; f32: the product of two f32 rounded
    // to f32).
    std::vector<double> x = o.a.values;
    if (p.aScale) {
      o.scale = randomOperand(c.batch * c.inC, *p.aScale, rng);
      for (size_t i = 0; i < x.size(); ++i) {
        double product = x[i] * o.scale.values[i / (c.inH * c.inW * c.inC) * c.inC + i % c.inC];
        x[i] = p.a == ElemType::F16 ? test::refHalfToDouble(test::refDoubleToHalf(product))
                                    : double(float(product));
      }
    }
    if (p.addend)
      o.addend = randomOperand(c.outC, *p.addend, rng);
    o.outCount = c.batch * c.outH * c.outW * c.outC;
    if (p.residual)
      o.residual = randomOperand(o.outCount, *p.residual, rng);
    o.ref.resize(o.outCount);
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t oh = 0; oh < c.outH; ++oh)
        for (int64_t ow = 0; ow < c.outW; ++ow)
          for (int64_t co = 0; co < c.outC; ++co) {
            int64_t g = co / N;
            double acc = 0;
            for (int64_t kh = 0; kh < c.kH; ++kh)
              for (int64_t kw = 0; kw < c.kW; ++kw) {
                int64_t ih = oh * c.strideH - c.padH + kh * c.dilH;
                int64_t iw = ow * c.strideW - c.padW + kw * c.dilW;
                if (ih < 0 || ih >= c.inH || iw < 0 || iw >= c.inW)
                  continue;
                for (int64_t ci = 0; ci < CG; ++ci)
                  acc += x[((n * c.inH + ih) * c.inW + iw) * c.inC + g * CG + ci] *
                         o.b.values[((co * c.kH + kh) * c.kW + kw) * CG + ci];
              }
            int64_t at = ((n * c.outH + oh) * c.outW + ow) * c.outC + co;
            if (p.addend)
              acc += o.addend.values[co];
            if (p.residual)
              acc += o.residual.values[at];
            o.ref[at] = activate(p, acc);
          }
    return o;
  }
  if (p.op == GemmOpKind::Gemm) {
    o.a = randomOperand(M * K, p.a, rng);
    o.b = randomOperand(K * N, p.b, rng);
    if (p.addend)
      o.addend = randomOperand((M - 1) * p.addendRowStride + (N - 1) * p.addendColStride + 1,
                              *p.addend, rng);
    if (p.residual)
      o.residual = randomOperand(M * N, *p.residual, rng);
    o.outCount = M * N;
    o.ref.resize(o.outCount);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < K; ++q)
          acc += o.a.values[p.transA ? q * M + i : i * K + q] *
                 o.b.values[p.transB ? j * K + q : q * N + j];
        double v = p.alpha * acc;
        if (p.addend)
          v += p.beta * o.addend.values[i * p.addendRowStride + j * p.addendColStride];
        if (p.residual)
          v += o.residual.values[i * N + j];
        o.ref[i * N + j] = activate(p, v);
      }
    return o;
  }
  int64_t aMatrices = 1, bMatrices = 1;
  for (const BatchDim &d : p.batchDims) {
    aMatrices += (d.extent - 1) * d.aStride;
    bMatrices += (d.extent - 1) * d.bStride;
  }
  o.a = randomOperand(aMatrices * M * K, p.a, rng);
  o.b = randomOperand(bMatrices * K * N, p.b, rng);
  o.outCount = p.batch * M * N;
  o.ref.resize(o.outCount);
  for (int64_t z = 0; z < p.batch; ++z) {
    int64_t rest = z, aOff = 0, bOff = 0;
    for (size_t d = p.batchDims.size(); d-- > 0;) {
      int64_t index = rest % p.batchDims[d].extent;
      rest /= p.batchDims[d].extent;
      aOff += index * p.batchDims[d].aStride * M * K;
      bOff += index * p.batchDims[d].bStride * K * N;
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < K; ++q)
          acc += o.a.values[aOff + i * K + q] * o.b.values[bOff + q * N + j];
        o.ref[(z * M + i) * N + j] = activate(p, acc);
      }
  }
  return o;
}

} // namespace

std::string emulate(const GemmKernel &kernel, double *relError) {
  MLIRContext ctx;
  auto module = buildGemmModule(ctx, "emulated", {kernel});
  if (failed(module))
    return "the kernel does not build";
  gpu::GPUFuncOp func, reduceFunc;
  (*module)->walk([&](gpu::GPUFuncOp f) {
    if (f.getName() == kernel.name)
      func = f;
    else if (f.getName() == kernel.reduceName())
      reduceFunc = f;
  });
  if (!func || kernel.splitsK() != bool(reduceFunc))
    return "the module does not hold the kernel (and, with split-K, only then its reduction)";
  const GemmProblem &p = kernel.problem;
  Operands o = makeOperands(p);
  std::vector<std::vector<uint8_t>> args;
  // Split-K: the partial sums first, each workspace byte written once; the
  // reduction then takes the workspace where the kernel took A and B.
  if (kernel.splitsK()) {
    std::vector<std::vector<uint8_t>> partialArgs = {o.a.tensor.bytes(), o.b.tensor.bytes()};
    if (p.aScale)
      partialArgs.push_back(o.scale.tensor.bytes());
    partialArgs.emplace_back(kernel.workspaceBytes(), 0xff);
    Emulator partials(func, partialArgs, kernel.grid(), int(kernel.block()[0]));
    partials.dynamicSharedBytes = kernel.sharedBytes();
    if (!partials.run())
      return "partial sums: " + partials.error;
    for (size_t b = 0; b < partialArgs.back().size(); ++b)
      if (partials.outWrites[b] != 1)
        return "workspace byte " + std::to_string(b) + " written " +
               std::to_string(partials.outWrites[b]) + " times";
    args.push_back(std::move(partialArgs.back()));
  } else {
    args = {o.a.tensor.bytes(), o.b.tensor.bytes()};
    if (p.aScale)
      args.push_back(o.scale.tensor.bytes());
  }
  if (kernel.tiles.tma) {
    // A's and B's maps first (GemmKernel::parameters), then with TMA
    // stores the output's, as the engine describes them
    // (GemmKernel::tensorMap).
    std::vector<std::vector<uint8_t>> maps;
    const int count = kernel.tiles.tmaStore ? 3 : 2;
    for (int i = 0; i < count; ++i) {
      const KernelArg::TensorMap shape =
          kernel.tensorMap(i == 0 ? "a_map" : i == 1 ? "b_map" : "out_map");
      gpuemu::EmulatedTensorMap map;
      // a, b after the maps; the output last (its index set below).
      map.tensorArg = i < 2 ? uint32_t(count + i) : 0;
      map.rank = uint32_t(shape.dims.size());
      map.im2col = shape.im2col();
      std::copy(shape.dims.begin(), shape.dims.end(), map.dims);
      std::copy(shape.strides.begin(), shape.strides.end(), map.strides);
      std::copy(shape.box.begin(), shape.box.end(), map.box);
      std::copy(shape.lowerCorner.begin(), shape.lowerCorner.end(), map.lower);
      std::copy(shape.upperCorner.begin(), shape.upperCorner.end(), map.upper);
      std::copy(shape.elementStrides.begin(), shape.elementStrides.end(),
                map.elementStrides);
      std::vector<uint8_t> bytes(128, 0);
      std::memcpy(bytes.data(), &map, sizeof map);
      maps.push_back(std::move(bytes));
    }
    args.insert(args.begin(), maps.begin(), maps.end());
  }
  if (p.addend)
    args.push_back(o.addend.tensor.bytes());
  if (p.residual)
    args.push_back(o.residual.tensor.bytes());
  args.emplace_back(o.outCount * elemBytes(p.out), 0xff);
  if (kernel.tiles.tmaStore) { // the output map's tensor: the last argument
    const uint32_t outArg = uint32_t(args.size() - 1);
    std::memcpy(args[2].data() + offsetof(gpuemu::EmulatedTensorMap, tensorArg), &outArg, 4);
  }
  Emulator emulator(kernel.splitsK() ? reduceFunc : func, args,
                    kernel.splitsK() ? kernel.reduceGrid() : kernel.grid(),
                    int(kernel.splitsK() ? kernel.reduceBlock()[0] : kernel.block()[0]));
  if (!kernel.splitsK())
    emulator.dynamicSharedBytes = kernel.sharedBytes();
  if (!emulator.run())
    return emulator.error;
  const std::vector<uint8_t> &out = args.back();
  for (size_t b = 0; b < out.size(); ++b)
    if (emulator.outWrites[b] != 1)
      return "output byte " + std::to_string(b) + " written " +
             std::to_string(emulator.outWrites[b]) + " times";
  double maxErr = 0, maxRef = 0;
  for (int64_t i = 0; i < o.outCount; ++i) {
    double v;
    if (p.out == ElemType::F16) {
      uint16_t h;
      std::memcpy(&h, &out[i * 2], 2);
      v = fromHalf(h);
    } else {
      float f;
      std::memcpy(&f, &out[i * 4], 4);
      v = f;
    }
    if (!std::isfinite(v))
      return "output " + std::to_string(i) + " is not finite";
    maxErr = std::max(maxErr, std::fabs(v - o.ref[i]));
    maxRef = std::max(maxRef, std::fabs(o.ref[i]));
  }
  double rel = maxErr / std::max(maxRef, 1e-30);
  if (relError)
    *relError = rel;
  double tolerance = p.out == ElemType::F16 ? 1e-3 : 2e-5;
  if (!(rel <= tolerance))
    return "max error relative to max |ref| " + std::to_string(rel) + " above " +
           std::to_string(tolerance);
  return "";
}

GemmProblem conv(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r, int64_t s,
                 int64_t stride, int64_t pad, ElemType type, int64_t group, int64_t dilation) {
  ConvShape cs;
  cs.batch = n;
  cs.inH = h;
  cs.inW = w;
  cs.inC = c;
  cs.outC = k;
  cs.kH = r;
  cs.kW = s;
  cs.strideH = cs.strideW = stride;
  cs.padH = cs.padW = pad;
  cs.dilH = cs.dilW = dilation;
  cs.group = group;
  cs.outH = (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1;
  cs.outW = (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1;
  return GemmProblem::forConv(cs, type);
}

GemmProblem gemm(int64_t m, int64_t n, int64_t k, bool transA, bool transB, ElemType type) {
  GemmProblem p;
  p.op = GemmOpKind::Gemm;
  p.a = p.b = p.out = type;
  p.m = m;
  p.n = n;
  p.k = k;
  p.transA = transA;
  p.transB = transB;
  return p;
}

GemmProblem matmul(int64_t m, int64_t n, int64_t k, SmallVector<BatchDim> dims, ElemType type) {
  GemmProblem p;
  p.op = GemmOpKind::MatMul;
  p.a = p.b = p.out = type;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batchDims = dims;
  for (const BatchDim &d : dims)
    p.batch *= d.extent;
  return p;
}

GemmProblem withEpilogue(GemmProblem p, bool addend, bool residual, Activation act,
                         float actAlpha, float actBeta) {
  if (addend)
    p.addend = p.out;
  if (residual)
    p.residual = p.out;
  p.act = act;
  p.actAlpha = actAlpha;
  p.actBeta = actBeta;
  return p;
}

} // namespace tessel::gpuemu
