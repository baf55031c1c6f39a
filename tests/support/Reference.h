//===- Reference.h - what the kernel tests' float64 references share -*- C++ -*-===//
//
// The kernel tests compare each kernel, on random data, with a float64
// reference written in the test from the ONNX operator definition (naive
// loops, independent of the kernel code). This is what several families'
// references share: the comparison and its tolerances, numpy broadcasting,
// the fused activations of the conv/gemm epilogue, and the NCHW <-> NHWC
// transposes that check an NHWC kernel against an NCHW reference.
//
// Tolerances:
//  - f32 elementwise: the kernel computes in float; a correctly rounded float
//    op is within 2^-24 relative, libm float functions within a few ulp, so
//    we allow 2^-20 (16 ulp) of |result| (plus 2^-22 of the largest
//    intermediate term for formulas with cancellation).
//  - f32 accumulations (conv, gemm, matmul): the kernel sums n products in
//    float; the error of such a sum is bounded by ~n * 2^-24 * sum|terms|, and
//    with our n <= ~150 that stays below rtol = 1e-5 of sum|terms| (the
//    magnitude of the sum of |terms|, computed by the reference).
//  - reductions and norms accumulate in double: one final rounding to float,
//    2^-23 of |result| (plus a tiny absolute term).
//  - f16 (11-bit significand): the result is rounded once from float to half,
//    so it is within 2^-11 relative of the float result; we allow 2^-10 of
//    |result| plus the float accumulation error (as above) plus 2^-25 (half of
//    the smallest subnormal spacing) absolute.
//
// Part of tessel_test_support (tests/support), with TestTensor.h.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_SUPPORT_REFERENCE_H
#define TESSEL_TESTS_SUPPORT_REFERENCE_H

#include "TestTensor.h"

#include <random>
#include <string>
#include <vector>

namespace tessel::test {

// Expects |got - ref| <= tol element by element; NaN matches NaN, an
// infinity the same infinity. Reports the first few mismatches.
void expectClose(const Tensor &got, const std::vector<double> &ref,
                 const std::vector<double> &tol, const std::string &what);

// Tolerance of a float result of one rounding (or computed in double): rel
// of |ref| plus an absolute floor.
std::vector<double> relTol(const std::vector<double> &ref, double rel, double abs);

// Final-rounding relative error of a dtype (0 for f64: a tiny one).
double roundingRel(cpu::DType dtype);

// Accumulation tolerance, for results of sum magnitude mag = sum|terms|.
std::vector<double> accTol(cpu::DType dtype, const std::vector<double> &ref,
                           const std::vector<double> &mag);

// Tolerance of a fused conv/gemm result (float accumulation, one rounding):
//  - f32: the float accumulation error as in accTol (1e-5 of sum|terms|),
//    times 1.5, the steepest slope of any epilogue activation (hard_swish on
//    [-3, 3]), plus the activation's own float evaluation (a few ulp: 2^-20
//    of |result|).
//  - f16: f16 storage with f32 accumulation. The operands hold f16 values
//    exactly and the reference reads those values, so their rounding does
//    not enter here (against an f32 model it would add ~2^-11 * sum|x*w|, the
//    per-element bound 2^-11 * (|y| + sum|x*w|) of the precision policy).
//    What remains is the f32 error e32 above and ONE rounding of the result
//    to half: |round(v) - v| <= 2^-11 * |v| in the normal range and 2^-25
//    (half the subnormal spacing) below it, with |v| <= |ref| + e32. An f16
//    accumulation would be off by ~K * 2^-11 * sum|terms| and fails this.
//  - f64: 1.5e-12 of sum|terms|.
std::vector<double> fusedTol(cpu::DType dtype, const std::vector<double> &ref,
                             const std::vector<double> &mag);

// Broadcast shape of a and b (numpy rules; shapes in the tests are valid).
Shape broadcastShape(const Shape &a, const Shape &b);
// The linear index into `in` of output multi-index `index` under
// broadcasting.
int64_t broadcastIndex(const Shape &index, const Shape &in);

// The activations of the conv/gemm epilogue, with the parameters the tests
// use (clip: alpha = min, beta = max; leaky_relu: alpha = slope).
struct ActCase {
  const char *name;
  double alpha, beta;
};
extern const ActCase kActivations[11]; // none first, then each activation
// ONNX's definitions, in double.
double refActivation(const ActCase &act, double v);

// An operand of the GEMM kernels' tests (tests/gpu): `count` values drawn
// uniformly from [-1, 1) as floats and stored rounded to `dtype` (f16 or
// f32), and the values as the kernel reads them.
struct Operand {
  Tensor tensor;
  std::vector<double> values;
};
Operand randomOperand(cpu::DType dtype, int64_t count, std::mt19937 &rng);

// Moves dim 1 to the end: N,C,spatial -> N,spatial,C; for conv weights
// M,C/group,k -> M,k,C/group (OIHW -> OHWI).
Tensor channelsLast(const Tensor &t);
// The inverse: N,spatial,C -> N,C,spatial.
Tensor channelsFirst(const Tensor &t);

} // namespace tessel::test

#endif // TESSEL_TESTS_SUPPORT_REFERENCE_H
