//===- FuseGelu.cpp - --tessel-fuse-gelu ----------------------------------===//
//
// GELU as exporters write it before ONNX Gelu (opset 20), op by op:
//
//   erf form:   0.5 * x * (1 + erf(x / sqrt 2))           -> tessel.gelu
//   tanh form:  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//                                                          -> tessel.gelu_tanh
//
// in whatever order and grouping of the multiplications the model wrote
// (x * 0.5 first, 0.5 * (...) last, x / 1.41421 or x * 0.70711, pow(x, 3)
// or x * x * x). One op instead of five to nine steps, and an op a GEMM's
// epilogue applies (--tessel-fuse-epilogue), so that a transformer's MLP
// up-projection, its bias and its GELU are one kernel.
//
// The match is by construction, then by value:
//  - the subgraph: from an erf (a tanh) forward through at most kMaxAfter
//    single-consumer elementwise ops to `out`, and backward from `out`
//    through elementwise ops to one value x and scalar constants, every op
//    of it of x's type (nothing broadcasts) and, but for `out`, used only
//    inside it; exactly one erf (tanh) in it;
//  - the function: the subgraph, evaluated in double at kSamples points of
//    [-8, 8], is GELU's (erf or tanh form) within a relative 1e-5, far below
//    f32's rounding of the exported constants' effect (1e-7) and far above
//    what a different function of these ops could hide in (the samples
//    include both tails, where a missing 0.5, a sign or a shifted x shows).
// Both must hold, or the ops stay as they are: never a wrong fusion.
//
//===----------------------------------------------------------------------===//
#include "GraphRewrite.h"
#include "Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace tessel {
#define GEN_PASS_DEF_FUSEGELU
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {

constexpr int kMaxAfter = 4;  // ops from the erf/tanh to the result
constexpr int kMaxOps = 12;   // ops in the whole subgraph
constexpr int kSamples = 33;  // evaluation points in [-8, 8]


/// The ops a GELU decomposition is written with.
bool isGeluPiece(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, ErfOp, TanhOp, SqrtOp, NegOp>(op);
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/// A candidate subgraph: `ops` computing `out` from `x` and scalar constants.
class Subgraph {
public:
  Subgraph(Value x, Value out) : x(x), out(out) {}

  /// Collects the ops between x and out; false if a path leaves the
  /// allowed ops or constants, or the subgraph grows past kMaxOps.
  bool collect() { return visit(out); }

  /// Whether every op's result is x's type and only `out` is used outside.
  bool isClosed() const {
    for (Operation *op : ops) {
      if (op->getResult(0).getType() != x.getType())
        return false;
      if (op->getResult(0) == out)
        continue;
      for (Operation *user : op->getUsers())
        if (!ops.contains(user))
          return false;
    }
    return true;
  }

  int count(llvm::function_ref<bool(Operation *)> pred) const {
    return static_cast<int>(llvm::count_if(ops, pred));
  }

  /// The subgraph's value at x = `at`, in double.
  double evaluate(double at) {
    values.clear();
    values[x] = at;
    return eval(out);
  }

private:
  bool visit(Value v) {
    if (v == x || splatConstant(v))
      return true;
    Operation *op = v.getDefiningOp();
    if (!op || !isGeluPiece(op))
      return false;
    if (ops.contains(op))
      return true;
    if (ops.size() >= kMaxOps)
      return false;
    ops.insert(op);
    for (Value operand : op->getOperands())
      if (!visit(operand))
        return false;
    return true;
  }

  double eval(Value v) {
    if (auto it = values.find(v); it != values.end())
      return it->second;
    if (std::optional<double> c = splatConstant(v))
      return *c;
    Operation *op = v.getDefiningOp();
    auto arg = [&](unsigned i) { return eval(op->getOperand(i)); };
    double r = llvm::TypeSwitch<Operation *, double>(op)
                   .Case([&](AddOp) { return arg(0) + arg(1); })
                   .Case([&](SubOp) { return arg(0) - arg(1); })
                   .Case([&](MulOp) { return arg(0) * arg(1); })
                   .Case([&](DivOp) { return arg(0) / arg(1); })
                   .Case([&](PowOp) { return std::pow(arg(0), arg(1)); })
                   .Case([&](ErfOp) { return std::erf(arg(0)); })
                   .Case([&](TanhOp) { return std::tanh(arg(0)); })
                   .Case([&](SqrtOp) { return std::sqrt(arg(0)); })
                   .Case([&](NegOp) { return -arg(0); })
                   .Default([](Operation *) { return std::nan(""); });
    values[v] = r;
    return r;
  }

  Value x, out;
  llvm::SetVector<Operation *> ops;
  llvm::DenseMap<Value, double> values;
};

/// Whether `f` agrees with `reference` at the samples (relative 1e-5, and
/// 1e-9 absolute where GELU's left tail vanishes).
bool agrees(Subgraph &f, double (*reference)(double)) {
  for (int i = 0; i < kSamples; ++i) {
    const double at = -8.0 + 16.0 * i / (kSamples - 1);
    const double want = reference(at), got = f.evaluate(at);
    if (!(std::fabs(got - want) <= 1e-5 * std::fabs(want) + 1e-9))
      return false;
  }
  return true;
}

/// The values the erf/tanh's argument is computed from, nearest first: the
/// candidates for x.
SmallVector<Value> inputsOf(Operation *core) {
  SmallVector<Value> candidates;
  llvm::SmallPtrSet<Operation *, 8> seen;
  SmallVector<Value> work{core->getOperand(0)};
  while (!work.empty() && candidates.size() < kMaxOps) {
    Value v = work.front();
    work.erase(work.begin());
    if (splatConstant(v) || llvm::is_contained(candidates, v))
      continue;
    candidates.push_back(v);
    Operation *op = v.getDefiningOp();
    if (op && isGeluPiece(op) && seen.insert(op).second)
      llvm::append_range(work, op->getOperands());
  }
  return candidates;
}

template <typename CoreOp, typename FusedOp>
struct FuseGeluForm : OpRewritePattern<CoreOp> {
  FuseGeluForm(MLIRContext *context, double (*reference)(double))
      : OpRewritePattern<CoreOp>(context), reference(reference) {}

  LogicalResult matchAndRewrite(CoreOp core, PatternRewriter &rewriter) const override {
    // `out` candidates: the single-consumer chain after the erf/tanh, the
    // furthest first (the whole GELU rather than a part of it).
    SmallVector<Value> outs;
    Value v = core->getResult(0);
    for (int i = 0; i < kMaxAfter && v.hasOneUse(); ++i) {
      Operation *user = *v.getUsers().begin();
      if (!isGeluPiece(user))
        break;
      v = user->getResult(0);
      outs.push_back(v);
    }
    for (Value out : llvm::reverse(outs))
      for (Value x : inputsOf(core)) {
        Subgraph f(x, out);
        if (!f.collect() || !f.isClosed() || f.count([](Operation *op) {
              return isa<ErfOp, TanhOp>(op);
            }) != 1 || !agrees(f, reference))
          continue;
        rewriter.setInsertionPointAfterValue(out);
        Location loc = rewriter.getFusedLoc({core.getLoc(), out.getLoc()});
        rewriter.replaceAllUsesWith(out, rewriter.create<FusedOp>(loc, x.getType(), x));
        return success();
      }
    return rewriter.notifyMatchFailure(core, "not inside a GELU decomposition");
  }

  double (*reference)(double);
};

struct FuseGeluPass : impl::FuseGeluBase<FuseGeluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseGeluPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void populateFuseGeluPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseGeluForm<ErfOp, GeluOp>>(patterns.getContext(), &gelu);
  patterns.add<FuseGeluForm<TanhOp, GeluTanhOp>>(patterns.getContext(), &geluTanh);
}

} // namespace tessel
