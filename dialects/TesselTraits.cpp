//===- TesselTraits.cpp - queries of the declared op facts ----------------===//
#include "TesselDialect.h"

#include <cmath>

using namespace mlir;

namespace tessel {

bool isElementwiseUnary(Operation *op) { return op->hasTrait<traits::ElementwiseUnary>(); }
bool isElementwiseBinary(Operation *op) { return op->hasTrait<traits::ElementwiseBinary>(); }
bool isComparison(Operation *op) { return op->hasTrait<traits::Comparison>(); }
bool isReduction(Operation *op) { return op->hasTrait<traits::Reduction>(); }

namespace {

template <PrecisionClass... Classes>
std::optional<PrecisionClass> declaredPrecision(OperationName name) {
  std::optional<PrecisionClass> found;
  ((name.hasTrait<traits::Precision<Classes>::template Impl>() ? (void)(found = Classes)
                                                                : (void)0),
   ...);
  return found;
}

std::optional<PrecisionClass> precisionOf(OperationName name) {
  using P = PrecisionClass;
  return declaredPrecision<P::TensorCore, P::F16, P::F32, P::Exact, P::InputStorage>(name);
}

template <KernelFamily... Families> KernelFamily declaredFamily(OperationName name) {
  KernelFamily found = KernelFamily::None;
  ((name.hasTrait<traits::Kernel<Families>::template Impl>() ? (void)(found = Families)
                                                             : (void)0),
   ...);
  return found;
}

} // namespace

std::pair<double, double> integerRange(IntegerType t) {
  const unsigned bits = t.getWidth();
  if (t.isUnsigned() || bits == 1)
    return {0.0, std::ldexp(1.0, bits) - 1};
  return {-std::ldexp(1.0, bits - 1), std::ldexp(1.0, bits - 1) - 1};
}

PrecisionClass precisionClass(Operation *op) {
  if (op->hasAttr(kModelPrecisionAttr))
    return PrecisionClass::F32;
  // A custom op's class is its manifest's, per op: F16 (declared) where its
  // kernels take f16, F32 where they take f32 alone.
  if (isa<CustomOp>(op))
    if (auto dtypes = op->getAttrOfType<StringAttr>("dtypes"); dtypes && dtypes.getValue() == "f32")
      return PrecisionClass::F32;
  return precisionOf(op->getName()).value_or(PrecisionClass::F32);
}

bool declaresPrecision(OperationName name) { return precisionOf(name).has_value(); }

KernelFamily kernelFamily(OperationName name) {
  using K = KernelFamily;
  return declaredFamily<K::Gemm, K::Copy, K::Cast, K::Unary, K::Clip, K::Binary, K::Where,
                        K::Transpose, K::Slice, K::Expand, K::Tile, K::Pad, K::Im2Row,
                        K::Concat, K::Gather, K::Reduce, K::Softmax, K::ArgReduce,
                        K::Pool, K::LayerNorm, K::InstanceNorm, K::BatchNorm, K::Lrn,
                        K::Scan, K::GatherElements, K::GatherND, K::ScatterND, K::Trilu,
                        K::Attention, K::Resize, K::TopK, K::Nms, K::PoolFc,
                        K::ElementwiseGroup>(name);
}

std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string joined;
    for (Location inner : fused.getLocations())
      joined += (joined.empty() ? "" : "+") + locationName(inner);
    return joined;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

} // namespace tessel
