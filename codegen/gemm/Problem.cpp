//===- Problem.cpp - the GEMM a Tensor Core op computes -------------------===//
//
// The problem description's few functions: activations by name, a conv's
// GEMM extents, the key that names a kernel, and the extent of each kernel
// parameter (which decides between 32- and 64-bit index arithmetic).
//
//===----------------------------------------------------------------------===//
#include "gemm/Problem.h"

#include "gemm/Common.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace tessel::codegen {

std::optional<Activation> parseActivation(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Activation>>(name)
      .Cases("", "none", Activation::None)
      .Case("relu", Activation::Relu)
      .Case("clip", Activation::Clip)
      .Case("leaky_relu", Activation::LeakyRelu)
      .Case("sigmoid", Activation::Sigmoid)
      .Case("tanh", Activation::Tanh)
      .Case("hard_swish", Activation::HardSwish)
      .Case("gelu", Activation::Gelu)
      .Case("gelu_tanh", Activation::GeluTanh)
      .Case("silu", Activation::Silu)
      .Case("hard_sigmoid", Activation::HardSigmoid)
      .Default(std::nullopt);
}

llvm::StringRef activationName(Activation act) {
  switch (act) {
  case Activation::None: return "none";
  case Activation::Relu: return "relu";
  case Activation::Clip: return "clip";
  case Activation::LeakyRelu: return "leaky_relu";
  case Activation::Sigmoid: return "sigmoid";
  case Activation::Tanh: return "tanh";
  case Activation::HardSwish: return "hard_swish";
  case Activation::Gelu: return "gelu";
  case Activation::GeluTanh: return "gelu_tanh";
  case Activation::Silu: return "silu";
  case Activation::HardSigmoid: return "hard_sigmoid";
  }
  return "none";
}

int64_t elemBytes(ElemType type) { return type == ElemType::F16 ? 2 : 4; }

static const char *elemName(ElemType type) { return type == ElemType::F16 ? "f16" : "f32"; }

static uint32_t floatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

GemmProblem GemmProblem::forConv(const ConvShape &conv, ElemType type) {
  GemmProblem p;
  p.op = GemmOpKind::Conv;
  p.a = p.b = p.out = type;
  p.conv = conv;
  p.m = conv.batch * conv.outH * conv.outW;
  p.n = conv.outC / conv.group;
  p.k = conv.kH * conv.kW * (conv.inC / conv.group);
  p.batch = conv.group;
  return p;
}

std::string GemmProblem::key() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << int(op) << ":" << m << "x" << n << "x" << k << "x" << batch << ":" << elemName(a)
     << elemName(b) << elemName(out) << ":" << (addend ? elemName(*addend) : "-")
     << (residual ? elemName(*residual) : "-") << (aScale ? ":scaled" : "");
  if (op == GemmOpKind::Conv)
    os << ":conv" << conv.batch << "," << conv.inH << "," << conv.inW << "," << conv.inC << ","
       << conv.outC << "," << conv.kH << "," << conv.kW << "," << conv.strideH << ","
       << conv.strideW << "," << conv.padH << "," << conv.padW << "," << conv.dilH << ","
       << conv.dilW << "," << conv.group << "," << conv.outH << "," << conv.outW;
  if (op == GemmOpKind::Gemm)
    os << ":gemm" << transA << transB << "," << floatBits(alpha) << "," << floatBits(beta) << ","
       << addendRowStride << "," << addendColStride;
  for (const BatchDim &d : batchDims)
    os << ":b" << d.extent << "," << d.aStride << "," << d.bStride;
  os << ":" << activationName(act) << "," << floatBits(actAlpha) << "," << floatBits(actBeta);
  return text;
}

int64_t gemm::operandElements(const GemmProblem &p, llvm::StringRef param) {
  const ConvShape &c = p.conv;
  int64_t batchA = 1, batchB = 1;
  for (const BatchDim &d : p.batchDims) {
    batchA += (d.extent - 1) * d.aStride;
    batchB += (d.extent - 1) * d.bStride;
  }
  if (param == "a")
    return p.op == GemmOpKind::Conv ? c.batch * c.inH * c.inW * c.inC : batchA * p.m * p.k;
  if (param == "b")
    return p.op == GemmOpKind::Conv ? c.outC * p.k : batchB * p.k * p.n;
  if (param == "a_scale")
    return c.batch * c.inC;
  if (param == "addend")
    return p.op == GemmOpKind::Conv
               ? c.outC
               : (p.m - 1) * p.addendRowStride + (p.n - 1) * p.addendColStride + 1;
  // residual and out
  return p.op == GemmOpKind::Conv ? c.batch * c.outH * c.outW * c.outC : p.batch * p.m * p.n;
}

Im2colBox im2colBox(const ConvShape &cv) {
  // The last output's window starts at (out - 1) * stride - pad.
  return {-cv.padW, -cv.padH, (cv.outW - 1) * cv.strideW - cv.padW - (cv.inW - 1),
          (cv.outH - 1) * cv.strideH - cv.padH - (cv.inH - 1)};
}

bool GemmProblem::im2col() const {
  return op == GemmOpKind::Conv &&
         !(conv.kH == 1 && conv.kW == 1 && conv.strideH == 1 && conv.strideW == 1 &&
           conv.padH == 0 && conv.padW == 0);
}

bool GemmProblem::needsWideIndex() const {
  constexpr int64_t kLimit = int64_t(1) << 31;
  for (llvm::StringRef param : {"a", "b", "addend", "out"})
    if (gemm::operandElements(*this, param) >= kLimit)
      return true;
  return false;
}

} // namespace tessel::codegen
