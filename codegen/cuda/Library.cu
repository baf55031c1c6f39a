//===- Library.cu - the entry points of the CUDA kernel library -----------===//
//
// The one translation unit nvcc compiles (to PTX for compute_75 and to a
// cubin per SM) when Tessel is built. Every entry point is extern "C" with a
// name that spells its op and dtypes (tsl_<op>_<dtype...>[_<strategy>]), so
// the planner (KernelLibrary.cpp) can name it and the names never depend on
// C++ mangling. Arguments: the tensors' device addresses in the step's
// operand order, then the result(s), then one by-value parameter struct
// (KernelParams.h).
//
//===----------------------------------------------------------------------===//
#include "kernels/Cast.cuh"
#include "kernels/Elementwise.cuh"
#include "kernels/Movement.cuh"
#include "kernels/Pool.cuh"
#include "kernels/Reduction.cuh"

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
#define TSL_PARAMS(type) const __grid_constant__ type p

// X(args..., t) for each dtype of a family.
// f64 computes only in cast and the movement kernels (dtype-blind): a model's
// own f64 math runs on the CPU tier rather than doubling the library.
#define TSL_FLOATS(X, ...) X(__VA_ARGS__, f32) X(__VA_ARGS__, f16)
#define TSL_INTS(X, ...) X(__VA_ARGS__, i32) X(__VA_ARGS__, i64)
#define TSL_NUMERIC(X, ...) TSL_FLOATS(X, __VA_ARGS__) TSL_INTS(X, __VA_ARGS__)

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define TSL_UNARY(name, id, t)                                                  \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(UnaryParams)) { \
    unary<U::id>(x, y, p);                                                      \
  }
#define TSL_UNARY_FLOAT(name, id) TSL_FLOATS(TSL_UNARY, name, id)
// relu, abs, neg and sign also on integers.
#define TSL_UNARY_NUMERIC(name, id) TSL_NUMERIC(TSL_UNARY, name, id) TSL_UNARY(name, id, i8)

TSL_UNARY_NUMERIC(relu, Relu)
TSL_UNARY_NUMERIC(abs, Abs)
TSL_UNARY_NUMERIC(neg, Neg)
TSL_UNARY_NUMERIC(sign, Sign)
TSL_UNARY_FLOAT(sigmoid, Sigmoid)
TSL_UNARY_FLOAT(tanh, Tanh)
TSL_UNARY_FLOAT(exp, Exp)
TSL_UNARY_FLOAT(log, Log)
TSL_UNARY_FLOAT(sqrt, Sqrt)
TSL_UNARY_FLOAT(reciprocal, Reciprocal)
TSL_UNARY_FLOAT(floor, Floor)
TSL_UNARY_FLOAT(ceil, Ceil)
TSL_UNARY_FLOAT(round, Round)
TSL_UNARY_FLOAT(erf, Erf)
TSL_UNARY_FLOAT(sin, Sin)
TSL_UNARY_FLOAT(cos, Cos)
TSL_UNARY_FLOAT(tan, Tan)
TSL_UNARY_FLOAT(asin, Asin)
TSL_UNARY_FLOAT(acos, Acos)
TSL_UNARY_FLOAT(atan, Atan)
TSL_UNARY_FLOAT(sinh, Sinh)
TSL_UNARY_FLOAT(cosh, Cosh)
TSL_UNARY_FLOAT(asinh, Asinh)
TSL_UNARY_FLOAT(acosh, Acosh)
TSL_UNARY_FLOAT(atanh, Atanh)
TSL_UNARY_FLOAT(softplus, Softplus)
TSL_UNARY_FLOAT(softsign, Softsign)
TSL_UNARY_FLOAT(hard_swish, HardSwish)
TSL_UNARY_FLOAT(leaky_relu, LeakyRelu)
TSL_UNARY_FLOAT(elu, Elu)
TSL_UNARY_FLOAT(celu, Celu)
TSL_UNARY_FLOAT(selu, Selu)
TSL_UNARY_FLOAT(thresholded_relu, ThresholdedRelu)
TSL_UNARY_FLOAT(hard_sigmoid, HardSigmoid)
TSL_UNARY_FLOAT(shrink, Shrink)

TSL_KERNEL tsl_not_b8(const uint8_t *x, uint8_t *y, TSL_PARAMS(UnaryParams)) {
  logicalNot(x, y, p);
}

#define TSL_CLIP(unused, t)                                                     \
  TSL_KERNEL tsl_clip_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(ClipParams)) { \
    clip(x, y, p);                                                              \
  }
TSL_NUMERIC(TSL_CLIP, _)
TSL_CLIP(_, i8)
TSL_CLIP(_, u8)

#define TSL_BINARY(name, id, t)                                                 \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *a, const TSL_T(t) *b, TSL_T(t) *y,      \
                              TSL_PARAMS(BroadcastParams)) {                    \
    binary<B::id>(a, b, y, p);                                                  \
  }
TSL_NUMERIC(TSL_BINARY, add, Add)
TSL_NUMERIC(TSL_BINARY, sub, Sub)
TSL_NUMERIC(TSL_BINARY, mul, Mul)
TSL_NUMERIC(TSL_BINARY, div, Div)
TSL_NUMERIC(TSL_BINARY, pow, Pow)
TSL_NUMERIC(TSL_BINARY, max, Max)
TSL_NUMERIC(TSL_BINARY, min, Min)
TSL_NUMERIC(TSL_BINARY, prelu, PRelu)

#define TSL_POW_MIXED(t, e)                                                     \
  TSL_KERNEL tsl_pow_##t##_##e(const TSL_T(t) *a, const TSL_T(e) *b, TSL_T(t) *y,     \
                               TSL_PARAMS(BroadcastParams)) {                   \
    powMixed(a, b, y, p);                                                       \
  }
TSL_POW_MIXED(f32, i32)
TSL_POW_MIXED(f32, i64)
TSL_POW_MIXED(i32, f32)
TSL_POW_MIXED(i32, i64)
TSL_POW_MIXED(i64, f32)
TSL_POW_MIXED(i64, i32)

#define TSL_COMPARE(name, id, t)                                                \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *a, const TSL_T(t) *b, uint8_t *y,       \
                              TSL_PARAMS(BroadcastParams)) {                    \
    compare<Cmp::id>(a, b, y, p);                                               \
  }
TSL_NUMERIC(TSL_COMPARE, equal, Equal)
TSL_NUMERIC(TSL_COMPARE, less, Less)
TSL_NUMERIC(TSL_COMPARE, less_equal, LessEqual)
TSL_NUMERIC(TSL_COMPARE, greater, Greater)
TSL_NUMERIC(TSL_COMPARE, greater_equal, GreaterEqual)

TSL_KERNEL tsl_equal_b8(const uint8_t *a, const uint8_t *b, uint8_t *y,
                        TSL_PARAMS(BroadcastParams)) {
  compare<Cmp::Equal>(a, b, y, p);
}

// (`and`, `or` and `xor` are C++ operator names: no token pasting.)
#define TSL_LOGICAL(entry, id)                                                  \
  TSL_KERNEL entry(const uint8_t *a, const uint8_t *b, uint8_t *y,              \
                   TSL_PARAMS(BroadcastParams)) {                               \
    logical<L::id>(a, b, y, p);                                                 \
  }
TSL_LOGICAL(tsl_and_b8, And)
TSL_LOGICAL(tsl_or_b8, Or)
TSL_LOGICAL(tsl_xor_b8, Xor)

#define TSL_WHERE(w)                                                            \
  TSL_KERNEL tsl_where_w##w(const uint8_t *c, const TSL_W(w) *a, const TSL_W(w) *b,   \
                            TSL_W(w) *y, TSL_PARAMS(BroadcastParams)) {         \
    where(c, a, b, y, p);                                                       \
  }
TSL_WHERE(1)
TSL_WHERE(2)
TSL_WHERE(4)
TSL_WHERE(8)

//===----------------------------------------------------------------------===//
// cast: every pair of f32 f16 f64 i8 u8 i32 i64 bool
//===----------------------------------------------------------------------===//

#define TSL_CAST(s, d)                                                          \
  TSL_KERNEL tsl_cast_##s##_##d(const TSL_T(s) *x, TSL_T(d) *y, TSL_PARAMS(UnaryParams)) { \
    cast(x, y, p);                                                              \
  }
#define TSL_CAST_FROM(s)                                                        \
  TSL_CAST(s, f32) TSL_CAST(s, f16) TSL_CAST(s, f64) TSL_CAST(s, i8) TSL_CAST(s, u8)   \
  TSL_CAST(s, i32) TSL_CAST(s, i64) TSL_CAST(s, b8)
TSL_CAST_FROM(f32)
TSL_CAST_FROM(f16)
TSL_CAST_FROM(f64)
TSL_CAST_FROM(i8)
TSL_CAST_FROM(u8)
TSL_CAST_FROM(i32)
TSL_CAST_FROM(i64)
TSL_CAST_FROM(b8)

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TSL_KERNEL tsl_copy(const uint8_t *x, uint8_t *y, TSL_PARAMS(CopyParams)) { copyBytes(x, y, p); }

#define TSL_MOVE(name, fn, params, w)                                           \
  TSL_KERNEL tsl_##name##_w##w(const TSL_W(w) *x, TSL_W(w) *y, TSL_PARAMS(params)) {  \
    fn(x, y, p);                                                                \
  }
#define TSL_MOVE_WIDTHS(name, fn, params)                                       \
  TSL_MOVE(name, fn, params, 1) TSL_MOVE(name, fn, params, 2)                   \
  TSL_MOVE(name, fn, params, 4) TSL_MOVE(name, fn, params, 8)
TSL_MOVE_WIDTHS(affine, affineCopy, AffineParams)
TSL_MOVE_WIDTHS(tile, tile, TileParams)
TSL_MOVE_WIDTHS(pad, pad, PadParams)
TSL_MOVE_WIDTHS(concat, concatPart, ConcatParams)
TSL_MOVE(concat, concatPart, ConcatParams, 16)

#define TSL_GATHER(w, i)                                                        \
  TSL_KERNEL tsl_gather_w##w##_##i(const TSL_W(w) *x, const TSL_T(i) *indices,        \
                                   TSL_W(w) *y, TSL_PARAMS(GatherParams)) {     \
    gather(x, indices, y, p);                                                   \
  }
#define TSL_GATHER_WIDTHS(i)                                                    \
  TSL_GATHER(1, i) TSL_GATHER(2, i) TSL_GATHER(4, i) TSL_GATHER(8, i) TSL_GATHER(16, i)
TSL_GATHER_WIDTHS(i32)
TSL_GATHER_WIDTHS(i64)

//===----------------------------------------------------------------------===//
// Reductions, softmax, argmax/argmin
//===----------------------------------------------------------------------===//

#define TSL_REDUCE(name, id, t)                                                 \
  TSL_KERNEL tsl_##name##_##t##_thread(const TSL_T(t) *x, TSL_T(t) *y,              \
                                       TSL_PARAMS(ReduceParams)) {              \
    reduceThread<R::id>(x, y, p);                                               \
  }                                                                             \
  TSL_KERNEL tsl_##name##_##t##_block(const TSL_T(t) *x, TSL_T(t) *y,               \
                                      TSL_PARAMS(ReduceParams)) {               \
    reduceBlock<R::id>(x, y, p);                                                \
  }
// Integers: the selections and the wrap-around sum and product only.
TSL_NUMERIC(TSL_REDUCE, reduce_sum, Sum)
TSL_NUMERIC(TSL_REDUCE, reduce_max, Max)
TSL_NUMERIC(TSL_REDUCE, reduce_min, Min)
TSL_NUMERIC(TSL_REDUCE, reduce_prod, Prod)
TSL_FLOATS(TSL_REDUCE, reduce_mean, Mean)
TSL_FLOATS(TSL_REDUCE, reduce_l1, L1)
TSL_FLOATS(TSL_REDUCE, reduce_l2, L2)
TSL_FLOATS(TSL_REDUCE, reduce_log_sum, LogSum)
TSL_FLOATS(TSL_REDUCE, reduce_log_sum_exp, LogSumExp)
TSL_FLOATS(TSL_REDUCE, reduce_sum_square, SumSquare)

#define TSL_SOFTMAX(name, isLog, t)                                             \
  TSL_KERNEL tsl_##name##_##t##_thread(const TSL_T(t) *x, TSL_T(t) *y,              \
                                       TSL_PARAMS(AxisParams)) {                \
    softmaxThread<isLog>(x, y, p);                                              \
  }                                                                             \
  TSL_KERNEL tsl_##name##_##t##_block(const TSL_T(t) *x, TSL_T(t) *y,               \
                                      TSL_PARAMS(AxisParams)) {                 \
    softmaxBlock<isLog>(x, y, p);                                               \
  }
TSL_FLOATS(TSL_SOFTMAX, softmax, false)
TSL_FLOATS(TSL_SOFTMAX, log_softmax, true)

#define TSL_ARG(name, isMax, t)                                                 \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *x, int64_t *y, TSL_PARAMS(AxisParams)) { \
    argReduce<isMax>(x, y, p);                                                  \
  }
TSL_NUMERIC(TSL_ARG, argmax, true)
TSL_NUMERIC(TSL_ARG, argmin, false)

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

#define TSL_POOL(name, fn, t)                                                   \
  TSL_KERNEL tsl_##name##_##t(const TSL_T(t) *x, TSL_T(t) *y, TSL_PARAMS(PoolParams)) { \
    fn(x, y, p);                                                                \
  }
TSL_NUMERIC(TSL_POOL, max_pool, maxPool)
TSL_POOL(max_pool, maxPool, i8)
TSL_POOL(max_pool, maxPool, u8)
TSL_FLOATS(TSL_POOL, avg_pool, avgPool)
