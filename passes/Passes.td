//===- Passes.td - Tessel's graph passes ----------------------*- tablegen -*-===//
#ifndef TESSEL_PASSES_TD
#define TESSEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldConstants : Pass<"tessel-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate ops whose operands are all constants at compile time";
  let description = [{
    Runs the runtime's own CPU kernel for each op whose operands are all
    `tessel.constant`s and replaces it with a constant: shape-computing
    subgraphs (Shape -> Gather -> Concat -> Reshape and the like) and weight
    preprocessing disappear before code generation. Ops producing more than
    `max-elements` elements are left alone to keep engines small.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 24",
           "largest result (in elements) to fold">
  ];
  let dependentDialects = ["::tessel::TesselDialect"];
}

#endif // TESSEL_PASSES_TD
