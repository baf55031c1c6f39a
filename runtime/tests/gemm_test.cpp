//===- gemm_test.cpp - gemm and matmul kernels ----------------------------===//
//
// gemm (transposes, alpha, beta, C broadcast, fused activations) and matmul
// (numpy semantics, batch broadcast) of gemm.cpp against float64 references.
//
//===----------------------------------------------------------------------===//
#include "Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace tessel::test {
namespace {

using namespace cpu;

//===----------------------------------------------------------------------===//
// gemm, matmul
//===----------------------------------------------------------------------===//

TEST(KernelGemm, TransposesAlphaBetaAndBiasBroadcast) {
  std::mt19937 rng(31);
  const int64_t M = 5, N = 7, K = 33;
  const Shape cShapes[] = {{}, {N}, {1, N}, {M, 1}, {M, N}, {1}, {1, 1}};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (int transA = 0; transA < 2; ++transA)
      for (int transB = 0; transB < 2; ++transB)
        for (int ci = -1; ci < 7; ++ci) {
          const double alpha = ci % 2 ? 0.75 : 1.0, beta = ci % 3 ? -1.25 : 1.0;
          Tensor A = randomTensor(t, transA ? Shape{K, M} : Shape{M, K}, rng);
          Tensor B = randomTensor(t, transB ? Shape{N, K} : Shape{K, N}, rng);
          Tensor C = ci >= 0 ? randomTensor(t, cShapes[ci], rng) : Tensor(t, {});
          Tensor y(t, {M, N});
          Attrs a;
          a.set("alpha", alpha);
          a.set("beta", beta);
          a.set("transA", int64_t(transA));
          a.set("transB", int64_t(transB));
          RUN_OK("gemm", a, {&A, &B, ci >= 0 ? &C : nullptr}, y);
          std::vector<double> ref(M * N), mag(M * N);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0, s = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double term = A.get(transA ? k * M + i : i * K + k) *
                                    B.get(transB ? j * K + k : k * N + j);
                acc += term;
                s += std::fabs(term);
              }
              double r = alpha * acc, sm = std::fabs(alpha) * s;
              if (ci >= 0) {
                const double c = C.get(broadcastIndex({i, j}, cShapes[ci]));
                r += beta * c;
                sm += std::fabs(beta * c);
              }
              ref[i * N + j] = r;
              mag[i * N + j] = sm;
            }
          expectClose(y, ref, accTol(t, ref, mag),
                      std::string("gemm ") + dtypeName(t) + " tA=" + std::to_string(transA) +
                          " tB=" + std::to_string(transB) + " C#" + std::to_string(ci));
        }
  }
}

// gemm's fused activation: act(alpha * op(A) op(B) + beta * C), each
// activation, shapes past one 16-wide panel and one 256-deep K block, and
// more rows than one 6-row tile.
TEST(KernelGemm, FusedActivations) {
  std::mt19937 rng(109);
  const struct {
    int64_t M, N, K;
  } sizes[] = {{5, 7, 33}, {13, 37, 300}, {1, 20, 9}};
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (const auto &sz : sizes)
      for (const ActCase &act : kActivations)
        for (int variant = 0; variant < 4; ++variant) {
          const int64_t M = sz.M, N = sz.N, K = sz.K;
          const bool transA = variant & 1, transB = variant & 2, withC = variant != 3;
          const double alpha = variant == 2 ? 0.5 : 1.0, beta = variant == 1 ? -0.75 : 1.0;
          Tensor A = randomTensor(t, transA ? Shape{K, M} : Shape{M, K}, rng);
          Tensor B = randomTensor(t, transB ? Shape{N, K} : Shape{K, N}, rng);
          const Shape cs = variant == 0 ? Shape{N} : Shape{M, N};
          Tensor C = randomTensor(t, cs, rng, -2, 2);
          Tensor y(t, {M, N});
          Attrs a;
          a.set("alpha", alpha);
          a.set("beta", beta);
          a.set("transA", int64_t(transA));
          a.set("transB", int64_t(transB));
          a.set("activation", std::string(act.name));
          a.set("act_alpha", act.alpha);
          a.set("act_beta", act.beta);
          RUN_OK("gemm", a, {&A, &B, withC ? &C : nullptr}, y);
          std::vector<double> ref(M * N), mag(M * N);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0, s = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double term = A.get(transA ? k * M + i : i * K + k) *
                                    B.get(transB ? j * K + k : k * N + j);
                acc += term;
                s += std::fabs(term);
              }
              double r = alpha * acc, sm = std::fabs(alpha) * s;
              if (withC) {
                const double c = C.get(broadcastIndex({i, j}, cs));
                r += beta * c;
                sm += std::fabs(beta * c);
              }
              ref[i * N + j] = refActivation(act, r);
              mag[i * N + j] = sm;
            }
          expectClose(y, ref, fusedTol(t, ref, mag),
                      std::string("gemm ") + dtypeName(t) + " " + act.name + " M" +
                          std::to_string(M) + " N" + std::to_string(N) + " K" +
                          std::to_string(K) + " variant " + std::to_string(variant));
        }
  Tensor A(DType::F32, {2, 3}), B(DType::F32, {3, 2}), y(DType::F32, {2, 2});
  Attrs bad;
  bad.set("activation", std::string("softmax"));
  EXPECT_FALSE(run("gemm", bad, {&A, &B}, y).ok());
}

TEST(KernelMatMul, NumpySemanticsWithBatchBroadcast) {
  std::mt19937 rng(37);
  const std::pair<Shape, Shape> cases[] = {
      {{3, 4}, {4, 5}},       {{4}, {4, 5}},          {{3, 4}, {4}},
      {{4}, {4}},             {{2, 3, 4}, {4, 5}},    {{2, 1, 3, 4}, {3, 4, 2}},
      {{5, 3, 4}, {1, 4, 6}}, {{7}, {2, 7, 3}},       {{2, 3, 9}, {9}},
      {{1, 1, 40}, {3, 40, 2}}};
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    for (const auto &[sa, sb] : cases) {
      // numpy: promote 1-D operands, broadcast batch dims, drop promoted dims.
      Shape a2 = sa.size() == 1 ? Shape{1, sa[0]} : sa;
      Shape b2 = sb.size() == 1 ? Shape{sb[0], 1} : sb;
      const int64_t M = a2[a2.size() - 2], K = a2.back(), N = b2.back();
      Shape ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
      Shape batch = broadcastShape(ba, bb);
      Shape os = batch;
      if (sa.size() != 1)
        os.push_back(M);
      if (sb.size() != 1)
        os.push_back(N);
      Tensor A = randomTensor(t, sa, rng), B = randomTensor(t, sb, rng);
      Tensor y(t, os);
      RUN_OK("matmul", Attrs{}, {&A, &B}, y);
      std::vector<double> ref, mag;
      for (int64_t bi = 0; bi < numel(batch); ++bi) {
        const Shape idx = unravel(bi, batch);
        const int64_t oa = broadcastIndex(idx, ba), ob = broadcastIndex(idx, bb);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double acc = 0, s = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double term = A.get(oa * M * K + i * K + k) * B.get(ob * K * N + k * N + j);
              acc += term;
              s += std::fabs(term);
            }
            ref.push_back(acc);
            mag.push_back(s);
          }
      }
      expectClose(y, ref, accTol(t, ref, mag),
                  std::string("matmul ") + dtypeName(t) + " " + shapeStr(sa) + "x" + shapeStr(sb));
    }
  }
}

} // namespace
} // namespace tessel::test
