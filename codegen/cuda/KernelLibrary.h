//===- KernelLibrary.h - CUDA kernels for the non-GEMM ops ------*- C++ -*-===//
//
// The kernels of every op that is not a Tensor Core op (elementwise, pooling,
// softmax, reductions, data movement, casts), written in CUDA C++ once and
// compiled when Tessel is built, one module per op family (Library.cu);
// tessel-compile embeds the modules of the families an engine's steps use
// and binds each step's launch.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_KERNELLIBRARY_H
#define TESSEL_CODEGEN_KERNELLIBRARY_H

#include "StepKernels.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace tessel::codegen {

class KernelLibrary {
public:
  /// The step's variants, best tier first: its "simt" variant, preceded by a
  /// "tc-sm70" one where the op's family has a Tensor Core kernel
  /// (attention), or none when the library has no kernel for this op, dtype
  /// or attribute combination (the step then runs on the CPU tier). Each
  /// launch's `module` is the index of the family that defines its kernel
  /// (familyNames()); modules() renumbers them. Records the families used.
  /// Fails, with a diagnostic at the op, only on an internal error.
  mlir::FailureOr<std::vector<KernelVariant>> plan(const StepView &step);

  /// The modules of the families the variants plan() returned use, in family
  /// order, each for `targets` (module(family, targets)). remap[family] is the
  /// index of the family's module in the result, -1 for a family not used;
  /// a launch's module becomes remap[launch.module] (plus where the caller
  /// puts these modules).
  std::vector<KernelModule> modules(const Targets &targets, std::vector<int32_t> &remap) const;

  /// One family's module, "tessel_library_<family>": its PTX plus a cubin for
  /// each target arch it was built for that `targets` asks for.
  static KernelModule module(int32_t family, const Targets &targets);

  /// The families, by index: Library.cu's TSL_FAMILY_<family> blocks in order.
  static const std::vector<std::string> &familyNames();

  /// The kernel entry points of a family (its PTX's `.entry` names), sorted.
  static const std::vector<std::string> &entryNames(int32_t family);

  /// Every kernel entry point of the library, sorted: the names plan() may
  /// launch. plan() launches nothing else.
  static const std::vector<std::string> &entryNames();

  /// The family whose PTX defines `entry`, or -1 if none does.
  static int32_t familyOf(llvm::StringRef entry);

  /// The SM archs the library has cubins for (major*10+minor), ascending.
  static std::vector<int> cubinArchs();

private:
  std::vector<bool> used;
};

} // namespace tessel::codegen

#endif // TESSEL_CODEGEN_KERNELLIBRARY_H
