//===- gemm.cpp - gemm, matmul, and the epilogue conv and gemm share -------===//
//
// gemm (act(alpha * op(A) op(B) + beta * C), C broadcast to [M, N]) and
// matmul (numpy semantics: 1-D operands promoted, batch dims broadcast) on
// the packed GEMM of gemm_tile.cpp; and the epilogue every Tensor Core
// candidate ends with (gemm.h): + bias, + residual or beta * C, then the
// fused activation (activateRow), on float (double) accumulators rounded
// once into the result.
//
// Precision: f32 and f16 tensors compute and accumulate in float (f16 is
// widened to float as it is loaded: packed panels and a converted A are
// built in float); f64 tensors compute in double.
//
//===----------------------------------------------------------------------===//
#include "gemm.h"
#include "common.h"
#include "tessel/elementwise_math.h"
#include "registry.h"

#include <algorithm>
#include <cmath>

namespace tessel::cpu {

//===----------------------------------------------------------------------===//
// The epilogue
//===----------------------------------------------------------------------===//

KernelStatus readActivation(const char *op, const Attrs &attrs, const char *kindName,
                            const char *alphaName, const char *betaName, Activation &a) {
  const std::string &kind = attrs.getString(kindName);
  const int index = elementwise::activationIndex(kind.c_str());
  if (index < 0) {
    std::string known;
    for (int i = 0; i < elementwise::kActivationCount; ++i)
      known += std::string(i ? ", " : "") + elementwise::kActivationNames[i];
    return fail(std::string(op) + ": unknown activation '" + kind + "' (" + known + ")");
  }
  a.kind = static_cast<Act>(index);
  a.alpha = attrs.getFloat(alphaName, 0.0);
  a.beta = attrs.getFloat(betaName, 0.0);
  return {};
}

namespace {

/// `act` on a row: the shared formulas (tessel/elementwise_math.h), which
/// the GPU library's epilogues apply too.
template <Act act, typename C> void activateAll(C *v, int64_t n, const Activation &a) {
  for (int64_t j = 0; j < n; ++j)
    v[j] = elementwise::activate<act, C>(v[j], a.alpha, a.beta);
}

template <typename C> void activateRow(C *v, int64_t n, const Activation &a) {
  switch (a.kind) {
  case Act::None: break;
  case Act::Relu: activateAll<Act::Relu>(v, n, a); break;
  case Act::Clip: activateAll<Act::Clip>(v, n, a); break;
  case Act::LeakyRelu: activateAll<Act::LeakyRelu>(v, n, a); break;
  case Act::Sigmoid: activateAll<Act::Sigmoid>(v, n, a); break;
  case Act::Tanh: activateAll<Act::Tanh>(v, n, a); break;
  case Act::HardSwish: activateAll<Act::HardSwish>(v, n, a); break;
  case Act::Gelu: activateAll<Act::Gelu>(v, n, a); break;
  case Act::GeluTanh: activateAll<Act::GeluTanh>(v, n, a); break;
  case Act::Silu: activateAll<Act::Silu>(v, n, a); break;
  case Act::HardSigmoid: activateAll<Act::HardSigmoid>(v, n, a); break;
  }
}

// v[j] += scale * t[offset + j * stride] for j < n (t a float tensor).
template <typename C>
void addRow(C *v, int64_t n, const TensorView &t, int64_t offset, int64_t stride, C scale) {
  withFloatType(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *src = static_cast<const T *>(t.data) + offset;
    if (scale == C(1)) {
      for (int64_t j = 0; j < n; ++j)
        v[j] += loadAs<C>(src[j * stride]);
    } else {
      for (int64_t j = 0; j < n; ++j)
        v[j] += scale * loadAs<C>(src[j * stride]);
    }
  });
}

// out[offset + j] = v[j] rounded to the result's dtype, for j < n.
template <typename C> void storeRow(const C *v, int64_t n, TensorView &out, int64_t offset) {
  withFloatType(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T *dst = static_cast<T *>(out.data) + offset;
    for (int64_t j = 0; j < n; ++j)
      dst[j] = storeElem<T>(static_cast<MathType<T>>(v[j]));
  });
}

} // namespace

template <typename C>
void epilogueRow(C *v, int64_t n, double scale, const Addend &first, const Addend &second,
                 const Activation &act, TensorView &out, int64_t outOffset) {
  if (scale != 1.0) {
    const C s = static_cast<C>(scale);
    for (int64_t j = 0; j < n; ++j)
      v[j] *= s;
  }
  for (const Addend *a : {&first, &second})
    if (a->t)
      addRow(v, n, *a->t, a->offset, a->stride, static_cast<C>(a->scale));
  activateRow(v, n, act);
  storeRow(v, n, out, outOffset);
}

template void epilogueRow<float>(float *, int64_t, double, const Addend &, const Addend &,
                                 const Activation &, TensorView &, int64_t);
template void epilogueRow<double>(double *, int64_t, double, const Addend &, const Addend &,
                                  const Activation &, TensorView &, int64_t);

namespace {

//===----------------------------------------------------------------------===//
// gemm, matmul
//===----------------------------------------------------------------------===//

template <typename C>
void gemmRun(const TensorView &a, const TensorView &b, const TensorView *c,
             const TensorView *residual, TensorView &out, bool transA, bool transB, double alpha,
             double beta, int64_t M, int64_t N, int64_t K, const Activation &act) {
  Input<C> ai(a, kSlotA);
  const int64_t rsa = transA ? 1 : K, csa = transA ? M : 1;
  const int64_t Np = roundUp(N, kNR);
  C *bp = scratch<C>(kSlotPacked, static_cast<size_t>(Np * K));
  // B(k, j) = b[k * N + j], or b[j * K + k] when transposed.
  packPanels<C>(b, 0, transB ? 1 : N, transB ? K : 1, K, N, bp);
  // C broadcasts (right-aligned) to [M, N].
  int64_t rowStride = 0, colStride = 0;
  if (c) {
    const std::vector<int64_t> &cs = c->shape;
    const int64_t cm = cs.size() >= 2 ? cs[cs.size() - 2] : 1;
    const int64_t cn = cs.empty() ? 1 : cs.back();
    rowStride = cm == 1 ? 0 : cn;
    colStride = cn == 1 ? 0 : 1;
  }
  const int64_t rowsPerChunk = chunkRows(M, Np);
  C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(rowsPerChunk * Np));
  for (int64_t i0 = 0; i0 < M; i0 += rowsPerChunk) {
    const int64_t rows = std::min(rowsPerChunk, M - i0);
    gemmPacked<C>(rows, K, Np, ai.data() + i0 * rsa, rsa, csa, bp, acc, Np);
    for (int64_t r = 0; r < rows; ++r)
      epilogueRow<C>(acc + r * Np, N, alpha, Addend{c, (i0 + r) * rowStride, colStride, beta},
                     Addend{residual, (i0 + r) * N, 1, 1.0}, act, out, (i0 + r) * N);
  }
}

KernelStatus gemmKernel(const Attrs &attrs, const std::vector<const TensorView *> &inputs,
                        const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("gemm", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &a = *inputs[0], &b = *inputs[1];
  const TensorView *c = optionalInput(inputs, 2);
  TensorView &out = *outputs[0];
  if (!isFloat(a.dtype))
    return unsupported("gemm", a.dtype);
  if (b.dtype != a.dtype || out.dtype != a.dtype || (c && !isFloat(c->dtype)))
    return fail("gemm: operand and result dtypes must match");
  // A is [M, K] ([K, M] with transA), or [..., K] with its leading dims
  // flattened into M; the result keeps them: [..., N].
  const size_t rank = a.shape.size();
  if (rank < 2 || b.shape.size() != 2 || out.shape.size() != rank)
    return fail("gemm: A must have rank >= 2, B be 2-D and the result of A's rank");
  const bool transA = attrs.getInt("transA", 0) != 0, transB = attrs.getInt("transB", 0) != 0;
  if (transA && rank != 2)
    return fail("gemm: transA needs a 2-D A");
  const int64_t K = transA ? a.shape[0] : a.shape.back();
  const int64_t M = transA ? a.shape[1] : a.numElements() / std::max<int64_t>(K, 1);
  const int64_t kb = transB ? b.shape[1] : b.shape[0], N = transB ? b.shape[0] : b.shape[1];
  bool shapesMatch = kb == K && out.shape.back() == N &&
                     out.shape[rank - 2] == (transA ? M : a.shape[rank - 2]);
  for (size_t d = 0; d + 2 < rank; ++d)
    shapesMatch = shapesMatch && out.shape[d] == a.shape[d];
  if (!shapesMatch)
    return fail("gemm: shapes " + shapeString(a.shape) + " x " + shapeString(b.shape) + " -> " +
                shapeString(out.shape) + " do not match");
  if (c) {
    const std::vector<int64_t> &cs = c->shape;
    bool ok = cs.size() <= 2;
    if (ok && !cs.empty() && cs.back() != 1 && cs.back() != N)
      ok = false;
    if (ok && cs.size() == 2 && cs[0] != 1 && cs[0] != M)
      ok = false;
    if (!ok)
      return fail("gemm: C " + shapeString(cs) + " does not broadcast to [M, N]");
  }
  const TensorView *residual = optionalInput(inputs, 3);
  if (residual && (residual->shape != out.shape || !isFloat(residual->dtype)))
    return fail("gemm: the residual " + shapeString(residual->shape) +
                " must be a float tensor of the result's shape " + shapeString(out.shape));
  Activation act;
  if (auto s = readActivation("gemm", attrs, "activation", "act_alpha", "act_beta", act); !s.ok())
    return s;
  const double alpha = attrs.getFloat("alpha", 1.0), beta = attrs.getFloat("beta", 1.0);
  if (a.dtype == DType::F64)
    gemmRun<double>(a, b, c, residual, out, transA, transB, alpha, beta, M, N, K, act);
  else
    gemmRun<float>(a, b, c, residual, out, transA, transB, alpha, beta, M, N, K, act);
  return {};
}

KernelStatus matmulKernel(const Attrs &, const std::vector<const TensorView *> &inputs,
                          const std::vector<TensorView *> &outputs) {
  if (auto s = checkArity("matmul", inputs, outputs, 2); !s.ok())
    return s;
  const TensorView &a = *inputs[0], &b = *inputs[1];
  TensorView &out = *outputs[0];
  if (!isFloat(a.dtype))
    return unsupported("matmul", a.dtype);
  if (b.dtype != a.dtype || out.dtype != a.dtype)
    return fail("matmul: operand and result dtypes must match");
  const size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra == 0 || rb == 0)
    return fail("matmul: operands must have rank >= 1");
  const int64_t M = ra == 1 ? 1 : a.shape[ra - 2], K = a.shape[ra - 1];
  const int64_t kb = rb == 1 ? b.shape[0] : b.shape[rb - 2];
  const int64_t N = rb == 1 ? 1 : b.shape[rb - 1];
  if (kb != K)
    return fail("matmul: inner dimensions differ: " + shapeString(a.shape) + " x " +
                shapeString(b.shape));
  // Result = batch dims + [M] (unless a is 1-D) + [N] (unless b is 1-D).
  const size_t trailing = (ra == 1 ? 0 : 1) + (rb == 1 ? 0 : 1);
  if (out.shape.size() < trailing)
    return fail("matmul: result rank too small");
  const size_t batchRank = out.shape.size() - trailing;
  {
    size_t t = batchRank;
    if (ra != 1 && out.shape[t++] != M)
      return fail("matmul: result shape " + shapeString(out.shape) + " does not match");
    if (rb != 1 && out.shape[t] != N)
      return fail("matmul: result shape " + shapeString(out.shape) + " does not match");
  }
  const int64_t *batch = out.shape.data();
  // Broadcast strides (in matrices) of each operand's batch dims, and the
  // batch index, in scratch.
  int64_t *sa = scratch<int64_t>(kSlotIndex, 3 * batchRank + 1);
  int64_t *sb = sa + batchRank, *index = sb + batchRank;
  auto batchStrides = [&](const std::vector<int64_t> &s, size_t matrixRank,
                          int64_t *strides) -> bool {
    size_t r = s.size() - matrixRank;
    if (r > batchRank)
      return false;
    std::fill(strides, strides + batchRank, int64_t(0));
    int64_t stride = 1;
    for (size_t j = 0; j < r; ++j) {
      size_t i = r - 1 - j, d = batchRank - 1 - j;
      if (s[i] == batch[d])
        strides[d] = s[i] == 1 ? 0 : stride;
      else if (s[i] != 1)
        return false;
      stride *= s[i];
    }
    return true;
  };
  if (!batchStrides(a.shape, ra == 1 ? 1 : 2, sa) || !batchStrides(b.shape, rb == 1 ? 1 : 2, sb))
    return fail("matmul: batch dims of " + shapeString(a.shape) + " and " +
                shapeString(b.shape) + " do not broadcast to " + shapeString(out.shape));
  bool bShared = true; // one B for every batch: pack it once
  for (size_t d = 0; d < batchRank; ++d)
    bShared = bShared && sb[d] == 0;
  auto run = [&](auto tag) {
    using C = decltype(tag);
    Input<C> ai(a, kSlotA);
    const int64_t Np = roundUp(N, kNR);
    C *bp = scratch<C>(kSlotPacked, static_cast<size_t>(Np * K));
    const int64_t rowsPerChunk = chunkRows(M, Np);
    C *acc = scratch<C>(kSlotAcc, static_cast<size_t>(rowsPerChunk * Np));
    const Activation none;
    int64_t batches = 1;
    for (size_t d = 0; d < batchRank; ++d)
      batches *= batch[d];
    std::fill(index, index + batchRank, int64_t(0));
    for (int64_t bt = 0; bt < batches; ++bt) {
      int64_t oa = 0, ob = 0;
      for (size_t d = 0; d < batchRank; ++d) {
        oa += index[d] * sa[d];
        ob += index[d] * sb[d];
      }
      if (bt == 0 || !bShared)
        packPanels<C>(b, ob * K * N, N, 1, K, N, bp);
      for (int64_t i0 = 0; i0 < M; i0 += rowsPerChunk) {
        const int64_t rows = std::min(rowsPerChunk, M - i0);
        gemmPacked<C>(rows, K, Np, ai.data() + oa * M * K + i0 * K, K, 1, bp, acc, Np);
        for (int64_t r = 0; r < rows; ++r)
          epilogueRow<C>(acc + r * Np, N, 1.0, Addend{}, Addend{}, none, out,
                         (bt * M + i0 + r) * N);
      }
      for (size_t d = batchRank; d-- > 0;) {
        if (++index[d] < batch[d])
          break;
        index[d] = 0;
      }
    }
  };
  if (a.dtype == DType::F64)
    run(double{});
  else
    run(float{});
  return {};
}

} // namespace

void addGemmKernels(KernelTable &t) {
  t["gemm"] = &gemmKernel;
  t["matmul"] = &matmulKernel;
}

} // namespace tessel::cpu
