//===- Epilogue.cpp - the fused epilogue of the GEMM kernels --------------===//
//
// The epilogue's IR: reading the staged accumulators back in row-major order
// (16-byte runs of output where they fit), the linear combination, the
// activations with the CPU tier's formulas (e^x on ex2.approx, 1/x on
// rcp.approx, polynomials by FMA, tanh as Cephes'), one rounding, the
// stores; split-K's partial stores.
//
//===----------------------------------------------------------------------===//
#include "gemm/Epilogue.h"

#include "gemm/Staging.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace tessel::codegen::gemm {

void Epilogue::declareStaging(Value sharedBytes, int64_t offset) {
  staging = view(sharedBytes, offset, {stagingRows(t), stagingLd(t)}, b.getF32Type());
}

void Epilogue::declareViews(gpu::GPUFuncOp func, ArrayRef<llvm::StringRef> params) {
  if (p.addend)
    addend = elementView(func, params, "addend", *p.addend);
  if (p.residual)
    residual = elementView(func, params, "residual", *p.residual);
  out = elementView(func, params, "out", p.out);
  const int64_t lanes = runLanes();
  if (lanes == 1)
    return;
  // Vector views of 16-byte runs: the output, and the residual and addend
  // where they have the output's type (and the addend runs along n).
  auto runs = [&](llvm::StringRef name) {
    Value bytes = func.getArgument(llvm::find(params, name) - params.begin());
    return view(bytes, 0, {operandElements(p, name) / lanes},
                VectorType::get({lanes}, elemType(p.out)));
  };
  outRuns = runs("out");
  if (p.residual && *p.residual == p.out)
    residualRuns = runs("residual");
  bool addendAlongN = p.op == GemmOpKind::Conv ||
                      (p.addendColStride == 1 && p.addendRowStride % lanes == 0 &&
                       operandElements(p, "addend") % lanes == 0);
  if (p.addend && *p.addend == p.out && addendAlongN)
    addendRuns = runs("addend");
}

/// Every thread takes staged elements in row-major order, so that a warp
/// stores (and reads the residual) along contiguous output rows.
void Epilogue::storeStaged(int64_t rows, function_ref<Value(Value)> tileRow) {
  if (const int64_t lanes = runLanes(); lanes > 1) {
    // Runs of `lanes` columns: one 16-byte store of the output per thread.
    // Where a residual is read, a thread's runs go in groups: the group's
    // residual loads first, then its stores (the loads cannot pass a store
    // to the output, which may alias the residual as far as the compiler
    // knows): one memory round trip a group instead of one a run. ResNet-
    // 50's 1x1 convs with their residual at batch 256 are bound by it.
    const int64_t runsPerRow = t.blockN / lanes, runs = rows * runsPerRow;
    // (The group divides the thread's runs, so every group is whole.)
    const int64_t threads = t.mathThreads();
    int64_t group = residualRuns && runs % threads == 0 ? kResidualGroup : 1;
    while (group > 1 && (runs / threads) % group != 0)
      --group;
    b.create<scf::ForOp>(
        loc, block.tid, c(runs), c(threads * group), ValueRange{},
        [&](OpBuilder &, Location, Value first, ValueRange) {
          SmallVector<Value> ms, ns, cols, rowsOf, residuals;
          for (int64_t g = 0; g < group; ++g) {
            Value e = add(first, g * threads);
            Value row = div(e, runsPerRow), col = mul(rem(e, runsPerRow), lanes);
            rowsOf.push_back(row);
            cols.push_back(col);
            ms.push_back(add(block.m0, tileRow(row)));
            ns.push_back(add(block.n0, col));
            if (group > 1)
              residuals.push_back(loadResidualRun(ms.back(), ns.back()));
          }
          for (int64_t g = 0; g < group; ++g) {
            SmallVector<Value> values;
            for (int64_t l = 0; l < lanes; ++l)
              values.push_back(b.create<memref::LoadOp>(
                  loc, staging, ValueRange{rowsOf[g], add(cols[g], l)}));
            storeRun(ms[g], ns[g], values, Value(), group > 1 ? residuals[g] : Value());
          }
          b.create<scf::YieldOp>(loc);
        });
    return;
  }
  b.create<scf::ForOp>(loc, block.tid, c(rows * t.blockN), c(t.mathThreads()), ValueRange{},
                       [&](OpBuilder &, Location, Value e, ValueRange) {
                         Value row = div(e, t.blockN), col = rem(e, t.blockN);
                         Value v = b.create<memref::LoadOp>(loc, staging, ValueRange{row, col});
                         Value m = add(block.m0, tileRow(row)), n = add(block.n0, col);
                         if (kernel.splitsK())
                           storePartial(m, n, v);
                         else
                           storeElement(m, n, v);
                         b.create<scf::YieldOp>(loc);
                       });
}

Value Epilogue::finish(Value n, Value v) {
  Value bias;
  if (p.addend) {
    Value column = b.create<arith::MinUIOp>(loc, n, c(p.n - 1));
    bias = b.create<memref::LoadOp>(loc, addend, addendAddress(Value(), column));
  }
  return value(v, bias, Value());
}

Value Epilogue::outAddress(Value m, Value n) {
  switch (p.op) {
  case GemmOpKind::Conv: // groups side by side in the channels
    return add(add(mul(m, p.conv.outC), mul(block.z, p.n)), n);
  case GemmOpKind::Gemm: return add(mul(m, p.n), n);
  case GemmOpKind::MatMul: return add(add(mul(block.z, p.m * p.n), mul(m, p.n)), n);
  }
  return Value();
}

Value Epilogue::addendAddress(Value m, Value n) {
  return p.op == GemmOpKind::Conv ? add(mul(block.z, p.n), n)
                                  : add(mul(m, p.addendRowStride), mul(n, p.addendColStride));
}

/// The CPU tier's order (runtime/kernels/src/gemm.cpp, epilogueRow): alpha * acc, + the first
/// addend (bias, or beta * C), + the residual, activation, one rounding.
Value Epilogue::value(Value v, Value addendTerm, Value residualTerm) {
  if (p.alpha != 1.0f)
    v = fmul(v, f(p.alpha));
  if (addendTerm) {
    Value term = toF32(addendTerm);
    if (p.op == GemmOpKind::Gemm && p.beta != 1.0f)
      term = fmul(f(p.beta), term);
    v = fadd(v, term);
  }
  if (residualTerm)
    v = fadd(v, toF32(residualTerm));
  v = activate(v);
  if (p.out == ElemType::F16)
    v = b.create<arith::TruncFOp>(loc, b.getF16Type(), v);
  return v;
}

int64_t Epilogue::columns() const { return t.dwLanes ? p.conv.outC : p.n; }

void Epilogue::storeElement(Value m, Value n, Value v, Value valid) {
  auto ifOp = b.create<scf::IfOp>(loc, runInRange(m, n, valid), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value at = outAddress(m, n);
  Value addendTerm =
      p.addend ? b.create<memref::LoadOp>(loc, addend, addendAddress(m, n)).getResult() : Value();
  Value residualTerm =
      p.residual ? b.create<memref::LoadOp>(loc, residual, at).getResult() : Value();
  b.create<memref::StoreOp>(loc, value(v, addendTerm, residualTerm), out, at);
}

/// 16 bytes of output per thread where every run of that many columns is
/// wholly in or out of range and 16-byte aligned: N and the tile's width
/// multiples of the lanes (so are the conv's channel count and the
/// matmul's batch stride), and no split-K (whose partials stay f32).
int64_t Epilogue::runLanes() const {
  if (t.direct)
    return std::max<int64_t>(t.dwLanes, 1);
  const int64_t lanes = 16 / elemBytes(p.out);
  if (kernel.splitsK() || t.blockN % lanes != 0 || p.n % lanes != 0)
    return 1;
  return lanes;
}

/// The residual's run of output element (m, n) as a vector, read where the
/// run is in range (zeros elsewhere).
Value Epilogue::loadResidualRun(Value m, Value n) {
  auto type = cast<VectorType>(cast<MemRefType>(residualRuns.getType()).getElementType());
  auto ifOp = b.create<scf::IfOp>(loc, TypeRange{type}, runInRange(m, n, Value()),
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value run = b.create<memref::LoadOp>(loc, residualRuns,
                                       div(outAddress(m, n), type.getNumElements()));
  b.create<scf::YieldOp>(loc, run);
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  b.create<scf::YieldOp>(
      loc, ValueRange{b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(type)))});
  return ifOp.getResult(0);
}

/// (m, n) within the output (and `valid`, where given).
Value Epilogue::runInRange(Value m, Value n, Value valid) {
  return both(valid, both(below(m, p.m), below(n, columns())));
}

/// A run of runLanes() columns from n: the addend (where contiguous
/// along n) and the residual (where of the output's type) read as vectors,
/// the output written as one.
void Epilogue::storeRun(Value m, Value n, ArrayRef<Value> values, Value valid,
                        Value residualRun) {
  const int64_t lanes = int64_t(values.size());
  auto ifOp = b.create<scf::IfOp>(loc, runInRange(m, n, valid), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value at = outAddress(m, n);
  // Per lane: the element of a vector load, or a scalar load.
  auto operandLanes = [&](Value elems, Value runs, Value address, int64_t stride) {
    SmallVector<Value> lane;
    if (runs) {
      Value run = b.create<memref::LoadOp>(loc, runs, div(address, lanes));
      for (int64_t l = 0; l < lanes; ++l)
        lane.push_back(b.create<vector::ExtractOp>(loc, run, l));
    } else {
      for (int64_t l = 0; l < lanes; ++l)
        lane.push_back(b.create<memref::LoadOp>(loc, elems, add(address, l * stride)));
    }
    return lane;
  };
  SmallVector<Value> addendTerms(lanes), residualTerms(lanes);
  if (p.addend)
    addendTerms = operandLanes(addend, addendRuns, addendAddress(m, n),
                               p.op == GemmOpKind::Conv ? 1 : p.addendColStride);
  if (residualRun)
    for (int64_t l = 0; l < lanes; ++l)
      residualTerms[l] = b.create<vector::ExtractOp>(loc, residualRun, l);
  else if (p.residual)
    residualTerms = operandLanes(residual, residualRuns, at, 1);
  Type outType = elemType(p.out);
  Value result = b.create<arith::ConstantOp>(
      loc, cast<TypedAttr>(b.getZeroAttr(VectorType::get({lanes}, outType))));
  for (int64_t l = 0; l < lanes; ++l)
    result = b.create<vector::InsertOp>(
        loc, value(values[l], addendTerms[l], residualTerms[l]), result, l);
  b.create<memref::StoreOp>(loc, result, outRuns, div(at, lanes));
}

/// Split-K: the block's f32 partial sum of (m, n) into the workspace,
/// [batch][splitK][M][N].
void Epilogue::storePartial(Value m, Value n, Value v) {
  auto ifOp = b.create<scf::IfOp>(loc, both(below(m, p.m), below(n, p.n)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value plane = add(mul(block.z, t.splitK), block.split);
  b.create<memref::StoreOp>(loc, v, workspace, add(mul(add(mul(plane, p.m), m), p.n), n));
}

/// e^x as 2^(x log2 e) on the SFU (ex2.approx, 2 ulp), with the rounding
/// error of x * log2(e) added back to first order, so that the result is
/// within a few f32 ulp over the whole range (no libdevice needed).
Value Epilogue::exp(Value x) {
  const float log2e = 1.44269502f;         // log2(e) rounded to f32
  const float log2eLow = 1.925963033e-8f;  // log2(e) - log2e
  Value y = fmul(x, f(log2e));
  // err = x * log2(e) - y, exactly via FMA, plus the constant's own error.
  Value err = fma(x, f(log2eLow), fma(x, f(log2e), fneg(y)));
  Value r = inlinePtx("ex2.approx.f32 $0, $1;", "=f,f", ValueRange{y});
  // 2^(y + err) = 2^y (1 + err ln 2); skipped where 2^y is 0 or inf (err
  // NaN there, and inf * 0 too: the result is then r itself).
  Value small = fcmp(arith::CmpFPredicate::OLT, fabs(y), f(126.0f));
  return select(small, fma(r, fmul(err, f(0.693147182f)), r), r);
}

/// 1 / x on the SFU (rcp.approx, within 1 ulp; x flushed to 0 when
/// subnormal, which no denominator here is: each is at least 1). IEEE
/// division (div.rn, rcp.rn) is a long instruction sequence with a slow
/// path: in the epilogue, after the main loop, with few warps an SM to hide
/// its latency, it made GELU cost as much as a third of the GEMM.
Value Epilogue::reciprocal(Value x) {
  return inlinePtx("rcp.approx.ftz.f32 $0, $1;", "=f,f", ValueRange{x});
}

/// The activations as the CPU tier computes them (gemm.cpp, activateRow):
/// comparisons are false on NaN, so NaN passes through each of them.
Value Epilogue::activate(Value v) {
  using P = arith::CmpFPredicate;
  Value zero = f(0.0f), one = f(1.0f);
  switch (p.act) {
  case Activation::None: return v;
  case Activation::Relu: return select(fcmp(P::OLT, v, zero), zero, v);
  case Activation::Clip: {
    Value lo = f(p.actAlpha), hi = f(p.actBeta);
    Value x = select(fcmp(P::OLT, v, lo), lo, v);
    return select(fcmp(P::OGT, x, hi), hi, x);
  }
  case Activation::LeakyRelu:
    return select(fcmp(P::OLT, v, zero), fmul(f(p.actAlpha), v), v);
  case Activation::Sigmoid: return sigmoid(v);
  case Activation::Silu: return fmul(v, sigmoid(v));
  case Activation::HardSigmoid: {
    Value x = fadd(fmul(f(p.actAlpha), v), f(p.actBeta)); // as the CPU: two roundings
    return select(fcmp(P::OLT, x, zero), zero, select(fcmp(P::OGT, x, one), one, x));
  }
  case Activation::Tanh: return tanh(v);
  case Activation::HardSwish: {
    Value x = fadd(fdiv(v, f(6.0f)), f(0.5f));
    x = select(fcmp(P::OLT, x, zero), zero, select(fcmp(P::OGT, x, one), one, x));
    return fmul(v, x);
  }
  case Activation::Gelu:
    // x * Phi(x) = x/2 * erfc(-x / sqrt 2), as the CPU computes it.
    return fmul(fmul(f(0.5f), v), erfc(fmul(fneg(v), f(0.707106781f))));
  case Activation::GeluTanh: {
    // x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), ONNX Gelu's
    // "tanh", as the CPU computes it: x / (1 + e^-2u), no cancellation.
    Value cube = fmul(fmul(v, v), v);
    Value u = fmul(f(0.797884561f), fma(f(0.044715f), cube, v));
    return fmul(v, reciprocal(fadd(one, exp(fmul(f(-2.0f), u)))));
  }
  }
  return v;
}

/// x >= 0: 1 / (1 + e^-x); else e^x / (1 + e^x): no overflow either way.
Value Epilogue::sigmoid(Value v) {
  Value nonNegative = fcmp(arith::CmpFPredicate::OGE, v, f(0.0f));
  Value e = exp(fneg(fabs(v)));
  Value inverse = reciprocal(fadd(f(1.0f), e));
  return select(nonNegative, inverse, fmul(e, inverse));
}

/// Cephes tanhf: an odd polynomial below |x| = 0.625 (no cancellation),
/// 1 - 2 / (e^2|x| + 1) with the sign of x above.
Value Epilogue::tanh(Value v) {
  using P = arith::CmpFPredicate;
  Value zero = f(0.0f), one = f(1.0f);
  Value ax = fabs(v);
  Value s = fmul(v, v);
  Value poly = f(-5.70498872745e-3f);
  for (float coefficient : {2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                            -3.33332819422e-1f})
    poly = fma(poly, s, f(coefficient));
  Value nearZero = fma(fmul(poly, s), v, v);
  Value far = fsub(one, fmul(f(2.0f), reciprocal(fadd(exp(fadd(ax, ax)), one))));
  far = select(fcmp(P::OLT, v, zero), fneg(far), far);
  return select(fcmp(P::OLT, ax, f(0.625f)), nearZero, far);
}

/// erfc by Numerical Recipes' Chebyshev fit (erfcc: relative error below
/// 1.2e-7 for every z >= 0), 2 - erfc(-z) for z < 0; relative accuracy in
/// the tail where erfc is small, which GELU's left tail needs.
Value Epilogue::erfc(Value z) {
  using P = arith::CmpFPredicate;
  Value az = fabs(z);
  Value t = reciprocal(fma(f(0.5f), az, f(1.0f)));
  Value poly = f(0.17087277f);
  for (float coefficient : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f,
                            -0.18628806f, 0.09678418f, 0.37409196f, 1.00002368f,
                            -1.26551223f})
    poly = fma(poly, t, f(coefficient));
  Value tail = fmul(t, exp(fma(fneg(az), az, poly)));
  return select(fcmp(P::OLT, z, f(0.0f)), fsub(f(2.0f), tail), tail);
}

} // namespace tessel::codegen::gemm
