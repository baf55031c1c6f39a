//===- TesselDialect.h - the tessel graph dialect ---------------*- C++ -*-===//
#ifndef TESSEL_DIALECTS_TESSELDIALECT_H
#define TESSEL_DIALECTS_TESSELDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "TesselDialect.h.inc"

#define GET_OP_CLASSES
#include "TesselOps.h.inc"

#endif // TESSEL_DIALECTS_TESSELDIALECT_H
