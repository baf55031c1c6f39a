//===- CustomOp.h - a user's op: its manifest and its kernels ---*- C++ -*-===//
//
// A custom op is an ONNX op Tessel does not have, brought by the user as a
// manifest (JSON, read with nlohmann/json) that declares it and CUDA C++
// sources that implement it on the GPU (tessel-compile --custom-op FILE):
//
//   - its ONNX domain and op type, inputs (each may have to have the shape of
//     an earlier one) and outputs by name, each output's
//     shape rule (the shape of an input, the numpy broadcast of the inputs,
//     or one expression per dim over input dims and integer attributes);
//   - the element types it accepts (f32, f16; every operand and result has
//     the one the step runs in) and the layout it wants for 4-D operands
//     ("any": it computes the same in any layout, as elementwise ops do;
//     "NCHW" or "NHWC");
//   - its attributes (int, float, ints, floats, string) with defaults;
//   - its GPU variants: a tier (simt, or a Tensor Core tier whose source may
//     use <mma.h>), the element type, a source file and kernel name, and the
//     launch geometry rule (a thread per `elements_per_thread` elements of
//     the first output, `block` threads a block).
//
// The kernel ABI (kernelPrelude(), prepended to every source): a variant's
// kernel is `extern "C" __global__ void KERNEL(const T *input0, ..., T
// *output0, ..., TesselCustomArgs args)` with T `float` or `__half`; args
// holds every operand's shape and the numeric attributes in declaration
// order. The engine stores no host code: the CPU tier runs an
// implementation the application registers (tessel_register_custom_op).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUSTOM_CUSTOMOP_H
#define TESSEL_CODEGEN_CUSTOM_CUSTOMOP_H

#include "StepKernels.h"

#include "tessel/cpu_kernels.h"
#include "tessel/engine_format.h"

#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessel::custom {

/// Bounds of the kernel ABI (TesselCustomArgs).
constexpr int kMaxOperands = 8;  ///< inputs, and outputs, each
constexpr int kMaxRank = 8;
constexpr int kMaxNumericAttrs = 8;

/// An integer expression over input dims and integer attributes: `a[2]`
/// (dim 2 of input a; negative counts from the last), `size` (an int
/// attribute), integer literals, + - * / (floor division) % and parentheses,
/// optionally compared (== != < <= > >=: 1 or 0) with another.
class DimExpr {
public:
  /// Parses `text`; on error, `error` says where.
  static std::optional<DimExpr> parse(const std::string &text,
                                      const std::vector<std::string> &inputs,
                                      const std::vector<std::string> &intAttrs,
                                      std::string &error);
  /// Its value for these input shapes and attributes; nothing on a dim out
  /// of range, a division by zero or an overflow (`error` says which).
  std::optional<int64_t> evaluate(const std::vector<std::vector<int64_t>> &inputShapes,
                                  const std::map<std::string, int64_t> &attrs,
                                  std::string &error) const;
  const std::string &text() const { return source; }

  struct Node;

private:
  std::string source;
  std::shared_ptr<const Node> root;
};

struct OutputDecl {
  enum class Rule { SameAs, Broadcast, Dims };
  std::string name;
  Rule rule = Rule::SameAs;
  int input = 0;              ///< SameAs
  std::vector<DimExpr> dims;  ///< Dims
};

struct AttrDecl {
  enum class Kind { Int, Float, Ints, Floats, String };
  std::string name;
  Kind kind = Kind::Float;
  std::optional<cpu::AttrValue> dflt; ///< nothing: required
};

struct VariantDecl {
  engine::Tier tier = engine::Tier::simt;
  std::string dtype;      ///< "f32" or "f16"
  std::string source;     ///< the source's path (relative ones resolved against the manifest's folder)
  std::string sourceName; ///< as the manifest writes it: messages and NVRTC's file name
  std::string kernel;
  uint32_t block = 256;
  uint32_t elementsPerThread = 1;
  /// Conditions on the operands' dims (in the op's layout) and int
  /// attributes, all non-zero where a step may take this variant ("a[3] %
  /// 16 == 0"); a step that fails one takes the next variant.
  std::vector<DimExpr> when;
};

struct CustomOpDecl {
  std::string file; ///< the manifest's path, for messages
  std::string domain, opType;
  std::vector<std::string> inputs;
  /// Per input, the earlier input whose shape it must have (the kernels
  /// index both alike), or -1; or else its dims as expressions over the
  /// earlier inputs' dims (in the op's layout), or none.
  std::vector<int> sameShapeAs;
  std::vector<std::vector<DimExpr>> inputDims;
  std::vector<OutputDecl> outputs;
  std::vector<std::string> dtypes; ///< accepted element types, "f32"/"f16"
  std::string layout = "any";      ///< "any", "NCHW" or "NHWC"
  std::vector<AttrDecl> attributes;
  std::vector<VariantDecl> variants;

  /// "com.example.SiluGate": how messages name the op.
  std::string qualifiedName() const { return domain + "." + opType; }
  bool accepts(const std::string &dtype) const;
  /// The attributes the GPU kernels get (int and float), in declaration order.
  std::vector<const AttrDecl *> numericAttributes() const;
};

/// Reads and checks a manifest (every field, the sources' existence); on
/// failure `error` names the file, and the op once its name is read.
std::optional<CustomOpDecl> loadManifest(const std::string &path, std::string &error);

/// The custom ops a compile knows, by (domain, op type).
class CustomOpRegistry {
public:
  /// Adds the manifest at `path`; fails (with `error`) on a bad manifest or
  /// one whose op another manifest already declares.
  bool load(const std::string &path, std::string &error);
  const CustomOpDecl *find(const std::string &domain, const std::string &opType) const;
  const std::vector<CustomOpDecl> &all() const { return decls; }
  bool empty() const { return decls.empty(); }

private:
  std::vector<CustomOpDecl> decls;
};

/// The C++ every variant's source is compiled behind: TesselCustomArgs and
/// the limits above.
const char *kernelPrelude();

/// The by-value argument the kernels get, as the compiler fills it; its
/// layout is kernelPrelude()'s struct (static_asserts in CustomKernels.cpp).
struct TensorShapeArg {
  int64_t rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t elements = 0;
};
struct CustomArgs {
  int64_t numInputs = 0, numOutputs = 0;
  TensorShapeArg inputs[kMaxOperands];
  TensorShapeArg outputs[kMaxOperands];
  double attrs[kMaxNumericAttrs] = {};
};

/// Plans custom steps' GPU variants: each used source compiled by NVRTC for
/// every target (a cubin per SM, and compute_75 PTX for the others), one
/// module per source file, and a launch per variant.
class CustomKernelPlanner {
public:
  CustomKernelPlanner(const CustomOpRegistry &registry, const codegen::Targets &targets);
  ~CustomKernelPlanner();

  /// The step's variants, best tier first (none for a step that is not a
  /// custom op, or whose dtype no variant has); launches name modules by this
  /// planner's numbering. Fails, with a diagnostic at the op naming the op,
  /// the manifest and the source, when a source does not compile or a
  /// kernel's signature is not the one the manifest declares.
  mlir::FailureOr<std::vector<codegen::KernelVariant>> plan(const codegen::StepView &step);

  /// The modules plan() used, in the order of its numbering.
  std::vector<codegen::KernelModule> finish();

private:
  struct Compiled;
  const CustomOpRegistry &registry;
  codegen::Targets targets;
  std::vector<std::unique_ptr<Compiled>> modules; ///< one per source, in first-use order
};

} // namespace tessel::custom

#endif // TESSEL_CODEGEN_CUSTOM_CUSTOMOP_H
