//===- AttentionLayout.cpp - --tessel-attention-layout --------------------===//
//
// PyTorch exports multi-head attention with the heads split and merged by
// data movement around the product:
//
//   q = transpose(reshape(slice?(proj)))       [B, S, H*D] -> [B, H, S, D]
//   (k, v alike), attention(q, k, v)
//   y = reshape(transpose(attention))          [B, H, S, D] -> [B, S, H*D]
//
// (BERT and GPT-2 batch-major with perm [0, 2, 1, 3]; nn.MultiheadAttention,
// as in ViT, sequence-first with rank-3 heads [S, B*H, D] and perm
// [1, 0, 2]; GPT-2 and MultiheadAttention slice Q, K and V out of one
// projection.) Each transpose and slice is a copy, a step of its own. This
// pass makes them views of the attention (tessel/attention.h): it reads Q,
// K and V where the projection wrote them and writes its result in the
// layout its consumer reads.
//
// 1. Q, K and V projections of one input (three gemms of the same A, with
//    constant weights and biases and nothing else in their epilogues, each
//    read only by the attention's head split) become one gemm over the
//    concatenated weights; Q, K and V are slices of its result (read in
//    place below).
// 2. Each of Q, K and V is followed up through reshapes, transposes and
//    slices to the tensor its heads live in, composing the element map on
//    the way: an axis of the [B, H, S, D] (or [B*H, S, D]) operand is an
//    extent and a stride into that tensor. Through a transpose or a slice
//    every axis must lie inside one dim of the op's result (an axis that
//    spans two dims is split in two where the dim's extent divides it: the
//    B*H axis of a rank-3 attention becomes B and H), with no carry from a
//    dim into the next; otherwise the walk stops at that op.
// 3. A result read only by a transpose is written in the transpose's
//    layout (the transpose goes).
//
// The views are kept only where they are whole 16-byte runs of f16 (the
// Tensor Core kernel's loads and stores; offsets and strides multiples of
// 8 elements) and the operand's head dim is dense; otherwise that operand
// keeps its dense layout. A rank-3 mask with a batch dim is reshaped to the
// [B, H, Sq, Sk] scores the views index. Nothing else changes: the numbers
// are the same bits, read from other addresses.
//
//===----------------------------------------------------------------------===//
#include "GraphRewrite.h"
#include "Passes.h"

#include "tessel/attention.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <numeric>

namespace tessel {
#define GEN_PASS_DEF_ATTENTIONLAYOUT
#include "Passes.h.inc"
} // namespace tessel

using namespace mlir;

namespace tessel {
namespace {


SmallVector<int64_t> denseStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

int64_t count(ArrayRef<int64_t> shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

/// A gemm like `like` (its alpha, beta, transposes and activation, no
/// residual) of other operands and result type.
GemmOp gemmLike(OpBuilder &b, Location loc, GemmOp like, Type type, Value a, Value w, Value c) {
  return b.create<GemmOp>(loc, type, a, w, c, Value(), like.getAlphaAttr(), like.getBetaAttr(),
                          like.getTransAAttr(), like.getTransBAttr(), like.getActivationAttr(),
                          like.getActAlphaAttr(), like.getActBetaAttr());
}

//===----------------------------------------------------------------------===//
// 1. Q, K and V projections as one gemm
//===----------------------------------------------------------------------===//

/// The gemm whose result `v` is, through reshapes and transposes that each
/// have one use.
GemmOp projectionOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto gemm = dyn_cast<GemmOp>(def))
      return gemm.getOutput().hasOneUse() ? gemm : GemmOp();
    if (!isa<ReshapeOp, TransposeOp>(def) || !def->getResult(0).hasOneUse())
      return {};
    v = def->getOperand(0);
  }
  return {};
}

/// Whether gemms `a` and `b` differ only in their weights and biases.
bool sameProjection(GemmOp a, GemmOp b) {
  return a.getA() == b.getA() && a.getTransA() == b.getTransA() &&
         a.getTransB() == b.getTransB() && a.getAlpha() == b.getAlpha() &&
         a.getBeta() == b.getBeta() && a.getActivation() == b.getActivation() &&
         !a.getResidual() && !b.getResidual() && bool(a.getC()) == bool(b.getC()) &&
         a.getOutput().getType().getElementType() == b.getOutput().getType().getElementType() &&
         shapeOf(a.getOutput()).drop_back() == shapeOf(b.getOutput()).drop_back();
}

/// Whether `v` is a constant-like value defined before `point` (or one that
/// a concat placed there may read).
bool constantBefore(Value v, Operation *point) {
  Operation *def = v.getDefiningOp();
  return isConstantLike(v) && def && def->getBlock() == point->getBlock() &&
         def->isBeforeInBlock(point);
}

/// Merges the attention's Q, K and V projections into one gemm, where they
/// are three of one input; Q, K and V become slices of its result.
void mergeProjections(AttentionOp attention) {
  GemmOp gemms[3] = {projectionOf(attention.getQuery()), projectionOf(attention.getKey()),
                     projectionOf(attention.getValue())};
  if (!gemms[0] || !gemms[1] || !gemms[2] || gemms[0] == gemms[1] || gemms[1] == gemms[2] ||
      gemms[0] == gemms[2] || !sameProjection(gemms[0], gemms[1]) ||
      !sameProjection(gemms[0], gemms[2]) || gemms[0].getActivation() != Activation::None)
    return;
  Operation *first = gemms[0];
  for (GemmOp g : gemms)
    if (g->isBeforeInBlock(first))
      first = g;
  const bool transB = gemms[0].getTransB();
  SmallVector<Value> weights, biases;
  int64_t columns = 0;
  for (GemmOp g : gemms) {
    const int64_t n = shapeOf(g.getOutput()).back();
    ArrayRef<int64_t> w = shapeOf(g.getB());
    // The weight's N columns (rows, transposed) and a bias of N values.
    if (w.size() != 2 || w[transB ? 0 : 1] != n || !constantBefore(g.getB(), first))
      return;
    if (Value c = g.getC())
      if (shapeOf(c) != ArrayRef<int64_t>{n} || !constantBefore(c, first))
        return;
    weights.push_back(g.getB());
    if (Value c = g.getC())
      biases.push_back(c);
    columns += n;
  }

  OpBuilder b(first);
  Location loc = b.getFusedLoc({gemms[0].getLoc(), gemms[1].getLoc(), gemms[2].getLoc()});
  ArrayRef<int64_t> w0 = shapeOf(weights[0]);
  SmallVector<int64_t> wShape = transB ? SmallVector<int64_t>{columns, w0[1]}
                                       : SmallVector<int64_t>{w0[0], columns};
  Value weight = b.create<ConcatOp>(loc, withShape(weights[0].getType(), wShape), weights,
                                    b.getI64IntegerAttr(transB ? 0 : 1));
  Value bias;
  if (!biases.empty())
    bias = b.create<ConcatOp>(loc, withShape(biases[0].getType(), {columns}), biases,
                              b.getI64IntegerAttr(0));
  SmallVector<int64_t> yShape(shapeOf(gemms[0].getOutput()));
  yShape.back() = columns;
  GemmOp g0 = gemms[0];
  GemmOp merged =
      gemmLike(b, loc, g0, withShape(g0.getOutput().getType(), yShape), g0.getA(), weight, bias);
  int64_t start = 0;
  for (GemmOp g : gemms) {
    const size_t rank = yShape.size();
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
    starts.back() = start;
    start += shapeOf(g.getOutput()).back();
    b.setInsertionPointAfter(merged);
    Value slice = b.create<SliceOp>(g.getLoc(), g.getOutput().getType(), merged.getOutput(),
                                    b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(steps));
    g.getOutput().replaceAllUsesWith(slice);
    g.erase();
  }
}

//===----------------------------------------------------------------------===//
// 2. Views through reshapes, transposes and slices
//===----------------------------------------------------------------------===//

/// One axis of an attention operand (`role`: which of its dims it is, or a
/// part of) as an extent and a stride in elements of the tensor read.
struct Axis {
  int64_t size, stride;
  int role;
};

struct View {
  SmallVector<Axis> axes;
  int64_t offset = 0;
};

/// Where each axis of `view` (into a dense tensor of `shape`) lies: dim and
/// index step, the offset's multi-index. Splits an axis that spans dims at
/// the inner dim's extent; fails where an axis or the offset would carry.
struct Placement {
  SmallVector<int> dim;
  SmallVector<int64_t> step, at;
};

std::optional<Placement> place(View &view, ArrayRef<int64_t> shape) {
  const SmallVector<int64_t> cs = denseStrides(shape);
  const int64_t total = count(shape);
  if (view.offset < 0 || view.offset >= std::max<int64_t>(total, 1))
    return std::nullopt;
  Placement p;
  for (size_t k = 0; k < shape.size(); ++k)
    p.at.push_back(view.offset / cs[k] % shape[k]);
  for (size_t a = 0; a < view.axes.size(); ++a) {
    const Axis x = view.axes[a];
    if (x.size == 1) {
      p.dim.push_back(-1);
      p.step.push_back(0);
      continue;
    }
    int k = -1;
    for (int j = static_cast<int>(shape.size()) - 1; j >= 0 && k < 0; --j)
      if (shape[j] > 1 && x.stride % cs[j] == 0 && x.stride / cs[j] < shape[j])
        k = j;
    if (k < 0)
      return std::nullopt;
    const int64_t m = x.stride / cs[k];
    if ((x.size - 1) * m >= shape[k]) {
      if (shape[k] % m != 0 || x.size % (shape[k] / m) != 0)
        return std::nullopt;
      const int64_t inner = shape[k] / m;
      view.axes[a].size = inner;
      view.axes.insert(view.axes.begin() + a + 1, Axis{x.size / inner, x.stride * inner, x.role});
    }
    p.dim.push_back(k);
    p.step.push_back(m);
  }
  SmallVector<int64_t> reach(p.at);
  for (size_t a = 0; a < view.axes.size(); ++a)
    if (p.dim[a] >= 0)
      reach[p.dim[a]] += (view.axes[a].size - 1) * p.step[a];
  for (size_t k = 0; k < shape.size(); ++k)
    if (reach[k] >= shape[k])
      return std::nullopt;
  return p;
}

/// `view` (into `op`'s result) as a view into `op`'s input, for a reshape,
/// a transpose or a slice; false (and `view` unusable) for other ops or
/// where the element map does not compose.
bool throughOp(Operation *op, View &view) {
  if (isa<ReshapeOp>(op))
    return true; // the same elements in the same order
  auto transpose = dyn_cast<TransposeOp>(op);
  auto slice = dyn_cast<SliceOp>(op);
  if (!transpose && !slice)
    return false;
  std::optional<Placement> p = place(view, shapeOf(op->getResult(0)));
  if (!p)
    return false;
  const SmallVector<int64_t> cs = denseStrides(shapeOf(op->getOperand(0)));
  // Result dim k's index i is input dim in(k)'s index first(k) + i * by(k).
  auto in = [&](int k) { return transpose ? static_cast<int>(transpose.getPerm()[k]) : k; };
  auto first = [&](int k) { return slice ? slice.getStarts()[k] : 0; };
  auto by = [&](int k) { return slice ? slice.getSteps()[k] : 1; };
  if (slice && llvm::any_of(slice.getSteps(), [](int64_t s) { return s <= 0; }))
    return false;
  view.offset = 0;
  for (size_t k = 0; k < p->at.size(); ++k)
    view.offset += (first(k) + p->at[k] * by(k)) * cs[in(k)];
  for (size_t a = 0; a < view.axes.size(); ++a)
    view.axes[a].stride = p->dim[a] < 0 ? 0 : p->step[a] * by(p->dim[a]) * cs[in(p->dim[a])];
  return true;
}

/// The dense view of an operand or result of shape [lead..., S, D].
View denseView(ArrayRef<int64_t> shape) {
  View view;
  const SmallVector<int64_t> cs = denseStrides(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    view.axes.push_back({shape[i], cs[i], static_cast<int>(i)});
  return view;
}

/// An operand's view as the attention's [b, h, row] strides: the lead axes
/// as [batch] or [batch, head] (`heads` the extent of the head axis, 0 where
/// the lead dim is not split), the row axis and a dense head dim.
struct Strides {
  int64_t offset = 0, row = 0, heads = 0;
  SmallVector<Axis> lead; // outer first
};

std::optional<Strides> stridesOf(const View &view, size_t rank) {
  Strides s;
  s.offset = view.offset;
  const int seqRole = static_cast<int>(rank) - 2, dimRole = static_cast<int>(rank) - 1;
  int seqAxes = 0, dimAxes = 0;
  for (const Axis &x : view.axes) {
    if (x.role == dimRole) {
      if (x.stride != 1 && x.size != 1)
        return std::nullopt;
      ++dimAxes;
    } else if (x.role == seqRole) {
      s.row = x.stride;
      ++seqAxes;
    } else {
      s.lead.insert(s.lead.begin(), x); // axes are inner first after a split
    }
  }
  if (seqAxes != 1 || dimAxes != 1)
    return std::nullopt;
  if (rank == 4) {
    // [B, H]: each its own axis (in role order).
    if (s.lead.size() != 2)
      return std::nullopt;
    std::sort(s.lead.begin(), s.lead.end(),
              [](const Axis &a, const Axis &b) { return a.role < b.role; });
    if (s.lead[0].role != 0 || s.lead[1].role != 1)
      return std::nullopt;
    s.heads = s.lead[1].size;
  } else {
    // [B*H]: one axis, or split into batch (outer) and heads (inner).
    if (s.lead.size() > 2)
      return std::nullopt;
    if (s.lead.size() == 2)
      s.heads = s.lead[1].size;
  }
  return s;
}

/// The attention's [offset, batch, head, row] of an operand for `heads`.
std::optional<cpu::AttentionView> attentionView(const Strides &s, int64_t heads) {
  cpu::AttentionView w;
  w.offset = s.offset;
  w.row = s.row;
  if (s.lead.size() == 2) {
    if (s.lead[1].size != heads)
      return std::nullopt;
    w.batch = s.lead[0].stride;
    w.head = s.lead[1].stride;
  } else {
    // One lead axis of B*H, uniform: split at `heads`.
    w.batch = s.lead[0].stride * heads;
    w.head = s.lead[0].stride;
  }
  return w;
}

/// Follows `operand` up through the view ops while the element map
/// composes; the tensor reached and the view into it.
std::pair<Value, View> readThrough(Value operand) {
  View view = denseView(shapeOf(operand));
  Value at = operand;
  while (Operation *def = at.getDefiningOp()) {
    View next = view;
    if (!throughOp(def, next))
      break;
    view = next;
    at = def->getOperand(0);
  }
  return {at, view};
}

void useViews(AttentionOp attention) {
  if (attention.getDims())
    return;
  const size_t rank = shapeOf(attention.getQuery()).size();
  Value operands[3] = {attention.getQuery(), attention.getKey(), attention.getValue()};
  Value sources[3];
  std::optional<Strides> strides[4];
  bool moved = false;
  for (int i = 0; i < 3; ++i) {
    auto [source, view] = readThrough(operands[i]);
    strides[i] = stridesOf(view, rank);
    sources[i] = source;
    if (!strides[i] || source == operands[i]) {
      sources[i] = operands[i];
      strides[i] = stridesOf(denseView(shapeOf(operands[i])), rank);
    }
  }
  // The result, written in the layout of a transpose that is its one reader.
  Value result = attention.getOutput();
  TransposeOp reader;
  if (result.hasOneUse())
    reader = dyn_cast<TransposeOp>(*result.getUsers().begin());
  View outView = denseView(shapeOf(result));
  if (reader) {
    const SmallVector<int64_t> cs = denseStrides(shapeOf(reader.getOutput()));
    for (size_t k = 0; k < cs.size(); ++k)
      outView.axes[reader.getPerm()[k]].stride = cs[k];
  }
  strides[3] = stridesOf(outView, rank);

  // The head count: the extent of a split lead axis (all splits agree), or
  // [B, H]'s; rank 3 unsplit: B*H batches of one head.
  int64_t heads = rank == 4 ? shapeOf(operands[0])[1] : 1;
  for (auto &s : strides) {
    if (!s)
      return;
    if (rank == 3 && s->heads)
      heads = s->heads;
  }
  std::optional<cpu::AttentionView> views[4];
  for (int i = 0; i < 4; ++i) {
    views[i] = attentionView(*strides[i], heads);
    if (i < 3 && (!views[i] || !views[i]->wholeRuns()) && sources[i] != operands[i]) {
      // Not whole runs, or the heads disagree: this operand stays dense.
      sources[i] = operands[i];
      strides[i] = stridesOf(denseView(shapeOf(operands[i])), rank);
      views[i] = attentionView(*strides[i], heads);
    }
    if (!views[i])
      return;
    if (i < 3)
      moved |= sources[i] != operands[i];
  }
  if (reader && !views[3]->wholeRuns()) {
    reader = {};
    views[3] = attentionView(*stridesOf(denseView(shapeOf(result)), rank), heads);
    if (!views[3])
      return;
  }
  if (!moved && !reader)
    return;

  ArrayRef<int64_t> q = shapeOf(operands[0]), k = shapeOf(operands[1]), v = shapeOf(operands[2]);
  const int64_t batch = count(q.drop_back(2)) / heads;
  SmallVector<int64_t> dims = {batch, heads, q[rank - 2], k[rank - 2], q.back(), v.back()};
  SmallVector<int64_t> viewValues;
  for (auto &w : views)
    viewValues.append({w->offset, w->batch, w->head, w->row});

  OpBuilder b(attention);
  Value mask = attention.getMask();
  if (mask && rank == 3 && shapeOf(mask).size() == 3 && shapeOf(mask)[0] != 1) {
    // [B*H, Sq', Sk'] over the scores [B, H, Sq, Sk].
    ArrayRef<int64_t> m = shapeOf(mask);
    mask = b.create<ReshapeOp>(attention.getLoc(),
                               withShape(mask.getType(), {batch, heads, m[1], m[2]}), mask);
  }
  Type resultType = reader ? reader.getOutput().getType() : result.getType();
  auto viewed = b.create<AttentionOp>(
      attention.getLoc(), resultType, sources[0], sources[1], sources[2], mask,
      attention.getScaleAttr(), attention.getCausalAttr(), b.getDenseI64ArrayAttr(dims),
      b.getDenseI64ArrayAttr(viewValues));
  if (failed(mlir::verify(viewed))) {
    viewed.erase();
    return;
  }
  if (reader) {
    reader.getOutput().replaceAllUsesWith(viewed.getOutput());
    reader.erase();
  } else {
    result.replaceAllUsesWith(viewed.getOutput());
  }
  attention.erase();
}

//===----------------------------------------------------------------------===//
// 4. Row permutations across the projections
//===----------------------------------------------------------------------===//

/// Whether `perm` keeps the last dim in place: it permutes rows only.
bool permutesRows(ArrayRef<int64_t> perm) {
  return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1;
}

/// A gemm works row by row: gemm(transpose(x, perm)) with `perm` moving rows
/// only is transpose(gemm(x), perm). nn.MultiheadAttention (PyTorch 2,
/// batch_first) transposes its [B, S, E] input to [S, B, E] before the
/// in-projection; after this the transpose follows the projection, where the
/// attention's views absorb it. Applied to the gemm at the root of each of
/// Q, K and V.
void projectBeforePermuting(AttentionOp attention) {
  for (Value operand : {attention.getQuery(), attention.getKey(), attention.getValue()}) {
    Value at = operand;
    while (Operation *def = at.getDefiningOp()) {
      if (!isa<ReshapeOp, TransposeOp, SliceOp>(def))
        break;
      at = def->getOperand(0);
    }
    auto gemm = at.getDefiningOp<GemmOp>();
    auto transpose = gemm ? gemm.getA().getDefiningOp<TransposeOp>() : TransposeOp();
    if (!transpose || gemm.getTransA() || gemm.getResidual() ||
        !transpose.getOutput().hasOneUse() || !permutesRows(transpose.getPerm()) ||
        shapeOf(gemm.getA()).size() < 3 || (gemm.getC() && shapeOf(gemm.getC()).size() > 1))
      continue;
    OpBuilder b(gemm);
    SmallVector<int64_t> shape(shapeOf(transpose.getInput()).drop_back());
    shape.push_back(shapeOf(gemm.getOutput()).back());
    GemmOp rows = gemmLike(b, gemm.getLoc(), gemm, withShape(gemm.getOutput().getType(), shape),
                           transpose.getInput(), gemm.getB(), gemm.getC());
    Value permuted = b.create<TransposeOp>(transpose.getLoc(), gemm.getOutput().getType(),
                                           rows.getOutput(), transpose.getPermAttr());
    gemm.getOutput().replaceAllUsesWith(permuted);
    gemm.erase();
    transpose.erase();
  }
}

/// The other side: transpose(reshape(gemm(reshape(attention))), perm), perm
/// moving rows only and the attention's result leading with the same row
/// dims as the transpose's input, is the gemm of the attention's result with
/// those rows permuted, which the attention writes so through its view
/// (nn.MultiheadAttention's [S, B, E] output transposed back to [B, S, E]).
void permuteBeforeProjecting(AttentionOp attention) {
  Value y = attention.getOutput();
  if (!attention.getViews() || !y.hasOneUse())
    return;
  auto flat = dyn_cast<ReshapeOp>(*y.getUsers().begin());
  if (!flat || !flat.getOutput().hasOneUse())
    return;
  auto gemm = dyn_cast<GemmOp>(*flat.getOutput().getUsers().begin());
  if (!gemm || gemm.getA() != flat.getOutput() || gemm.getResidual() ||
      !gemm.getOutput().hasOneUse())
    return;
  auto unflat = dyn_cast<ReshapeOp>(*gemm.getOutput().getUsers().begin());
  if (!unflat || !unflat.getOutput().hasOneUse())
    return;
  auto transpose = dyn_cast<TransposeOp>(*unflat.getOutput().getUsers().begin());
  if (!transpose || !permutesRows(transpose.getPerm()))
    return;
  // The attention's result as the projection reads it: rows of K values,
  // the rows indexed as the transpose's input is.
  ArrayRef<int64_t> rows = shapeOf(unflat.getOutput()).drop_back();
  ArrayRef<int64_t> rowsIn = shapeOf(flat.getOutput());
  if (rowsIn.size() < 2 || count(rowsIn.drop_back()) != count(rows))
    return;
  SmallVector<int64_t> yShape(rows);
  yShape.push_back(rowsIn.back());
  // That permuted as the rows: perm on the row dims, the row itself kept.
  SmallVector<int64_t> perm(transpose.getPerm().drop_back());
  for (size_t d = rows.size(); d < yShape.size(); ++d)
    perm.push_back(static_cast<int64_t>(d));
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(yShape[p]);
  // The result view composed with the permutation: place each axis in a dim
  // of y, then stride by that dim's place in the permuted tensor.
  ArrayRef<int64_t> dims = *attention.getDims(), views = *attention.getViews();
  View view;
  view.offset = views[12];
  view.axes = {{dims[0], views[13], 0}, {dims[1], views[14], 1}, {dims[2], views[15], 2},
               {dims[5], 1, 3}};
  std::optional<Placement> p = place(view, yShape);
  if (!p || view.axes.size() != 4)
    return;
  const SmallVector<int64_t> cs = denseStrides(permuted);
  SmallVector<int64_t> where(perm.size()); // y's dim d is the permuted tensor's dim where[d]
  for (size_t k = 0; k < perm.size(); ++k)
    where[perm[k]] = static_cast<int64_t>(k);
  int64_t offset = 0;
  for (size_t d = 0; d < p->at.size(); ++d)
    offset += p->at[d] * cs[where[d]];
  SmallVector<int64_t> strides;
  for (size_t a = 0; a < 4; ++a)
    strides.push_back(p->dim[a] < 0 ? 0 : p->step[a] * cs[where[p->dim[a]]]);
  if (strides[3] != 1)
    return;
  SmallVector<int64_t> newViews(views.begin(), views.end());
  newViews[12] = offset;
  newViews[13] = strides[0];
  newViews[14] = strides[1];
  newViews[15] = strides[2];
  cpu::AttentionView out{offset, strides[0], strides[1], strides[2]};
  if (!out.wholeRuns())
    return;

  OpBuilder b(attention);
  auto written = b.create<AttentionOp>(
      attention.getLoc(), withShape(y.getType(), permuted), attention.getQuery(),
      attention.getKey(), attention.getValue(), attention.getMask(), attention.getScaleAttr(),
      attention.getCausalAttr(), attention.getDimsAttr(), b.getDenseI64ArrayAttr(newViews));
  if (failed(mlir::verify(written))) {
    written.erase();
    return;
  }
  b.setInsertionPoint(gemm);
  Value a = b.create<ReshapeOp>(flat.getLoc(), flat.getOutput().getType(), written.getOutput());
  GemmOp rowsGemm =
      gemmLike(b, gemm.getLoc(), gemm, gemm.getOutput().getType(), a, gemm.getB(), gemm.getC());
  b.setInsertionPoint(transpose);
  Value result =
      b.create<ReshapeOp>(unflat.getLoc(), transpose.getOutput().getType(), rowsGemm.getOutput());
  transpose.getOutput().replaceAllUsesWith(result);
  transpose.erase();
  unflat.erase();
  gemm.erase();
  flat.erase();
  attention.erase();
}

struct AttentionLayoutPass : impl::AttentionLayoutBase<AttentionLayoutPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp op) { attentions.push_back(op); });
    for (AttentionOp attention : attentions) {
      mergeProjections(attention);
      projectBeforePermuting(attention);
      useViews(attention);
    }
    // useViews replaced each attention it changed: walk again.
    attentions.clear();
    getOperation().walk([&](AttentionOp op) { attentions.push_back(op); });
    for (AttentionOp attention : attentions)
      permuteBeforeProjecting(attention);
    // The head splits and merges no attention reads any more.
    for (Block &block : getOperation().getBody()) {
      SmallVector<Operation *> ops;
      for (Operation &op : llvm::reverse(block))
        ops.push_back(&op);
      for (Operation *op : ops)
        if (isa<ReshapeOp, TransposeOp, SliceOp>(op) && isOpTriviallyDead(op))
          op->erase();
    }
  }
};

} // namespace
} // namespace tessel
