//===- ElementwiseGroups.cpp - elementwise groups' generated kernels ------===//
//
// One kernel per group (per distinct program and shapes), specialized on
// everything the step knows at compile time: the shapes (collapsed to the
// fewest dims: adjacent dims that every input reads alike merge, extents of
// 1 drop), the inputs' broadcast strides as constants (so the index
// divisions are by constants), the program as straight-line code. A thread
// computes a run of V consecutive elements of the innermost dim (V = 8, 4,
// 2 or 1: the largest that divides it), each input read in one to four
// loads of up to 16 bytes where it runs along that dim, once where it is
// broadcast along it; the results stored alike. Values in float with the
// formulas of tessel/elementwise_math.h (which NVRTC compiles from the text
// built into the compiler: one source of truth for both tiers), f16 widened
// and rounded by cvt (round to nearest even), `--fmad=false` as the library
// is built, so that a kernel computes what the CPU tier's interpreter does.
//
//===----------------------------------------------------------------------===//
#include "ElementwiseGroups.h"
#include "GridDependency.h"
#include "Nvrtc.h"
#include "tessel/elementwise_program.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace tessel::custom {
namespace {

namespace ew = elementwise;

// The text of tessel/elementwise_math.h (generated at configure time).
const char kElementwiseMath[] =
#include "ElementwiseMathSource.inc"
    ;

constexpr unsigned kThreads = 256;

/// The headers NVRTC compiles the kernels with: the formulas, and the three
/// standard headers they include, reduced to what they use (NVRTC has none).
const std::vector<NvrtcHeader> &headers() {
  static const std::vector<NvrtcHeader> list = {
      {"tessel/elementwise_math.h", kElementwiseMath},
      {"cstdint", "#pragma once\ntypedef unsigned long long uint64_t;\n"
                  "typedef long long int64_t;\n"},
      {"cstring", "#pragma once\nnamespace std { int strcmp(const char *, const char *); }\n"},
      {"type_traits", "#pragma once\nnamespace std {\ntemplate <typename T> struct is_signed "
                      "{ static constexpr bool value = T(-1) < T(0); };\n}\n"}};
  return list;
}

const char *kPrelude = R"(// Tessel: elementwise groups (--tessel-fuse-elementwise), generated
#include "tessel/elementwise_math.h"
namespace ew = tessel::elementwise;
struct TslParams { double alpha, beta, gamma; };
template <typename T, int N> struct alignas(sizeof(T) * N) TslVec { T v[N]; };
__device__ __forceinline__ float tsl_widen(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ float tsl_widen(float f) { return f; }
__device__ __forceinline__ float tsl_widen(unsigned char b) { return b ? 1.0f : 0.0f; }
__device__ __forceinline__ unsigned short tsl_to_f16(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ float tsl_round_f16(float f) { return tsl_widen(tsl_to_f16(f)); }
__device__ __forceinline__ void tsl_store(unsigned short &y, float v) { y = tsl_to_f16(v); }
__device__ __forceinline__ void tsl_store(float &y, float v) { y = v; }
)";

/// An element type's C++ storage type in the kernels; null for one they do
/// not take.
const char *storageType(mlir::Type t) {
  if (t.isF16())
    return "unsigned short";
  if (t.isF32())
    return "float";
  if (t.isInteger(1))
    return "unsigned char";
  return nullptr;
}

size_t storageBytes(mlir::Type t) { return t.isF32() ? 4 : t.isF16() ? 2 : 1; }

/// A float as C++ source, exactly (hex), infinities and NaN by their bits.
std::string floatLiteral(double value) {
  const float f = static_cast<float>(value);
  char buffer[48];
  if (std::isnan(f))
    return "__int_as_float(0x7fffffff)";
  if (std::isinf(f))
    return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::snprintf(buffer, sizeof buffer, "%af", static_cast<double>(f));
  return buffer;
}

std::string doubleLiteral(double value) {
  char buffer[48];
  if (std::isnan(value))
    return "__longlong_as_double(0x7fffffffffffffffLL)";
  if (std::isinf(value))
    return value > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                     : "__longlong_as_double(0xfff0000000000000LL)";
  std::snprintf(buffer, sizeof buffer, "%a", value);
  return buffer;
}

/// The output's dims and each input's element strides in them (0 where it
/// is broadcast), collapsed: extents of 1 dropped, adjacent dims merged
/// where every input reads them as one.
struct Indexing {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides; ///< [input][dim]
};

Indexing indexing(llvm::ArrayRef<int64_t> out, const std::vector<llvm::ArrayRef<int64_t>> &ins) {
  const size_t rank = out.size();
  Indexing full;
  full.dims.assign(out.begin(), out.end());
  for (llvm::ArrayRef<int64_t> in : ins) {
    std::vector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (size_t j = 0; j < in.size(); ++j) {
      const size_t i = in.size() - 1 - j, d = rank - 1 - j;
      strides[d] = in[i] == 1 ? 0 : stride;
      stride *= in[i];
    }
    full.strides.push_back(std::move(strides));
  }
  Indexing collapsed;
  collapsed.strides.resize(ins.size());
  for (size_t d = 0; d < rank; ++d) {
    if (full.dims[d] == 1)
      continue;
    bool merges = !collapsed.dims.empty();
    for (size_t k = 0; merges && k < ins.size(); ++k)
      merges = collapsed.strides[k].back() == full.strides[k][d] * full.dims[d];
    if (merges) {
      collapsed.dims.back() *= full.dims[d];
      for (size_t k = 0; k < ins.size(); ++k)
        collapsed.strides[k].back() = full.strides[k][d];
    } else {
      collapsed.dims.push_back(full.dims[d]);
      for (size_t k = 0; k < ins.size(); ++k)
        collapsed.strides[k].push_back(full.strides[k][d]);
    }
  }
  if (collapsed.dims.empty()) { // a single element
    collapsed.dims.push_back(1);
    for (auto &s : collapsed.strides)
      s.push_back(0);
  }
  return collapsed;
}

std::string operandText(const ew::Operand &o) {
  switch (o.kind) {
  case ew::Operand::Kind::Input: return "x" + std::to_string(o.index) + "[e]";
  case ew::Operand::Kind::Value: return "v" + std::to_string(o.index);
  case ew::Operand::Kind::Literal: break;
  }
  return floatLiteral(o.literal);
}

std::string instructionText(const ew::Instruction &in) {
  auto a = [&](int i) { return operandText(in.operands[i]); };
  switch (in.kind) {
  case ew::Instruction::Kind::Unary:
    return "ew::unaryFloat<ew::Unary(" + std::to_string(static_cast<int>(in.unary)) +
           "), float>(" + a(0) + ", TslParams{" + doubleLiteral(in.params.alpha) + ", " +
           doubleLiteral(in.params.beta) + ", " + doubleLiteral(in.params.gamma) + "}) /* " +
           ew::kUnaryNames[static_cast<int>(in.unary)] + " */";
  case ew::Instruction::Kind::Binary:
    return "ew::binaryFloat<ew::Binary(" + std::to_string(static_cast<int>(in.binary)) +
           "), float>(" + a(0) + ", " + a(1) + ") /* " +
           ew::kBinaryNames[static_cast<int>(in.binary)] + " */";
  case ew::Instruction::Kind::Clip:
    return "ew::clip<float>(" + a(0) + ", " + floatLiteral(in.params.alpha) + ", " +
           floatLiteral(in.params.beta) + ")";
  case ew::Instruction::Kind::Where: return "(" + a(0) + " != 0.0f ? " + a(1) + " : " + a(2) + ")";
  case ew::Instruction::Kind::CastF16: return "tsl_round_f16(" + a(0) + ")";
  }
  return "0.0f";
}

} // namespace

const std::string &elementwiseGroupsUnavailable() { return nvrtcError(); }

mlir::FailureOr<std::vector<codegen::KernelVariant>>
ElementwiseGroupPlanner::plan(const codegen::StepView &step) {
  std::vector<codegen::KernelVariant> variants;
  if (!step.op || step.name != "elementwise_group" || step.outputs.size() != 1 || targets.empty())
    return variants;
  auto programAttr = step.op->getAttrOfType<mlir::StringAttr>("program");
  ew::Program program;
  if (!programAttr || !ew::parseProgram(programAttr.str(), program).empty())
    return variants; // the verifier refuses it before this
  mlir::RankedTensorType outType = step.type(step.outputs.front());
  const char *outStorage = storageType(outType.getElementType());
  if (!outStorage || outType.getElementType().isInteger(1) ||
      step.inputs.size() != static_cast<size_t>(program.numInputs))
    return variants;
  std::vector<llvm::ArrayRef<int64_t>> shapes;
  std::vector<const char *> inStorage;
  std::vector<size_t> inBytes;
  for (int32_t tensor : step.inputs) {
    if (tensor < 0)
      return variants;
    mlir::RankedTensorType type = step.type(tensor);
    const char *storage = storageType(type.getElementType());
    if (!storage)
      return variants; // f64: the CPU tier's
    shapes.push_back(type.getShape());
    inStorage.push_back(storage);
    inBytes.push_back(storageBytes(type.getElementType()));
  }
  const int64_t total = outType.getNumElements();
  if (total <= 0 || total >= (int64_t(1) << 31))
    return variants;

  const Indexing index = indexing(outType.getShape(), shapes);
  const size_t rank = index.dims.size();
  const int64_t inner = index.dims.back();
  const int vector = inner % 8 == 0 ? 8 : inner % 4 == 0 ? 4 : inner % 2 == 0 ? 2 : 1;
  const int64_t runs = total / vector;

  // The kernel's body: everything after its name.
  std::string body = "(";
  for (size_t k = 0; k < inStorage.size(); ++k)
    body += std::string("const ") + inStorage[k] + " *__restrict__ a" + std::to_string(k) + ", ";
  body += std::string(outStorage) + " *__restrict__ y) {\n";
  body += "#if __CUDA_ARCH__ >= " + std::to_string(codegen::kGridDependencyArch * 10) + "\n";
  body += "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n#endif\n";
  body += "  const unsigned run = blockIdx.x * " + std::to_string(kThreads) + "u + threadIdx.x;\n";
  body += "  if (run >= " + std::to_string(runs) + "u) return;\n";
  body += "  constexpr int V = " + std::to_string(vector) + ";\n";
  body += "  unsigned rest = run;\n";
  for (size_t d = rank; d-- > 0;) {
    const std::string i = "i" + std::to_string(d);
    if (d == rank - 1) {
      const int64_t inRuns = inner / vector;
      body += "  const unsigned " + i + " = rest % " + std::to_string(inRuns) + "u * V; rest /= " +
              std::to_string(inRuns) + "u;\n";
    } else if (d == 0) {
      body += "  const unsigned " + i + " = rest;\n";
    } else {
      body += "  const unsigned " + i + " = rest % " + std::to_string(index.dims[d]) +
              "u; rest /= " + std::to_string(index.dims[d]) + "u;\n";
    }
  }
  if (rank == 1)
    body += "  (void)rest;\n";
  for (size_t k = 0; k < inStorage.size(); ++k) {
    const std::string x = "x" + std::to_string(k), a = "a" + std::to_string(k);
    std::string offset;
    for (size_t d = 0; d < rank; ++d)
      if (index.strides[k][d] != 0)
        offset += (offset.empty() ? "" : " + ") + std::string("i") + std::to_string(d) +
                  (index.strides[k][d] == 1 ? std::string()
                                            : " * " + std::to_string(index.strides[k][d]) + "u");
    if (offset.empty())
      offset = "0u";
    body += "  float " + x + "[V];\n  {\n    const unsigned o = " + offset + ";\n";
    if (index.strides[k][rank - 1] == 1 && vector > 1) {
      const int chunk = std::min<int>(vector, static_cast<int>(16 / inBytes[k]));
      body += "    #pragma unroll\n    for (int c = 0; c < V; c += " + std::to_string(chunk) +
              ") {\n      const TslVec<" + inStorage[k] + ", " + std::to_string(chunk) +
              "> w = *reinterpret_cast<const TslVec<" + inStorage[k] + ", " +
              std::to_string(chunk) + "> *>(" + a + " + o + c);\n      #pragma unroll\n" +
              "      for (int j = 0; j < " + std::to_string(chunk) + "; ++j) " + x +
              "[c + j] = tsl_widen(w.v[j]);\n    }\n";
    } else if (index.strides[k][rank - 1] == 1) {
      body += "    " + x + "[0] = tsl_widen(" + a + "[o]);\n";
    } else {
      body += "    const float s = tsl_widen(" + a + "[o]);\n    #pragma unroll\n" +
              "    for (int e = 0; e < V; ++e) " + x + "[e] = s;\n";
    }
    body += "  }\n";
  }
  body += "  float r[V];\n  #pragma unroll\n  for (int e = 0; e < V; ++e) {\n";
  for (size_t i = 0; i < program.code.size(); ++i)
    body += "    const float v" + std::to_string(i) + " = " + instructionText(program.code[i]) + ";\n";
  body += "    r[e] = v" + std::to_string(program.code.size() - 1) + ";\n  }\n";
  const int outChunk =
      std::min<int>(vector, static_cast<int>(16 / storageBytes(outType.getElementType())));
  body += std::string("  #pragma unroll\n  for (int c = 0; c < V; c += ") +
          std::to_string(outChunk) + ") {\n    TslVec<" + outStorage + ", " +
          std::to_string(outChunk) + "> w;\n    #pragma unroll\n    for (int j = 0; j < " +
          std::to_string(outChunk) + "; ++j) tsl_store(w.v[j], r[c + j]);\n" +
          "    *reinterpret_cast<TslVec<" + outStorage + ", " + std::to_string(outChunk) +
          "> *>(y + run * V + c) = w;\n  }\n}\n";

  auto [it, added] = nameOf.try_emplace(body, "tsl_group_" + std::to_string(nameOf.size()));
  if (added) {
    kernels += "\n// " + programAttr.str() + "\nextern \"C\" __global__ void __launch_bounds__(" +
               std::to_string(kThreads) + ") " + it->second + body;
    if (!firstOp)
      firstOp = step.op;
  }

  codegen::Launch launch;
  launch.module = 0;
  launch.kernel = it->second;
  launch.grid = {static_cast<uint32_t>((runs + kThreads - 1) / kThreads), 1, 1};
  launch.block = {kThreads, 1, 1};
  for (int32_t tensor : step.inputs)
    launch.args.push_back(codegen::KernelArg::tensorAddress(tensor));
  launch.args.push_back(codegen::KernelArg::tensorAddress(step.outputs.front()));
  codegen::KernelVariant variant;
  variant.tier = engine::Tier::simt;
  variant.kernel = it->second;
  variant.minComputeCapability = 75;
  variant.alignment = 16;
  variant.launches.push_back(std::move(launch));
  variants.push_back(std::move(variant));
  return variants;
}

std::string ElementwiseGroupPlanner::source() const { return kPrelude + kernels; }

mlir::FailureOr<std::vector<codegen::KernelModule>> ElementwiseGroupPlanner::finish() {
  std::vector<codegen::KernelModule> modules;
  if (kernels.empty())
    return modules;
  const std::string text = source();
  const std::vector<std::string> options = {"--std=c++17", "-default-device", "--fmad=false"};
  codegen::KernelModule module;
  module.name = "tessel_elementwise_groups";
  std::string log;
  auto failed = [&](const std::string &target) {
    return firstOp->emitError("elementwise groups: NVRTC failed to compile their kernels for ")
           << target << ":\n"
           << log;
  };
  for (int arch : targets.cubinArchs) {
    codegen::KernelImage cubin;
    cubin.cubin = true;
    cubin.arch = arch;
    cubin.waitsForPriorGrids = arch >= codegen::kGridDependencyArch;
    if (!nvrtcCompile(text, "elementwise_groups.cu", arch, true, options, headers(), cubin.data,
                      log))
      return failed("sm_" + std::to_string(arch));
    module.images.push_back(std::move(cubin));
  }
  codegen::KernelImage ptx;
  ptx.arch = 75;
  if (!nvrtcCompile(text, "elementwise_groups.cu", ptx.arch, false, options, headers(), ptx.data,
                    log))
    return failed("compute_75");
  module.images.push_back(std::move(ptx));
  modules.push_back(std::move(module));
  return modules;
}

} // namespace tessel::custom
