//===- EngineWriter.h - graph dialect to a .tsl engine ------------*- C++ -*-===//
#ifndef TESSEL_COMPILER_ENGINEWRITER_H
#define TESSEL_COMPILER_ENGINEWRITER_H

#include "Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <vector>

namespace tessel {

/// Serializes the compiled `main` function: tensors, arena plan, constants,
/// the step list and each step's kernel variants. Deterministic: the bytes
/// depend only on the module and the options.
mlir::FailureOr<std::vector<uint8_t>> writeEngine(mlir::ModuleOp module,
                                                  const CompileOptions &options);

} // namespace tessel

#endif // TESSEL_COMPILER_ENGINEWRITER_H
