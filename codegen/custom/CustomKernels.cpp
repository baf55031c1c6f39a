//===- CustomKernels.cpp - custom ops' GPU variants through NVRTC ---------===//
//
// Each source a custom step uses is compiled once per target by NVRTC (the
// CUDA toolkit's runtime compiler, a library: no nvcc process), behind
// kernelPrelude() and with a line per variant that takes the kernel's address
// as the pointer type the manifest's declaration implies, so that a kernel
// whose parameters differ is refused here, at compile time, with the
// compiler's own message. Fixed options and the source's name as the
// manifest writes it (not its path): the images are the same bytes on every
// machine, and engines stay byte-identical.
//
//===----------------------------------------------------------------------===//
#include "CustomOp.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <cstddef>
#include <cstdlib>
#include <type_traits>
#include <fstream>
#include <map>
#include <sstream>

#include "Nvrtc.h"

namespace tessel::custom {

const char *kernelPrelude() {
  return R"(// Tessel custom op prelude (tessel-compile --custom-op)
#include <cuda_fp16.h>
#define TESSEL_CUSTOM_MAX_OPERANDS 8
#define TESSEL_CUSTOM_MAX_RANK 8
#define TESSEL_CUSTOM_MAX_ATTRS 8
/* One operand's shape as the step stores it (NHWC for a 4-D tensor the
   pipeline put in NHWC), row-major and dense. */
struct TesselTensorShape {
  long long rank;
  long long dims[TESSEL_CUSTOM_MAX_RANK];
  long long elements;
};
/* The kernel's last parameter, by value: every operand's shape and the
   manifest's int and float attributes, in declaration order, as doubles. */
struct TesselCustomArgs {
  long long num_inputs, num_outputs;
  TesselTensorShape inputs[TESSEL_CUSTOM_MAX_OPERANDS];
  TesselTensorShape outputs[TESSEL_CUSTOM_MAX_OPERANDS];
  double attrs[TESSEL_CUSTOM_MAX_ATTRS];
};
template <typename A, typename B> struct tessel_same_type { static constexpr bool value = false; };
template <typename A> struct tessel_same_type<A, A> { static constexpr bool value = true; };
)";
}

// The host's view of the prelude's structs, byte for byte.
static_assert(sizeof(TensorShapeArg) == 8 * (kMaxRank + 2), "TesselTensorShape's layout");
static_assert(offsetof(CustomArgs, inputs) == 16, "TesselCustomArgs's layout");
static_assert(offsetof(CustomArgs, attrs) == 16 + 2 * kMaxOperands * sizeof(TensorShapeArg),
              "TesselCustomArgs's layout");
static_assert(sizeof(CustomArgs) == 16 + 2 * kMaxOperands * sizeof(TensorShapeArg) +
                                        8 * kMaxNumericAttrs,
              "TesselCustomArgs's layout");

/// One source of one custom op, compiled for every target.
struct CustomKernelPlanner::Compiled {
  const CustomOpDecl *decl = nullptr;
  std::string source; ///< path
  codegen::KernelModule module;
};

namespace {

/// The kernel's parameters the manifest implies for `variant`: (type, name).
std::vector<std::pair<std::string, std::string>> parameters(const CustomOpDecl &decl,
                                                            const VariantDecl &variant) {
  const std::string type = variant.dtype == "f16" ? "__half" : "float";
  std::vector<std::pair<std::string, std::string>> list;
  for (const std::string &input : decl.inputs)
    list.emplace_back("const " + type + " *", input);
  for (const OutputDecl &output : decl.outputs)
    list.emplace_back(type + " *", output.name);
  list.emplace_back("TesselCustomArgs", "args");
  return list;
}

/// That declaration, as C++.
std::string expectedSignature(const CustomOpDecl &decl, const VariantDecl &variant) {
  std::string text;
  for (const auto &[type, name] : parameters(decl, variant))
    text += (text.empty() ? "" : ", ") + type + (type.back() == '*' ? "" : " ") + name;
  return "extern \"C\" __global__ void " + variant.kernel + "(" + text + ")";
}

/// The check line: the kernel's type is the pointer type the declaration
/// implies (tessel_same_type: the prelude's std::is_same). Compile-time
/// only: it adds nothing to the module.
std::string signatureCheck(const CustomOpDecl &decl, const VariantDecl &variant) {
  std::string types;
  for (const auto &[type, name] : parameters(decl, variant))
    types += (types.empty() ? "" : ", ") + type;
  return "static_assert(tessel_same_type<decltype(&" + variant.kernel + "), void (*)(" + types +
         ")>::value, \"kernel '" + variant.kernel +
         "' does not have the parameters the manifest declares\");\n";
}


/// Whether `ptx` defines an entry point `kernel` (extern "C" __global__).
bool definesEntry(const std::vector<uint8_t> &ptx, const std::string &kernel) {
  std::string text(ptx.begin(), ptx.end());
  const std::string entry = ".entry " + kernel + "(";
  return text.find(entry) != std::string::npos;
}

/// The step's shape argument of one tensor.
TensorShapeArg shapeArg(mlir::RankedTensorType type) {
  TensorShapeArg arg;
  arg.rank = type.getRank();
  arg.elements = 1;
  for (auto [i, extent] : llvm::enumerate(type.getShape())) {
    arg.dims[i] = extent;
    arg.elements *= extent;
  }
  return arg;
}

} // namespace

CustomKernelPlanner::CustomKernelPlanner(const CustomOpRegistry &registry,
                                         const codegen::Targets &targets)
    : registry(registry), targets(targets) {}

CustomKernelPlanner::~CustomKernelPlanner() = default;

mlir::FailureOr<std::vector<codegen::KernelVariant>>
CustomKernelPlanner::plan(const codegen::StepView &step) {
  std::vector<codegen::KernelVariant> variants;
  if (!step.op || step.name != "custom")
    return variants;
  auto domain = step.op->getAttrOfType<mlir::StringAttr>("domain");
  auto opType = step.op->getAttrOfType<mlir::StringAttr>("op_type");
  const CustomOpDecl *decl =
      domain && opType ? registry.find(domain.str(), opType.str()) : nullptr;
  if (!decl)
    return step.op->emitError("custom op ")
           << (domain ? domain.str() : "?") << "." << (opType ? opType.str() : "?")
           << " has no manifest (tessel-compile --custom-op FILE)";
  if (step.outputs.empty() || targets.empty())
    return variants;
  mlir::Type element = step.type(step.outputs.front()).getElementType();
  const std::string dtype = element.isF16() ? "f16" : element.isF32() ? "f32" : "";

  // The operands' shapes and the int attributes, for the variants' conditions.
  std::vector<std::vector<int64_t>> shapes;
  for (int32_t tensor : step.inputs) {
    llvm::ArrayRef<int64_t> shape = step.type(tensor).getShape();
    shapes.emplace_back(shape.begin(), shape.end());
  }
  std::map<std::string, int64_t> intAttrs;
  for (const AttrDecl &attr : decl->attributes)
    if (auto integer = step.op->getAttrOfType<mlir::IntegerAttr>(attr.name);
        integer && attr.kind == AttrDecl::Kind::Int)
      intAttrs[attr.name] = integer.getValue().getSExtValue();
  auto holds = [&](const VariantDecl &variant) {
    for (const DimExpr &condition : variant.when) {
      std::string ignored;
      std::optional<int64_t> value = condition.evaluate(shapes, intAttrs, ignored);
      if (!value || *value == 0)
        return false;
    }
    return true;
  };

  for (const VariantDecl &variant : decl->variants) {
    if (variant.dtype != dtype || !holds(variant))
      continue;
    // The source's module, compiled on first use.
    size_t moduleIndex = 0;
    while (moduleIndex < modules.size() &&
           !(modules[moduleIndex]->decl == decl && modules[moduleIndex]->source == variant.source))
      ++moduleIndex;
    if (moduleIndex == modules.size()) {
#ifndef TESSEL_HAVE_NVRTC
      return step.op->emitError("custom op ")
             << decl->qualifiedName() << " (" << decl->file
             << "): this tessel-compile was built without NVRTC (the CUDA toolkit), so it "
                "cannot compile GPU variants; compile with --target none";
#else
      std::ifstream in(variant.source, std::ios::binary);
      std::stringstream sourceText;
      sourceText << in.rdbuf();
      if (!in)
        return step.op->emitError("custom op ")
               << decl->qualifiedName() << " (" << decl->file << "): cannot read "
               << variant.sourceName;
      std::string body = std::string(kernelPrelude()) + "#line 1 \"" + variant.sourceName +
                         "\"\n" + sourceText.str() + "\n#line 1 \"(the manifest's signature)\"\n";
      std::vector<const VariantDecl *> here;
      for (const VariantDecl &other : decl->variants)
        if (other.source == variant.source)
          here.push_back(&other);
      std::string checked = body;
      for (const VariantDecl *other : here)
        checked += signatureCheck(*decl, *other);

      auto compiled = std::make_unique<Compiled>();
      compiled->decl = decl;
      compiled->source = variant.source;
      compiled->module.name = "custom_" + decl->domain + "_" + decl->opType + "_" +
                              std::to_string(moduleIndex);
      for (char &c : compiled->module.name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
          c = '_';
      const std::string where = "custom op " + decl->qualifiedName() + " (" + decl->file + ")";
      if (!nvrtcError().empty())
        return step.op->emitError(where)
               << ": its GPU variants need NVRTC: " << nvrtcError()
               << " (install the CUDA toolkit, or compile with --target none)";
      const std::vector<std::string> options = {
          "--std=c++17", std::string("--include-path=") + TESSEL_CUDA_INCLUDE_DIR};
      // PTX first: its failure tells a broken source from a wrong signature.
      codegen::KernelImage ptx;
      ptx.arch = 75;
      std::string log;
      if (!nvrtcCompile(checked, variant.sourceName, ptx.arch, false, options, {}, ptx.data, log)) {
        std::string plainLog;
        std::vector<uint8_t> ignored;
        if (!nvrtcCompile(body, variant.sourceName, ptx.arch, false, options, {}, ignored, plainLog))
          return step.op->emitError(where)
                 << ": NVRTC failed to compile " << variant.sourceName << ":\n"
                 << plainLog;
        std::string expected;
        for (const VariantDecl *other : here)
          expected += "\n  " + expectedSignature(*decl, *other);
        return step.op->emitError(where)
               << ": a kernel of " << variant.sourceName
               << " is missing or does not have the signature the manifest declares:"
               << expected << "\nNVRTC:\n"
               << log;
      }
      for (const VariantDecl *other : here)
        if (!definesEntry(ptx.data, other->kernel))
          return step.op->emitError(where)
                 << ": " << variant.sourceName << " defines no kernel entry '" << other->kernel
                 << "' (declare it extern \"C\" __global__: "
                 << expectedSignature(*decl, *other) << ")";
      for (int arch : targets.cubinArchs) {
        codegen::KernelImage cubin;
        cubin.cubin = true;
        cubin.arch = arch;
        if (!nvrtcCompile(checked, variant.sourceName, arch, true, options, {}, cubin.data, log))
          return step.op->emitError(where)
                 << ": NVRTC failed to compile " << variant.sourceName << " for sm_" << arch
                 << ":\n"
                 << log;
        compiled->module.images.push_back(std::move(cubin));
      }
      compiled->module.images.push_back(std::move(ptx));
      modules.push_back(std::move(compiled));
#endif
    }

    // One launch: a thread per elementsPerThread elements of the first output.
    CustomArgs args;
    args.numInputs = static_cast<int64_t>(step.inputs.size());
    args.numOutputs = static_cast<int64_t>(step.outputs.size());
    for (auto [i, tensor] : llvm::enumerate(step.inputs))
      args.inputs[i] = shapeArg(step.type(tensor));
    for (auto [i, tensor] : llvm::enumerate(step.outputs))
      args.outputs[i] = shapeArg(step.type(tensor));
    for (auto [i, attr] : llvm::enumerate(decl->numericAttributes())) {
      mlir::Attribute value = step.op->getAttr(attr->name);
      if (auto integer = mlir::dyn_cast_or_null<mlir::IntegerAttr>(value))
        args.attrs[i] = static_cast<double>(integer.getValue().getSExtValue());
      else if (auto real = mlir::dyn_cast_or_null<mlir::FloatAttr>(value))
        args.attrs[i] = real.getValueAsDouble();
    }
    const uint64_t elements = static_cast<uint64_t>(args.outputs[0].elements);
    const uint64_t threads = (elements + variant.elementsPerThread - 1) / variant.elementsPerThread;
    const uint64_t blocks = std::max<uint64_t>(1, (threads + variant.block - 1) / variant.block);
    if (blocks > 0x7fffffffu)
      continue; // beyond one grid dim: the step stays on the tiers below

    codegen::Launch launch;
    launch.module = static_cast<int32_t>(moduleIndex);
    launch.kernel = variant.kernel;
    launch.grid = {static_cast<uint32_t>(blocks), 1, 1};
    launch.block = {variant.block, 1, 1};
    for (int32_t tensor : step.inputs)
      launch.args.push_back(codegen::KernelArg::tensorAddress(tensor));
    for (int32_t tensor : step.outputs)
      launch.args.push_back(codegen::KernelArg::tensorAddress(tensor));
    launch.args.push_back(codegen::KernelArg::value(args));

    codegen::KernelVariant planned;
    planned.tier = variant.tier;
    planned.kernel = variant.kernel;
    planned.minComputeCapability = std::max(75, format::tierCapability(variant.tier));
    planned.alignment = 16;
    planned.launches.push_back(std::move(launch));
    variants.push_back(std::move(planned));
  }
  return variants;
}

std::vector<codegen::KernelModule> CustomKernelPlanner::finish() {
  std::vector<codegen::KernelModule> result;
  for (std::unique_ptr<Compiled> &compiled : modules)
    result.push_back(std::move(compiled->module));
  return result;
}

} // namespace tessel::custom
