//===- KernelParams.h - by-value arguments of the library kernels -*- C++ -*-===//
//
// The structs each library kernel takes by value after its tensor pointers,
// shared by the planner (host C++, which writes them as a launch's raw
// argument bytes) and the kernels (CUDA C++, which read them as a
// __grid_constant__ parameter). Plain fixed-width fields, naturally aligned,
// so that g++ and nvcc lay them out identically; the static_asserts at the
// end pin the sizes both sides must agree on.
//
// Shapes are at most kMaxRank dims after the planner merges the dims an
// operation treats alike (a step of higher rank runs on the CPU tier). All
// element counts, offsets and strides are 64-bit and in elements (the
// movement kernels' units are words of the launch's width, see each struct).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELPARAMS_H
#define TESSEL_CODEGEN_CUDA_KERNELPARAMS_H

#include <stdint.h>

namespace tessel::kernels {

constexpr int kMaxRank = 8;
constexpr int kMaxPoolDims = 3;

/// Flat elementwise ops (unary, cast): `n` elements, and the op's scalar
/// parameters as the engine stores them (leaky_relu alpha, selu alpha and
/// gamma, hard_sigmoid alpha and beta, shrink bias (alpha) and lambd (beta)).
struct UnaryParams {
  int64_t n;
  double alpha, beta, gamma;
};

/// clip: bounds already in the tensor's dtype, as the CPU kernel converts
/// them: `lo`/`hi` hold float bounds exactly (f16 rounded to f16), `ilo`/`ihi`
/// integer bounds (saturated).
struct ClipParams {
  int64_t n;
  double lo, hi;
  int64_t ilo, ihi;
};

/// N-ary numpy broadcasting (binary ops, comparisons, logic, where): the
/// result's shape and, per operand, its element strides in the result's index
/// space (0 along broadcast dims). Operand k of the kernel is stride[k].
struct BroadcastParams {
  int64_t n;
  int32_t rank, pad0;
  int64_t shape[kMaxRank];
  int64_t stride[3][kMaxRank];
};

/// out[i...] = in[base + sum_d i_d * stride[d]]: transpose, slice, expand.
struct AffineParams {
  int64_t n, base;
  int32_t rank, pad0;
  int64_t shape[kMaxRank];
  int64_t stride[kMaxRank];
};

/// tile: out[i...] = in[sum_d (i_d % inShape[d]) * inStride[d]].
struct TileParams {
  int64_t n;
  int32_t rank, pad0;
  int64_t shape[kMaxRank];
  int64_t inShape[kMaxRank];
  int64_t inStride[kMaxRank];
};

/// pad: mode 0 constant, 1 reflect, 2 edge; `begin` may be negative (a crop);
/// `fill` holds the constant's bits in the low bytes.
struct PadParams {
  int64_t n;
  int32_t rank, mode;
  uint64_t fill;
  int64_t shape[kMaxRank];
  int64_t inShape[kMaxRank];
  int64_t inStride[kMaxRank];
  int64_t begin[kMaxRank];
};

/// im2row: input rows (N x H) of `width` x `channels`, result rows of
/// `outWidth` x `depth` (Movement.cuh).
struct Im2RowParams {
  int64_t rows, width, channels, outWidth, depth;
  int64_t kernel, stride, dilation, pad;
};
/// The shared bytes of im2rowRows's row (and its padding, 16-byte aligned).
constexpr int64_t kIm2RowRowBytes = 8192;

/// copy (identity, reshape, the writer's output copies): `bytes` bytes; the
/// kernel does nothing when source and destination are the same address.
struct CopyParams {
  uint64_t bytes;
};

/// One concat operand: `rows` rows of `chunk` words copied to the result at
/// row stride `dstRow`, starting at word `dstOffset` (units: the kernel's
/// word width).
struct ConcatParams {
  int64_t rows, chunk, dstRow, dstOffset;
};

/// gather: the data as [outer, extent, inner] (inner in words), the indices
/// flattened to `count`; the result is [outer, count, inner].
struct GatherParams {
  int64_t outer, extent, count, inner;
};

/// reduce_*: the input's kept dims (row-major order of the result) and its
/// reduced dims, each with its input strides; `count` elements per result.
struct ReduceParams {
  int64_t numOut, count;
  int32_t keptRank, reducedRank;
  int64_t keptShape[kMaxRank], keptStride[kMaxRank];
  int64_t reducedShape[kMaxRank], reducedStride[kMaxRank];
};

/// A reduction over the middle dim of [outer, rows, inner] (a global pool of
/// NHWC: [batch, H*W, channels]): row chunks of `chunk` rows, `splits` of
/// them (splits > 1: partial sums to the workspace, then a second launch).
struct ColumnParams {
  int64_t outer, rows, inner, chunk;
  int32_t splits, pad0;
};
/// The one-launch f16 kernel (reduceColumnsVec): 64 channels a block of
/// 1024 threads, 128 row groups, at most 18 rows a group.
constexpr int64_t kColumnVecChannels = 64, kColumnVecThreads = 1024,
                  kColumnVecMaxRows = 18 * (kColumnVecThreads / 8);

/// pool_fc (a squeeze-excitation block's pool and first 1x1 conv) of f16
/// NHWC [outer, rows, channels], channels % 8 == 0: block (x, image) sums
/// rows [s * chunk, (s + 1) * chunk) of 64 channels (tile t, x = s * tiles
/// + t) and multiplies them into the weight's 64 columns; the image's last
/// block to finish adds the `tiles * splits` partials in block order. Its
/// `activation` is the epilogue's (elementwise::Activation).
struct PoolFcParams {
  int64_t outer, rows, channels, outChannels, chunk;
  int32_t tiles, splits, activation, pad0;
  float alpha, beta;
};
constexpr int64_t kPoolFcChannels = 64, kPoolFcThreads = 256,
                  kPoolFcMaxRows = 8 * (kPoolFcThreads / 8); // rows a block sums

/// softmax, log_softmax, argmax, argmin: the input as [outer, length, inner]
/// around the axis; `last` is argmax/argmin's select_last_index.
struct AxisParams {
  int64_t outer, length, inner;
  int32_t last, pad0;
};

/// max_pool, avg_pool: element (n, c, spatial position s) of the input is at
/// n * inBatch + c * inC + s * inS (s row-major over inSpatial), likewise for
/// the result; `n` results in all.
struct PoolParams {
  int64_t n, batch, channels;
  int64_t inBatch, inC, inS, outBatch, outC, outS;
  int32_t spatialRank, includePad;
  int32_t columnMajor; // max_pool_indices' storage_order 1
  int32_t unused;
  int64_t inSpatial[kMaxPoolDims], outSpatial[kMaxPoolDims], kernel[kMaxPoolDims];
  int64_t stride[kMaxPoolDims], dilation[kMaxPoolDims];
  int64_t padBegin[kMaxPoolDims], padEnd[kMaxPoolDims];
};

/// The row a thread of a layer_norm or instance_norm _warp or _block kernel
/// holds in registers (Normalization.cuh): kNormHeldFloats / V vectors of V
/// elements with 16-byte loads, kNormHeldElements with element loads (fewer,
/// to keep the unrolled code of these rarer kernels small).
constexpr int kNormHeldFloats = 32;
constexpr int kNormHeldElements = 8;
/// The most threads a block of a row kernel has (its entry's launch bound).
constexpr int kNormMaxBlock = 512;

/// layer_norm, instance_norm: `rows` rows of `length` contiguous elements,
/// each normalized by its own mean and variance. layer_norm's scale and bias
/// have the row's shape (step 1) or one element (step 0); instance_norm's
/// row r is channel r % `channels`, whose scale and bias it takes.
struct NormParams {
  int64_t rows, length, channels;
  float epsilon;
  int32_t scaleStep, biasStep, pad0;
};

/// batch_norm, the input as [outer, channels, inner]: `n` elements, element
/// i of channel (i / inner) % channels.
struct BatchNormParams {
  int64_t n, channels, inner;
  double epsilon;
};

/// lrn, the input as [batch, channels, inner]: the window of channel c is
/// channels [c - before, c + after] within [0, channels); `coeff` is alpha /
/// size as the CPU computes it (in double).
struct LrnParams {
  int64_t n, channels, inner, before, after;
  float coeff, beta, bias;
  int32_t pad0;
};

/// cumsum and cumprod (`product`), the input as [outer, length, inner]
/// around the axis.
struct ScanParams {
  int64_t outer, length, inner;
  int32_t exclusive, reverse, product, pad0;
};

/// top_k, the input as [outer, length, inner] around the axis, k results
/// a line.
struct TopKParams {
  int64_t outer, length, inner, k;
  int32_t largest, pad0;
};

/// non_max_suppression (kernels/Detection.cuh): maxOutput is already at
/// most `boxes`, bound = batches * classes * maxOutput; the workspace holds a
/// byte per box per (batch, class), then from listOffset each (batch,
/// class)'s kept boxes (maxOutput int64 each), then from countOffset their
/// counts (int64).
struct NmsParams {
  int64_t batches, classes, boxes, maxOutput, bound, listOffset, countOffset;
  float iouThreshold, scoreThreshold;
  int32_t centerPoint, hasScoreThreshold;
};

/// gather_elements: result element i (row-major over `shape`, the indices'
/// shape) reads the data at sum_d i_d * stride[d] (stride[axis] = 0) plus
/// index * axisStride, the index taken in [-extent, extent).
struct GatherElementsParams {
  int64_t n, extent, axisStride;
  int32_t rank, pad0;
  int64_t shape[kMaxRank], stride[kMaxRank];
};

/// gather_nd: `n` result words, a slice of `sliceWords` words per tuple of
/// `k` indices; tuple t lies in batch t / tuplesPerBatch, whose data block
/// starts at slice batch * batchSlices; index j of a tuple is a position
/// in [-extent[j], extent[j]) along a dim whose step is stride[j] slices.
struct GatherNDParams {
  int64_t n, sliceWords, tuplesPerBatch, batchSlices;
  int32_t k, pad0;
  int64_t extent[kMaxRank], stride[kMaxRank];
};

/// scatter_nd: tuple t < `tuples` of `k` indices (index j in [-extent[j],
/// extent[j]), along a dim whose step is stride[j] slices) addresses a slice
/// of `sliceWords` words of the result. `n` work items: with reduction none
/// a word of a tuple's slice of the updates, with a reduction an element of
/// the slice (words are then elements), over every tuple in order.
struct ScatterNDParams {
  int64_t n, tuples, sliceWords;
  int32_t k, pad0;
  int64_t extent[kMaxRank], stride[kMaxRank];
};

/// trilu: `n` elements of matrices of rows x cols; element (i, j) stays
/// where j - i >= k (upper) or j - i <= k (lower).
struct TriluParams {
  int64_t n, rows, cols, k;
  int32_t upper, pad0;
};

/// attention (Attention.cuh): per batch bh = b * heads + h (a block
/// column), Q [sq, d], K [sk, d], V [sk, dv] and the result [sq, dv], each
/// read or written through its view (tessel/attention.h): element (b, h, i,
/// c) at offset + b * batch + h * head + i * row + c. The mask (maskKind 0
/// none, 1 f32 or 2 f16 additive, 3 bool keep) of score (bh, i, j) is at
/// b * maskB + h * maskH + i * maskI + j * maskJ (0 along its broadcast
/// dims). Key j is hidden from query i where causal and j > i + sk - sq.
struct AttentionView {
  int64_t offset, batch, head, row;
};
struct AttentionParams {
  int64_t batches, heads, sq, sk;
  int64_t maskB, maskH, maskI, maskJ;
  AttentionView q, k, v, out;
  int32_t d, dv;
  float scale;
  int32_t causal, maskKind, pad0;
};

/// The Tensor Core attention kernels: head dims padded to one of these, 64
/// query rows a block of 128 threads; keys a tile by head dim (shared
/// memory within sm_75's 64 KiB); shared memory Q plus two K and two V
/// tiles, rows padded by 8 halves.
constexpr int kAttentionTcHeadDims[] = {64, 80, 96, 128};
constexpr int kAttentionTcRows = 64;
constexpr int kAttentionThreads = 128;
#ifdef __CUDACC__
#define TSL_PARAMS_HOST_DEVICE __host__ __device__
#else
#define TSL_PARAMS_HOST_DEVICE
#endif
TSL_PARAMS_HOST_DEVICE constexpr int attentionTcKeys(int headDim) { return headDim <= 80 ? 64 : 32; }
TSL_PARAMS_HOST_DEVICE constexpr int attentionTcSharedBytes(int headDim) {
  return (kAttentionTcRows + 4 * attentionTcKeys(headDim)) * (headDim + 8) * 2;
}
/// The split-keys Tensor Core kernels (grids too small for the SMs): 16
/// query rows a block of 128 threads, each warp a quarter of the key tiles
/// (BC keys by head dim), each warp its own K and V buffers beside the Q
/// tile; the planner takes them where the kernels above would launch fewer
/// than kAttentionSplitBelowBlocks blocks.
constexpr int kAttentionSplitRows = 16;
/// Measured on the H200 (bench/NOTES.md): ViT-B/16 b1 (48 blocks) 12.7 ->
/// 10.2 us, GPT-2 b1 (24) 10.7 -> 9.0; BERT-base b8 (192) 10.1 -> 16.5.
constexpr int64_t kAttentionSplitBelowBlocks = 64;
TSL_PARAMS_HOST_DEVICE constexpr int attentionSplitKeys(int headDim) {
  return headDim <= 80 ? 32 : 16;
}
TSL_PARAMS_HOST_DEVICE constexpr int attentionSplitSharedBytes(int headDim) {
  return (kAttentionSplitRows + 2 * (kAttentionThreads / 32) * attentionSplitKeys(headDim)) *
         (headDim + 8) * 2;
}
/// The SIMT kernels: 16 query rows a block of 128 threads, head dims up to
/// 128.
constexpr int kAttentionSimtRows = 16;
constexpr int kAttentionSimtMaxDim = 128;

static_assert(sizeof(UnaryParams) == 32, "layout shared with the kernels");
static_assert(sizeof(ClipParams) == 40, "layout shared with the kernels");
static_assert(sizeof(BroadcastParams) == 272, "layout shared with the kernels");
static_assert(sizeof(AffineParams) == 152, "layout shared with the kernels");
static_assert(sizeof(TileParams) == 208, "layout shared with the kernels");
static_assert(sizeof(PadParams) == 280, "layout shared with the kernels");
static_assert(sizeof(Im2RowParams) == 72, "layout shared with the kernels");
static_assert(sizeof(CopyParams) == 8, "layout shared with the kernels");
static_assert(sizeof(ConcatParams) == 32, "layout shared with the kernels");
static_assert(sizeof(GatherParams) == 32, "layout shared with the kernels");
static_assert(sizeof(ReduceParams) == 280, "layout shared with the kernels");
static_assert(sizeof(AxisParams) == 32, "layout shared with the kernels");
static_assert(sizeof(ColumnParams) == 40, "layout shared with the kernels");
static_assert(sizeof(PoolParams) == 256, "layout shared with the kernels");
static_assert(sizeof(NormParams) == 40, "layout shared with the kernels");
static_assert(sizeof(BatchNormParams) == 32, "layout shared with the kernels");
static_assert(sizeof(LrnParams) == 56, "layout shared with the kernels");
static_assert(sizeof(ScanParams) == 40, "layout shared with the kernels");
static_assert(sizeof(TopKParams) == 40, "layout shared with the kernels");
static_assert(sizeof(NmsParams) == 72, "layout shared with the kernels");
static_assert(sizeof(GatherElementsParams) == 160, "layout shared with the kernels");
static_assert(sizeof(GatherNDParams) == 168, "layout shared with the kernels");
static_assert(sizeof(ScatterNDParams) == 160, "layout shared with the kernels");
static_assert(sizeof(TriluParams) == 40, "layout shared with the kernels");
static_assert(sizeof(AttentionParams) == 216, "layout shared with the kernels");

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELPARAMS_H
