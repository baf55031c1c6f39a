//===- TesselDialect.td - the tessel graph dialect ------------*- tablegen -*-===//
//
// The graph-level IR Tessel imports ONNX into: ops on ranked, statically shaped
// tensors, with ONNX semantics normalized at import (explicit pads, positive
// axes, static result shapes) so that passes and kernels never re-derive them.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DIALECT_TD
#define TESSEL_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tessel_Dialect : Dialect {
  let name = "tessel";
  let cppNamespace = "::tessel";
  let summary = "Tessel's graph dialect: ONNX-level ops on static tensors";
  let description = [{
    Every op carries the ONNX node it came from as its Location
    (`loc("node_name(OpType)")`). Attributes are normalized by the importer:
    axes are non-negative, pads are explicit (all begins, then all ends) and
    every result type is a static ranked tensor.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  // On the function's arguments and results: the graph input or output's
  // ONNX name, and, for a 4-D tensor the caller hands over or takes back,
  // its layout (--tessel-io-format); on a result that is the run-time
  // extent of another result's axis (--tessel-data-dependent-extents),
  // [that result, the axis].
  let discardableAttrs = (ins
    "::mlir::StringAttr":$name,
    "::tessel::LayoutAttr":$layout,
    "::mlir::DenseI64ArrayAttr":$extent_of
  );
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

#endif // TESSEL_DIALECT_TD
