//===- Library.cu - the entry points of the CUDA kernel library -----------===//
//
// The library's one source, compiled once per op family when Tessel is built
// (codegen/cuda/CMakeLists.txt, TESSEL_KERNEL_FAMILIES): nvcc is given
// -DTSL_FAMILY_<family> and compiles that family's block below to PTX for
// compute_75, which is then assembled into a cubin per SM. Each family is a
// module of its own, and an engine carries only the families its steps use.
//
// Every entry point is extern "C" with a name that spells its op and dtypes
// (tsl_<op>_<dtype...>[_<strategy>]), so the planner (KernelLibrary.cpp) can
// name it and the names never depend on C++ mangling; the planner finds an
// entry's family by the name, in the families' PTX. Arguments: the tensors'
// device addresses in the step's operand order, then the result(s), then one
// by-value parameter struct (KernelParams.h).
//
// The families split where engines differ: what every CNN uses (move,
// cast_half, max_pool, reduce_sum_f32, softmax_f32) apart from the rest, and
// by dtype where an engine uses one dtype class of an op (an fp16 engine
// runs the precision policy's f16 class in f16 and its f32 class, softmax
// and reduce_sum/mean included, in f32: docs/architecture.md).
//
//===----------------------------------------------------------------------===//
#include "kernels/Attention.cuh"
#include "kernels/Cast.cuh"
#include "kernels/Detection.cuh"
#include "kernels/Elementwise.cuh"
#include "kernels/Index.cuh"
#include "kernels/Movement.cuh"
#include "kernels/Normalization.cuh"
#include "kernels/Pool.cuh"
#include "kernels/Reduction.cuh"
#include "kernels/Resize.cuh"

using namespace tessel::kernels;

// Element types by dtype suffix.
#define TSL_T_f32 float
#define TSL_T_f16 f16
#define TSL_T_f64 double
#define TSL_T_i8 int8_t
#define TSL_T_u8 uint8_t
#define TSL_T_i32 int32_t
#define TSL_T_i64 int64_t
#define TSL_T_b8 b8
#define TSL_T(t) TSL_T_##t

// Words of a width in bytes.
#define TSL_W_1 uint8_t
#define TSL_W_2 uint16_t
#define TSL_W_4 uint32_t
#define TSL_W_8 uint64_t
#define TSL_W_16 uint4
#define TSL_W(w) TSL_W_##w

#define TSL_KERNEL extern "C" __global__ void
// An entry point launched with at most `threads` threads a block: the
// compiler keeps its registers within what a block of that size may use.
#define TSL_KERNEL_BOUNDED(threads) extern "C" __global__ void __launch_bounds__(threads)
#define TSL_PARAMS(type) const __grid_constant__ type p

// X(args..., t) for each dtype of a class.
// f64 computes only in cast and the movement kernels (dtype-blind): a model's
// own f64 math runs on the CPU tier rather than doubling the library.
#define TSL_FLOATS(X, ...) X(__VA_ARGS__, f32) X(__VA_ARGS__, f16)
#define TSL_INTS(X, ...) X(__VA_ARGS__, i32) X(__VA_ARGS__, i64)
#define TSL_NUMERIC(X, ...) TSL_FLOATS(X, __VA_ARGS__) TSL_INTS(X, __VA_ARGS__)

//===----------------------------------------------------------------------===//
// Entry points, by kind
//===----------------------------------------------------------------------===//

#define TSL_UNARY(name, id, t)                                                  \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(UnaryParams)) { \
    unary<U::id>(x, y, p);                                                      \
  }
// The unary ops of every numeric dtype, X(name, id, t).
#define TSL_UNARY_NUMERIC_OPS(X, t)                                             \
  X(relu, Relu, t) X(abs, Abs, t) X(neg, Neg, t) X(sign, Sign, t)
// The unary ops of the float dtypes only.
#define TSL_UNARY_FLOAT_OPS(X, t)                                               \
  X(sigmoid, Sigmoid, t) X(tanh, Tanh, t) X(exp, Exp, t) X(log, Log, t)          \
  X(sqrt, Sqrt, t) X(reciprocal, Reciprocal, t) X(floor, Floor, t)              \
  X(ceil, Ceil, t) X(round, Round, t) X(erf, Erf, t) X(sin, Sin, t)             \
  X(cos, Cos, t) X(tan, Tan, t) X(asin, Asin, t) X(acos, Acos, t)               \
  X(atan, Atan, t) X(sinh, Sinh, t) X(cosh, Cosh, t) X(asinh, Asinh, t)         \
  X(acosh, Acosh, t) X(atanh, Atanh, t) X(softplus, Softplus, t)                \
  X(softsign, Softsign, t) X(hard_swish, HardSwish, t)                          \
  X(leaky_relu, LeakyRelu, t) X(elu, Elu, t) X(celu, Celu, t) X(selu, Selu, t)  \
  X(thresholded_relu, ThresholdedRelu, t) X(hard_sigmoid, HardSigmoid, t)       \
  X(shrink, Shrink, t) X(gelu, Gelu, t) X(gelu_tanh, GeluTanh, t) X(silu, Silu, t)

#define TSL_CLIP(t)                                                             \
  TSL_KERNEL tsl_clip_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(ClipParams)) { \
    clip(x, y, p);                                                              \
  }

// Every unary op and clip of a float dtype.
#define TSL_UNARY_FLOAT_FAMILY(t)                                               \
  TSL_UNARY_NUMERIC_OPS(TSL_UNARY, t) TSL_UNARY_FLOAT_OPS(TSL_UNARY, t) TSL_CLIP(t)

#define TSL_BINARY(name, id, t)                                                 \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *a, const TSL_T(t) *b, TSL_T(t) *y,      \
                              TSL_PARAMS(BroadcastParams)) {                    \
    binary<B::id>(a, b, y, p);                                                  \
  }
#define TSL_BINARY_VEC(name, id, t, lanes)                                      \
  TSL_KERNEL tsl_##name##_##t##_vec(const TSL_T(t) *a, const TSL_T(t) *b, TSL_T(t) *y,  \
                                    TSL_PARAMS(BroadcastParams)) {              \
    binaryVec<B::id, TSL_T(t), lanes>(a, b, y, p);                              \
  }
#define TSL_BINARY_VEC_OPS(t, lanes)                                            \
  TSL_BINARY_VEC(add, Add, t, lanes) TSL_BINARY_VEC(sub, Sub, t, lanes)         \
  TSL_BINARY_VEC(mul, Mul, t, lanes) TSL_BINARY_VEC(div, Div, t, lanes)
#define TSL_BINARY_OPS(X, t)                                                    \
  X(add, Add, t) X(sub, Sub, t) X(mul, Mul, t) X(div, Div, t) X(pow, Pow, t)    \
  X(max, Max, t) X(min, Min, t) X(prelu, PRelu, t)

#define TSL_POW_MIXED(t, e)                                                     \
  TSL_KERNEL tsl_pow_##t##_##e(const TSL_T(t) *a, const TSL_T(e) *b, TSL_T(t) *y,     \
                               TSL_PARAMS(BroadcastParams)) {                   \
    powMixed(a, b, y, p);                                                       \
  }

#define TSL_COMPARE(name, id, t)                                                \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *a, const TSL_T(t) *b, uint8_t *y,       \
                              TSL_PARAMS(BroadcastParams)) {                    \
    compare<Cmp::id>(a, b, y, p);                                               \
  }

// (`and`, `or` and `xor` are C++ operator names: no token pasting.)
#define TSL_LOGICAL(entry, id)                                                  \
  TSL_KERNEL entry(const uint8_t *a, const uint8_t *b, uint8_t *y,              \
                   TSL_PARAMS(BroadcastParams)) {                               \
    logical<L::id>(a, b, y, p);                                                 \
  }

#define TSL_WHERE(w)                                                            \
  TSL_KERNEL tsl_where_w##w(const uint8_t *c, const TSL_W(w) *a, const TSL_W(w) *b,   \
                            TSL_W(w) *y, TSL_PARAMS(BroadcastParams)) {         \
    where(c, a, b, y, p);                                                       \
  }

#define TSL_CAST(s, d)                                                          \
  TSL_KERNEL tsl_cast_##s##_##d(const TSL_T(s) *x, TSL_T(d) *y, TSL_PARAMS(UnaryParams)) { \
    cast(x, y, p);                                                              \
  }
// Casts from `s` to the integer types and bool.
#define TSL_CAST_TO_INTS(s)                                                     \
  TSL_CAST(s, i8) TSL_CAST(s, u8) TSL_CAST(s, i32) TSL_CAST(s, i64) TSL_CAST(s, b8)
#define TSL_CAST_FROM(s)                                                        \
  TSL_CAST(s, f32) TSL_CAST(s, f16) TSL_CAST(s, f64) TSL_CAST_TO_INTS(s)

#define TSL_MOVE(name, fn, params, w)                                           \
  TSL_KERNEL tsl_##name##_w##w(const TSL_W(w) *x, TSL_W(w) *y, TSL_PARAMS(params)) {  \
    fn(x, y, p);                                                                \
  }
#define TSL_MOVE_WIDTHS(name, fn, params)                                       \
  TSL_MOVE(name, fn, params, 1) TSL_MOVE(name, fn, params, 2)                   \
  TSL_MOVE(name, fn, params, 4) TSL_MOVE(name, fn, params, 8)

#define TSL_GATHER(w, i)                                                        \
  TSL_KERNEL tsl_gather_w##w##_##i(const TSL_W(w) *x, const TSL_T(i) *indices,        \
                                   TSL_W(w) *y, TSL_PARAMS(GatherParams)) {     \
    gather(x, indices, y, p);                                                   \
  }
#define TSL_GATHER_WIDTHS(i)                                                    \
  TSL_GATHER(1, i) TSL_GATHER(2, i) TSL_GATHER(4, i) TSL_GATHER(8, i) TSL_GATHER(16, i)

#define TSL_REDUCE(name, id, t)                                                 \
  TSL_KERNEL tsl_##name##_##t##_thread(const TSL_T(t) *x, TSL_T(t) *y,              \
                                       TSL_PARAMS(ReduceParams)) {              \
    reduceThread<R::id>(x, y, p);                                               \
  }                                                                             \
  TSL_KERNEL tsl_##name##_##t##_block(const TSL_T(t) *x, TSL_T(t) *y,               \
                                      TSL_PARAMS(ReduceParams)) {               \
    reduceBlock<R::id>(x, y, p);                                                \
  }

// The f16 sums over the middle dim of [outer, rows, inner], 16 bytes a
// thread, one launch.
#define TSL_REDUCE_COLUMNS_VEC(name, id)                                        \
  TSL_KERNEL_BOUNDED(kColumnVecThreads)                                         \
  tsl_##name##_f16_columns_vec(const f16 *x, f16 *y, TSL_PARAMS(ColumnParams)) { \
    reduceColumnsVec<R::id>(x, y, p);                                           \
  }

// The float sums over the middle dim of [outer, rows, inner].
#define TSL_REDUCE_COLUMNS(name, id, t)                                         \
  TSL_KERNEL tsl_##name##_##t##_columns(const TSL_T(t) *x, TSL_T(t) *y, double *partial, \
                                        TSL_PARAMS(ColumnParams)) {             \
    reduceColumns<R::id>(x, y, partial, p);                                     \
  }                                                                             \
  TSL_KERNEL tsl_##name##_##t##_columns_finish(const double *partial, TSL_T(t) *y, \
                                               TSL_PARAMS(ColumnParams)) {      \
    reduceColumnsFinish<R::id>(partial, y, p);                                  \
  }

#define TSL_SOFTMAX(name, isLog, t)                                             \
  TSL_KERNEL tsl_##name##_##t##_thread(const TSL_T(t) *x, TSL_T(t) *y,              \
                                       TSL_PARAMS(AxisParams)) {                \
    softmaxThread<isLog>(x, y, p);                                              \
  }                                                                             \
  TSL_KERNEL tsl_##name##_##t##_block(const TSL_T(t) *x, TSL_T(t) *y,               \
                                      TSL_PARAMS(AxisParams)) {                 \
    softmaxBlock<isLog>(x, y, p);                                               \
  }

#define TSL_ARG(name, isMax, t)                                                 \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *x, int64_t *y, TSL_PARAMS(AxisParams)) { \
    argReduce<isMax>(x, y, p);                                                  \
  }

#define TSL_POOL(name, fn, t)                                                   \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(PoolParams)) { \
    fn(x, y, p);                                                                \
  }
// NHWC with the channels a multiple of 16 bytes: 16 bytes of channels per
// thread (Pool.cuh, Lanes).
#define TSL_POOL_VEC(name, fn, t)                                               \
  TSL_POOL(name, fn, t)                                                         \
  TSL_KERNEL tsl_##name##_##t##_vec(const TSL_T(t) *x, TSL_T(t) *y,             \
                                    TSL_PARAMS(PoolParams)) {                   \
    fn<TSL_T(t), 16 / sizeof(TSL_T(t))>(x, y, p);                               \
  }

// layer_norm and instance_norm: a warp per row (blocks of 256 threads), a
// block per row (at most kNormMaxBlock threads), each with the row in
// registers, or a block per row reading the row in each pass
// (Normalization.cuh); _vec moves 16 bytes per load and store.
#define TSL_ROW_NORM_SHAPE(name, fn, t, shape, suffix, threads, v)             \
  TSL_KERNEL_BOUNDED(threads)                                                   \
  tsl_##name##_##t##_##suffix(const TSL_T(t) *x, const TSL_T(t) *scale,         \
                              const TSL_T(t) *bias, TSL_T(t) *y, TSL_PARAMS(NormParams)) { \
    fn<RowShape::shape, TSL_T(t), v>(x, scale, bias, y, p);                     \
  }
#define TSL_ROW_NORM(name, fn, t)                                               \
  TSL_ROW_NORM_SHAPE(name, fn, t, Warp, warp, 256, 1)                           \
  TSL_ROW_NORM_SHAPE(name, fn, t, Warp, warp_vec, 256, 16 / sizeof(TSL_T(t)))   \
  TSL_ROW_NORM_SHAPE(name, fn, t, Block, block, kNormMaxBlock, 1)               \
  TSL_ROW_NORM_SHAPE(name, fn, t, Block, block_vec, kNormMaxBlock, 16 / sizeof(TSL_T(t))) \
  TSL_ROW_NORM_SHAPE(name, fn, t, Stream, stream, kNormMaxBlock, 1)             \
  TSL_ROW_NORM_SHAPE(name, fn, t, Stream, stream_vec, kNormMaxBlock, 16 / sizeof(TSL_T(t)))

// batch_norm: the channels' factors into the workspace, then the elements.
#define TSL_BATCH_NORM(t)                                                       \
  TSL_KERNEL tsl_batch_norm_factor_##t(const TSL_T(t) *scale, const TSL_T(t) *variance, \
                                       float *k, TSL_PARAMS(BatchNormParams)) { \
    batchNormFactor(scale, variance, k, p);                                     \
  }                                                                             \
  TSL_KERNEL tsl_batch_norm_##t(const TSL_T(t) *x, const TSL_T(t) *bias,        \
                                const TSL_T(t) *mean, const float *k, TSL_T(t) *y, \
                                TSL_PARAMS(BatchNormParams)) {                  \
    batchNorm<TSL_T(t), 1>(x, bias, mean, k, y, p);                             \
  }                                                                             \
  TSL_KERNEL tsl_batch_norm_##t##_vec(const TSL_T(t) *x, const TSL_T(t) *bias,  \
                                      const TSL_T(t) *mean, const float *k, TSL_T(t) *y, \
                                      TSL_PARAMS(BatchNormParams)) {            \
    batchNorm<TSL_T(t), 16 / sizeof(TSL_T(t))>(x, bias, mean, k, y, p);         \
  }

// instance_norm, batch_norm and lrn: the norms of CNNs.
#define TSL_NORM_FAMILY(t)                                                      \
  TSL_ROW_NORM(instance_norm, instanceNorm, t)                                  \
  TSL_BATCH_NORM(t)                                                             \
  TSL_KERNEL tsl_lrn_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(LrnParams)) { lrn(x, y, p); }

#define TSL_SCAN(t)                                                             \
  TSL_KERNEL tsl_scan_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(ScanParams)) { \
    scan(x, y, p);                                                              \
  }

#define TSL_GATHER_ELEMENTS(w, i)                                               \
  TSL_KERNEL tsl_gather_elements_w##w##_##i(const TSL_W(w) *x, const TSL_T(i) *indices, \
                                            TSL_W(w) *y,                        \
                                            TSL_PARAMS(GatherElementsParams)) { \
    gatherElements(x, indices, y, p);                                           \
  }
#define TSL_GATHER_ND(w)                                                        \
  TSL_KERNEL tsl_gather_nd_w##w##_i64(const TSL_W(w) *x, const int64_t *indices, \
                                      TSL_W(w) *y, TSL_PARAMS(GatherNDParams)) { \
    gatherND(x, indices, y, p);                                                 \
  }
#define TSL_SCATTER_ND(w)                                                       \
  TSL_KERNEL tsl_scatter_nd_w##w##_i64(const int64_t *indices, const TSL_W(w) *u,     \
                                       TSL_W(w) *y, TSL_PARAMS(ScatterNDParams)) { \
    scatterND(indices, u, y, p);                                                \
  }
#define TSL_SCATTER_ND_REDUCE(name, op, t)                                      \
  TSL_KERNEL tsl_scatter_nd_##name##_##t(const int64_t *indices, const TSL_T(t) *u, \
                                         TSL_T(t) *y, TSL_PARAMS(ScatterNDParams)) { \
    scatterNDReduce<B::op>(indices, u, y, p);                                   \
  }
#define TSL_SCATTER_ND_REDUCE_TYPES(name, op)                                   \
  TSL_SCATTER_ND_REDUCE(name, op, f32) TSL_SCATTER_ND_REDUCE(name, op, f16)     \
  TSL_SCATTER_ND_REDUCE(name, op, i32) TSL_SCATTER_ND_REDUCE(name, op, i64)

//===----------------------------------------------------------------------===//
// The families, in TESSEL_KERNEL_FAMILIES's order
//===----------------------------------------------------------------------===//

// move: copy, identity, reshape (tsl_copy), transpose, slice, expand (affine),
// pad and im2row, every dtype by its bits: what a CNN's boundary uses.
#ifdef TSL_FAMILY_move
TSL_KERNEL tsl_copy(const uint8_t *x, uint8_t *y, TSL_PARAMS(CopyParams)) { copyBytes(x, y, p); }
TSL_MOVE_WIDTHS(affine, affineCopy, AffineParams)
TSL_MOVE(affine, affineCopy, AffineParams, 16)
TSL_MOVE_WIDTHS(pad, pad, PadParams)
TSL_MOVE_WIDTHS(im2row, im2row, Im2RowParams)
TSL_MOVE_WIDTHS(im2row_rows, im2rowRows, Im2RowParams)
#endif

// concat and tile.
#ifdef TSL_FAMILY_concat
TSL_MOVE_WIDTHS(concat, concatPart, ConcatParams)
TSL_MOVE(concat, concatPart, ConcatParams, 16)
TSL_MOVE_WIDTHS(tile, tile, TileParams)
#endif

#ifdef TSL_FAMILY_gather
TSL_GATHER_WIDTHS(i32)
TSL_GATHER_WIDTHS(i64)
#endif

// Casts between f32 and f16: the precision boundaries of an fp16 engine.
#ifdef TSL_FAMILY_cast_half
TSL_CAST(f32, f16)
TSL_CAST(f16, f32)
#endif

// Every other pair of f32 f16 f64 i8 u8 i32 i64 bool.
#ifdef TSL_FAMILY_cast
TSL_CAST(f32, f32) TSL_CAST(f32, f64) TSL_CAST_TO_INTS(f32)
TSL_CAST(f16, f16) TSL_CAST(f16, f64) TSL_CAST_TO_INTS(f16)
TSL_CAST_FROM(f64)
TSL_CAST_FROM(i8)
TSL_CAST_FROM(u8)
TSL_CAST_FROM(i32)
TSL_CAST_FROM(i64)
TSL_CAST_FROM(b8)
#endif

#ifdef TSL_FAMILY_unary_f32
TSL_UNARY_FLOAT_FAMILY(f32)
#endif

#ifdef TSL_FAMILY_unary_f16
TSL_UNARY_FLOAT_FAMILY(f16)
#endif

// relu, abs, neg, sign and clip of the integers; not.
#ifdef TSL_FAMILY_unary_int
TSL_UNARY_NUMERIC_OPS(TSL_UNARY, i8)
TSL_UNARY_NUMERIC_OPS(TSL_UNARY, i32)
TSL_UNARY_NUMERIC_OPS(TSL_UNARY, i64)
TSL_CLIP(i8)
TSL_CLIP(u8)
TSL_CLIP(i32)
TSL_CLIP(i64)
TSL_KERNEL tsl_not_b8(const uint8_t *x, uint8_t *y, TSL_PARAMS(UnaryParams)) {
  logicalNot(x, y, p);
}
#endif

// add sub mul div pow max min prelu, numpy broadcasting; pow with an integer
// exponent; mod (ONNX Mod, fmod=0: integers only) and fmod (fmod=1).
#ifdef TSL_FAMILY_binary_f32
TSL_BINARY_OPS(TSL_BINARY, f32)
TSL_BINARY_VEC_OPS(f32, 4)
TSL_BINARY(fmod, FMod, f32)
TSL_POW_MIXED(f32, i32)
TSL_POW_MIXED(f32, i64)
#endif

#ifdef TSL_FAMILY_binary_f16
TSL_BINARY_OPS(TSL_BINARY, f16)
TSL_BINARY_VEC_OPS(f16, 8)
TSL_BINARY(fmod, FMod, f16)
#endif

#ifdef TSL_FAMILY_binary_int
TSL_BINARY_OPS(TSL_BINARY, i32)
TSL_BINARY_OPS(TSL_BINARY, i64)
TSL_INTS(TSL_BINARY, mod, Mod)
TSL_INTS(TSL_BINARY, fmod, FMod)
TSL_POW_MIXED(i32, f32)
TSL_POW_MIXED(i32, i64)
TSL_POW_MIXED(i64, f32)
TSL_POW_MIXED(i64, i32)
#endif

// Comparisons, and, or, xor, where.
#ifdef TSL_FAMILY_logic
TSL_NUMERIC(TSL_COMPARE, equal, Equal)
TSL_NUMERIC(TSL_COMPARE, less, Less)
TSL_NUMERIC(TSL_COMPARE, less_equal, LessEqual)
TSL_NUMERIC(TSL_COMPARE, greater, Greater)
TSL_NUMERIC(TSL_COMPARE, greater_equal, GreaterEqual)
TSL_KERNEL tsl_equal_b8(const uint8_t *a, const uint8_t *b, uint8_t *y,
                        TSL_PARAMS(BroadcastParams)) {
  compare<Cmp::Equal>(a, b, y, p);
}
TSL_LOGICAL(tsl_and_b8, And)
TSL_LOGICAL(tsl_or_b8, Or)
TSL_LOGICAL(tsl_xor_b8, Xor)
TSL_WHERE(1)
TSL_WHERE(2)
TSL_WHERE(4)
TSL_WHERE(8)
#endif

// reduce_sum and reduce_mean: f32 (the precision policy's, and the global
// average pool's), f16 (a model's own).
#ifdef TSL_FAMILY_reduce_sum_f32
TSL_REDUCE(reduce_sum, Sum, f32)
TSL_REDUCE(reduce_mean, Mean, f32)
TSL_REDUCE_COLUMNS(reduce_sum, Sum, f32)
TSL_REDUCE_COLUMNS(reduce_mean, Mean, f32)
#endif

#ifdef TSL_FAMILY_reduce_sum_f16
TSL_REDUCE(reduce_sum, Sum, f16)
TSL_REDUCE(reduce_mean, Mean, f16)
TSL_REDUCE_COLUMNS(reduce_sum, Sum, f16)
TSL_REDUCE_COLUMNS(reduce_mean, Mean, f16)
TSL_REDUCE_COLUMNS_VEC(reduce_sum, Sum)
TSL_REDUCE_COLUMNS_VEC(reduce_mean, Mean)
#endif

// A squeeze-excitation block's global pool and first 1x1 conv (f16 NHWC).
#ifdef TSL_FAMILY_pool_fc
TSL_KERNEL_BOUNDED(kPoolFcThreads)
tsl_pool_fc_f16(const f16 *x, const f16 *w, const f16 *bias, f16 *y, float *partial,
                unsigned *counters, TSL_PARAMS(PoolFcParams)) {
  poolFc(x, w, bias, y, partial, counters, p);
}
#endif

// The selections and the product of the floats.
#ifdef TSL_FAMILY_reduce_max
TSL_FLOATS(TSL_REDUCE, reduce_max, Max)
TSL_FLOATS(TSL_REDUCE, reduce_min, Min)
TSL_FLOATS(TSL_REDUCE, reduce_prod, Prod)
#endif

// Integers: the selections and the wrap-around sum and product only.
#ifdef TSL_FAMILY_reduce_int
TSL_INTS(TSL_REDUCE, reduce_sum, Sum)
TSL_INTS(TSL_REDUCE, reduce_max, Max)
TSL_INTS(TSL_REDUCE, reduce_min, Min)
TSL_INTS(TSL_REDUCE, reduce_prod, Prod)
#endif

#ifdef TSL_FAMILY_reduce_norm
TSL_FLOATS(TSL_REDUCE, reduce_l1, L1)
TSL_FLOATS(TSL_REDUCE, reduce_l2, L2)
TSL_FLOATS(TSL_REDUCE, reduce_log_sum, LogSum)
TSL_FLOATS(TSL_REDUCE, reduce_log_sum_exp, LogSumExp)
TSL_FLOATS(TSL_REDUCE, reduce_sum_square, SumSquare)
#endif

#ifdef TSL_FAMILY_argmax
TSL_NUMERIC(TSL_ARG, argmax, true)
TSL_NUMERIC(TSL_ARG, argmin, false)
#endif

// softmax: f32 (the precision policy's), f16 (a model's own); log_softmax.
#ifdef TSL_FAMILY_softmax_f32
TSL_SOFTMAX(softmax, false, f32)
#endif

#ifdef TSL_FAMILY_softmax_f16
TSL_SOFTMAX(softmax, false, f16)
#endif

#ifdef TSL_FAMILY_log_softmax
TSL_FLOATS(TSL_SOFTMAX, log_softmax, true)
#endif

#ifdef TSL_FAMILY_max_pool
TSL_FLOATS(TSL_POOL_VEC, max_pool, maxPool)
#endif

#ifdef TSL_FAMILY_max_pool_int
TSL_INTS(TSL_POOL, max_pool, maxPool)
TSL_POOL(max_pool, maxPool, i8)
TSL_POOL(max_pool, maxPool, u8)
#endif

// max_pool_indices: MaxPool's Indices output (i64), from f32 and f16.
#define TSL_POOL_INDICES(name, t)                                               \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *x, int64_t *y, TSL_PARAMS(PoolParams)) { \
    maxPoolIndices(x, y, p);                                                    \
  }

#ifdef TSL_FAMILY_max_pool_indices
TSL_FLOATS(TSL_POOL_INDICES, max_pool_indices)
#endif

#ifdef TSL_FAMILY_avg_pool
TSL_FLOATS(TSL_POOL_VEC, avg_pool, avgPool)
#endif

// layer_norm in f32: the precision policy's (an fp16 engine runs it in f32
// too) and a model's own f32; apart from the other norms, since a
// transformer uses layer_norm only and a CNN the others only.
#ifdef TSL_FAMILY_layer_norm_f32
TSL_ROW_NORM(layer_norm, layerNorm, f32)
#endif

// layer_norm on a model's own f16 tensors (f32 math inside).
#ifdef TSL_FAMILY_layer_norm_f16
TSL_ROW_NORM(layer_norm, layerNorm, f16)
#endif

// instance_norm, batch_norm (one that does not fold into a conv), lrn: f32
// as the precision policy runs them, f16 on a model's own f16 tensors.
#ifdef TSL_FAMILY_norm_f32
TSL_NORM_FAMILY(f32)
#endif

#ifdef TSL_FAMILY_norm_f16
TSL_NORM_FAMILY(f16)
#endif

// resize (tessel/resize.h), f32 and f16.
#ifdef TSL_FAMILY_resize
#define TSL_RESIZE(t)                                                           \
  TSL_KERNEL tsl_resize_##t(const TSL_T(t) *x, TSL_T(t) *y,                     \
                            TSL_PARAMS(tessel::resize::Params)) {               \
    resizeElements(x, y, p);                                                    \
  }
TSL_RESIZE(f32) TSL_RESIZE(f16)
#endif

// top_k: values of every numeric dtype, int64 indices.
#ifdef TSL_FAMILY_top_k
#define TSL_TOP_K(t)                                                            \
  TSL_KERNEL tsl_top_k_##t(const TSL_T(t) *x, TSL_T(t) *values, int64_t *indices, \
                           TSL_PARAMS(TopKParams)) {                            \
    topK(x, values, indices, p);                                                \
  }
TSL_TOP_K(f32) TSL_TOP_K(f16) TSL_TOP_K(i32) TSL_TOP_K(i64)
#endif

// non_max_suppression: boxes and scores f32 (the precision policy's) or f16,
// int64 rows and count.
#ifdef TSL_FAMILY_nms
#define TSL_NMS_SELECT(t)                                                       \
  TSL_KERNEL_BOUNDED(kNmsBlock)                                                 \
  tsl_nms_select_##t(const TSL_T(t) *boxes, const TSL_T(t) *scores, uint8_t *work, \
                     TSL_PARAMS(NmsParams)) {                                   \
    nmsSelect(boxes, scores, work, p);                                          \
  }
TSL_NMS_SELECT(f32) TSL_NMS_SELECT(f16)
TSL_KERNEL tsl_nms_compact(const uint8_t *work, int64_t *selected, int64_t *count,
                           TSL_PARAMS(NmsParams)) {
  nmsCompact(work, selected, count, p);
}
#endif

#ifdef TSL_FAMILY_scan
TSL_SCAN(f32) TSL_SCAN(f16) TSL_SCAN(i32) TSL_SCAN(i64)
#endif

// Selections by index or position: gather_elements, gather_nd, scatter_nd,
// trilu, every dtype by its bits (scatter_nd's reductions: f32, f16, i32,
// i64).
#ifdef TSL_FAMILY_index
TSL_GATHER_ELEMENTS(1, i32) TSL_GATHER_ELEMENTS(2, i32) TSL_GATHER_ELEMENTS(4, i32)
TSL_GATHER_ELEMENTS(8, i32)
TSL_GATHER_ELEMENTS(1, i64) TSL_GATHER_ELEMENTS(2, i64) TSL_GATHER_ELEMENTS(4, i64)
TSL_GATHER_ELEMENTS(8, i64)
TSL_GATHER_ND(1) TSL_GATHER_ND(2) TSL_GATHER_ND(4) TSL_GATHER_ND(8) TSL_GATHER_ND(16)
TSL_SCATTER_ND(1) TSL_SCATTER_ND(2) TSL_SCATTER_ND(4) TSL_SCATTER_ND(8) TSL_SCATTER_ND(16)
TSL_SCATTER_ND_REDUCE_TYPES(add, Add) TSL_SCATTER_ND_REDUCE_TYPES(mul, Mul)
TSL_SCATTER_ND_REDUCE_TYPES(max, Max) TSL_SCATTER_ND_REDUCE_TYPES(min, Min)
TSL_MOVE_WIDTHS(trilu, trilu, TriluParams)
#endif

// Fused attention: the Tensor Core kernels on f16 (one per padded head dim,
// tsl_attention_f16_tc_d<HD>) and the SIMT kernels on f32 and f16.
#ifdef TSL_FAMILY_attention
#define TSL_ATTENTION_TC(hd)                                                    \
  TSL_KERNEL_BOUNDED(kAttentionThreads)                                         \
  tsl_attention_f16_tc_d##hd(const f16 *q, const f16 *k, const f16 *v, const void *mask, \
                             f16 *y, TSL_PARAMS(AttentionParams)) {             \
    attention::attentionTc<hd, attentionTcKeys(hd)>(q, k, v, mask, y, p);       \
  }
#define TSL_ATTENTION_TC_SPLIT(hd)                                              \
  TSL_KERNEL_BOUNDED(kAttentionThreads)                                         \
  tsl_attention_f16_tcsplit_d##hd(const f16 *q, const f16 *k, const f16 *v,   \
                                  const void *mask, f16 *y, TSL_PARAMS(AttentionParams)) { \
    attention::attentionTcSplit<hd, attentionSplitKeys(hd)>(q, k, v, mask, y, p); \
  }
#define TSL_ATTENTION_SIMT(t)                                                   \
  TSL_KERNEL_BOUNDED(kAttentionThreads)                                         \
  tsl_attention_##t##_simt(const TSL_T(t) *q, const TSL_T(t) *k, const TSL_T(t) *v, \
                           const void *mask, TSL_T(t) *y, TSL_PARAMS(AttentionParams)) { \
    attention::attentionSimt<TSL_T(t)>(q, k, v, mask, y, p);                    \
  }
TSL_ATTENTION_TC(64) TSL_ATTENTION_TC(80) TSL_ATTENTION_TC(96) TSL_ATTENTION_TC(128)
TSL_ATTENTION_TC_SPLIT(64) TSL_ATTENTION_TC_SPLIT(80) TSL_ATTENTION_TC_SPLIT(96)
TSL_ATTENTION_TC_SPLIT(128)
TSL_ATTENTION_SIMT(f32) TSL_ATTENTION_SIMT(f16)
#endif
