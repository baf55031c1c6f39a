//===- LowerPrecision.h - the fp16 precision policy, per op -----*- C++ -*-===//
//
// The precision each graph op runs in when the engine is compiled for fp16, as
// tessel-compile's report prints it. Each op declares its precision class in
// ODS (TesselOps.td, TesselTraits.h: precisionClass); --tessel-lower-precision
// rewrites by it. The policy is documented in Passes.td (LowerPrecision) and
// docs/architecture.md ("Precision policy").
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PASSES_LOWERPRECISION_H
#define TESSEL_PASSES_LOWERPRECISION_H

#include "TesselDialect.h"

#include "mlir/IR/Operation.h"

#include <string>

namespace tessel {

/// The precision `op` runs in, as the compile report prints it:
/// "f16 (f32 accumulate)" for a Tensor Core op on f16, "f16", "f32", "i64"
/// for shape arithmetic, "f32->f16" for a cast.
std::string describePrecision(mlir::Operation *op);

} // namespace tessel

#endif // TESSEL_PASSES_LOWERPRECISION_H
