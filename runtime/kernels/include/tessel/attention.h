//===- attention.h - an attention step's problem and operand views -*- C++ -*-===//
//
// What a tessel.attention computes, read once from its operand shapes and
// attributes: the problem (B batches of H heads, Sq queries, Sk keys, head
// dims D and Dv) and where each of Q, K, V and the result keeps element
// (b, h, i, c) of its [B, H, S, D] matrix:
//
//   offset + b * batch + h * head + i * row + c          (the head dim dense)
//
// Without the `dims` and `views` attributes the operands are dense: rank 4
// [B, H, S, D], or rank 3 [B*H, S, D] (read as B = B*H batches of one head).
// With them (--tessel-attention-layout, passes/AttentionLayout.cpp), the
// operands are the tensors the heads live in, as the projections wrote them
// (Q, K and V as column blocks of one [tokens, 3 * H * D] GEMM result, say),
// and the result is written through its view into the layout its consumer
// reads (heads interleaved per token): no transpose or slice between.
//
//   dims  = [B, H, Sq, Sk, D, Dv]
//   views = [offset, batch, head, row] of Q, then K, V and the result
//
// A view must stay inside its tensor; the result's must cover its tensor
// once (a permutation of dense strides), so that no element is left
// unwritten. The mask broadcasts (numpy rules) to the scores: [B, H, Sq, Sk]
// with views, the dense operands' [lead..., Sq, Sk] without.
//
// The CPU kernel, the CUDA library's planner (codegen/cuda/KernelLibrary.cpp)
// and the dialect's verifier all read an attention through this function:
// they cannot disagree on where an element is, nor on which steps are
// invalid.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_ATTENTION_H
#define TESSEL_ATTENTION_H

#include <cstdint>
#include <string>
#include <vector>

namespace tessel::cpu {

/// Where an operand keeps element (b, h, i, c): offset + b * batch +
/// h * head + i * row + c (elements).
struct AttentionView {
  int64_t offset = 0, batch = 0, head = 0, row = 0;
  /// Whether the offset and every stride are whole runs of `elements` (8
  /// f16: the 16-byte loads and stores of the Tensor Core kernel, which the
  /// CUDA planner and --tessel-attention-layout both ask).
  bool wholeRuns(int64_t elements = 8) const {
    return offset % elements == 0 && batch % elements == 0 && head % elements == 0 &&
           row % elements == 0;
  }
  bool operator==(const AttentionView &o) const {
    return offset == o.offset && batch == o.batch && head == o.head && row == o.row;
  }
};

struct AttentionGeometry {
  int64_t batch = 0, heads = 0, sq = 0, sk = 0, d = 0, dv = 0;
  AttentionView q, k, v, out;
  /// The mask's element strides along b, h, i and j (0 where it broadcasts).
  int64_t maskB = 0, maskH = 0, maskI = 0, maskJ = 0;
};

/// The number of values in the `views` attribute (four per operand).
constexpr size_t kAttentionViewValues = 16;

/// Reads an attention's geometry: `dims` and `views` as the attributes hold
/// them (both empty: dense operands), the operand and result shapes, the
/// mask's (nullptr: none). Returns "" and fills `g`, or what is wrong.
std::string readAttention(const std::vector<int64_t> &dims, const std::vector<int64_t> &views,
                          const std::vector<int64_t> &q, const std::vector<int64_t> &k,
                          const std::vector<int64_t> &v, const std::vector<int64_t> &out,
                          const std::vector<int64_t> *mask, AttentionGeometry &g);

} // namespace tessel::cpu

#endif // TESSEL_ATTENTION_H
