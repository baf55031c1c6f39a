//===- TesselDialect.h - the tessel graph dialect ---------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_TESSELDIALECT_H
#define TESSEL_DIALECTS_TESSELDIALECT_H

#include "TesselTraits.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "TesselEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "TesselAttrs.h.inc"

#include "TesselDialect.h.inc"

namespace tessel {
/// An activation as a conv or gemm epilogue applies it: the kind, and its
/// parameters (leaky_relu's alpha; clip's min and max as alpha and beta).
struct EpilogueActivation {
  Activation kind = Activation::None;
  float alpha = 0.0f, beta = 0.0f;
};
} // namespace tessel

#include "TesselInterfaces.h.inc"

#define GET_OP_CLASSES
#include "TesselOps.h.inc"

#endif // TESSEL_DIALECTS_TESSELDIALECT_H
