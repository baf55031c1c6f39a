//===- StepPlannerReductions.cpp - Reductions, norms, pools, attention ----===//
//
// The planners of the ops that reduce: reductions, softmax and scans along an
// axis, the normalizations (row statistics in f32), pools, and attention
// (whose Tensor Core launches it sets beside the simt ones).
//
//===----------------------------------------------------------------------===//
#include "StepPlanner.h"

#include "tessel/attention.h"
#include "tessel/elementwise_math.h"
#include "tessel/window.h"

#include <limits>

namespace tessel::codegen::library {

// Reductions
//===----------------------------------------------------------------------===//

/// reduce_sum and reduce_mean of floats over one run of dims between kept
/// ones with the innermost kept, [outer, rows, inner] (a global average pool
/// of NHWC), by the columns kernels (Reduction.cuh): the rows split into
/// chunks until about kColumnBlocks blocks fill the GPU (each chunk at least
/// kColumnMinRows rows), the chunks' partial sums in the workspace and a
/// second launch summing them. A thread per result (the kernel below) left
/// most of the GPU idle and walked H*W rows alone: 3.3 of EfficientNet-B0's
/// 5.4 ms at batch 32 on the H100.
Launches StepPlanner::reduceColumns(const kernels::ReduceParams &r, const Dims &kept,
                                    const Dims &red, bool innermostReduced) {
  constexpr int64_t kColumnBlocks = 256, kColumnMinRows = 64, kLanes = 32;
  const std::string base = typed(step.name, in[0].dtype) + "_columns";
  if (innermostReduced || red.size() != 1 || kept.empty() || kept.size() > 2 ||
      KernelLibrary::familyOf(base) < 0)
    return std::nullopt;
  kernels::ColumnParams p{};
  p.outer = kept.size() == 2 ? kept[0] : 1;
  p.inner = kept.back();
  p.rows = r.count;
  const int64_t tiles = (p.outer * ((p.inner + kLanes - 1) / kLanes));
  // An empty result or an empty reduction (ONNX's *_empty_set) is the
  // thread kernel's, which writes the identity.
  if (tiles == 0 || p.rows == 0)
    return std::nullopt;
  // f16 with 16-byte rows of channels and at most 2304 rows: one launch, 16
  // bytes a thread (reduceColumnsVec), no partials. More rows keep the row
  // chunks below (EfficientNet-B0's 56 x 56 pools).
  if (in[0].dtype == DType::F16 && p.inner % 8 == 0 && p.rows <= kernels::kColumnVecMaxRows) {
    const std::string vec = base + "_vec";
    const int64_t blocks = p.outer * ((p.inner + kernels::kColumnVecChannels - 1) /
                                      kernels::kColumnVecChannels);
    p.chunk = p.rows;
    p.splits = 1;
    return single(vec, static_cast<uint32_t>(std::min(blocks, kMaxGrid)),
                  kernels::kColumnVecThreads,
                  {in[0].address(), out[0].address(), KernelArg::value(p)});
  }
  int64_t splits = 1;
  if (tiles < kColumnBlocks)
    splits = std::clamp<int64_t>((kColumnBlocks + tiles - 1) / tiles, 1,
                                 std::max<int64_t>(1, p.rows / kColumnMinRows));
  p.chunk = (p.rows + splits - 1) / splits;
  p.splits = static_cast<int32_t>((p.rows + p.chunk - 1) / p.chunk);
  Launch first = makeLaunch(base, static_cast<uint32_t>(std::min(tiles, kMaxGrid)),
                            kLanes * 8, {});
  first.grid[1] = static_cast<uint32_t>(p.splits);
  if (p.splits == 1) {
    first.args = {in[0].address(), out[0].address(), KernelArg::null(), KernelArg::value(p)};
    return std::vector<Launch>{std::move(first)};
  }
  const KernelArg partial = KernelArg::workspace(
      static_cast<uint64_t>(p.outer * p.splits * p.inner) * sizeof(double));
  first.args = {in[0].address(), out[0].address(), partial, KernelArg::value(p)};
  return std::vector<Launch>{
      std::move(first), makeLaunch(base + "_finish", gridFor(p.outer * p.inner, kBlock), kBlock,
                                   {partial, out[0].address(), KernelArg::value(p)})};
}

/// pool_fc of f16 NHWC with a multiple of 8 channels (PoolFcParams,
/// Reduction.cuh): blocks of 64 channels and a chunk of at most
/// kPoolFcMaxRows rows (8 a thread, loaded at once), as few chunks as that
/// allows: the kernel is a chain of memory round trips, and the last block
/// of an image reads every block's part, so more blocks cost there; the
/// blocks' parts of the products in the workspace, an arrival counter per
/// image.
Launches StepPlanner::poolFc() {
  if (in.size() != 2 && in.size() != 3)
    return std::nullopt;
  const Operand &x = in[0], &w = in[1], &y = out[0];
  const Operand *bias = in.size() == 3 ? &in[2] : nullptr;
  if (x.dtype != DType::F16 || w.dtype != DType::F16 || y.dtype != DType::F16 ||
      (bias && bias->dtype != DType::F16) || x.shape.size() < 3)
    return std::nullopt;
  kernels::PoolFcParams p{};
  p.outer = x.shape.front();
  p.channels = x.shape.back();
  p.outChannels = w.shape.front();
  p.rows = product(x.shape, 1, x.shape.size() - 1);
  if (p.channels % 8 != 0 || p.rows == 0 || p.outer == 0 || p.outer > kMaxGrid ||
      w.count() != p.outChannels * p.channels || y.count() != p.outer * p.outChannels ||
      (bias && bias->count() != p.outChannels))
    return std::nullopt;
  p.activation = elementwise::activationIndex(attrs.getString("activation").c_str());
  if (p.activation < 0)
    return std::nullopt;
  p.alpha = static_cast<float>(attrs.getFloat("alpha", 0.0));
  p.beta = static_cast<float>(attrs.getFloat("beta", 0.0));
  const int64_t tiles = (p.channels + kernels::kPoolFcChannels - 1) / kernels::kPoolFcChannels;
  const int64_t splits = (p.rows + kernels::kPoolFcMaxRows - 1) / kernels::kPoolFcMaxRows;
  p.chunk = (p.rows + splits - 1) / splits;
  p.splits = static_cast<int32_t>((p.rows + p.chunk - 1) / p.chunk);
  p.tiles = static_cast<int32_t>(tiles);
  const int64_t blocks = tiles * p.splits;
  if (blocks > kMaxGrid)
    return std::nullopt;
  Launches launches =
      single("tsl_pool_fc_f16", static_cast<uint32_t>(blocks), kernels::kPoolFcThreads,
             {x.address(), w.address(), bias ? bias->address() : KernelArg::null(), y.address(),
              KernelArg::workspace(static_cast<uint64_t>(p.outer * blocks * p.outChannels) *
                                   sizeof(float)),
              KernelArg::counters(static_cast<uint64_t>(p.outer) * sizeof(uint32_t)),
              KernelArg::value(p)});
  if (launches)
    launches->front().grid[1] = static_cast<uint32_t>(p.outer);
  return launches;
}

Launches StepPlanner::reduce() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype)
    return std::nullopt;
  const Dims &shape = in[0].shape;
  const size_t rank = shape.size();
  std::vector<bool> reduced(rank, false);
  const std::vector<int64_t> &axes = attrs.getInts("axes");
  if (axes.empty())
    std::fill(reduced.begin(), reduced.end(), true);
  for (int64_t a : axes) {
    const int64_t axis = a < 0 ? a + static_cast<int64_t>(rank) : a;
    if (axis < 0 || axis >= static_cast<int64_t>(rank))
      return std::nullopt;
    reduced[axis] = true;
  }
  // Runs of adjacent dims of one kind merge (the input is dense); extent-1
  // dims go. The result is the kept dims in order.
  const Dims strides = rowMajorStrides(shape);
  Dims kept, keptStrides, red, redStrides;
  int lastKind = -1; // 0 kept, 1 reduced
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    const int kind = reduced[d] ? 1 : 0;
    Dims &dims = kind ? red : kept, &dimStrides = kind ? redStrides : keptStrides;
    if (kind == lastKind) {
      dims.back() *= shape[d];
      dimStrides.back() = strides[d];
    } else {
      dims.push_back(shape[d]);
      dimStrides.push_back(strides[d]);
    }
    lastKind = kind;
  }
  const bool innermostReduced = lastKind == 1;
  if (red.empty()) {
    red.push_back(1);
    redStrides.push_back(0);
  }
  if (kept.size() > static_cast<size_t>(kMaxRank) || red.size() > static_cast<size_t>(kMaxRank))
    return std::nullopt;
  kernels::ReduceParams p{};
  p.numOut = product(kept);
  p.count = product(red);
  if (p.numOut != out[0].count())
    return std::nullopt;
  p.keptRank = static_cast<int32_t>(kept.size());
  p.reducedRank = static_cast<int32_t>(red.size());
  copyDims(kept, p.keptShape);
  copyDims(keptStrides, p.keptStride);
  copyDims(red, p.reducedShape);
  copyDims(redStrides, p.reducedStride);
  if (Launches columns = reduceColumns(p, kept, red, innermostReduced))
    return columns;
  // A thread per result walks its elements in the CPU's order; it reads
  // coalesced across threads when the innermost dim is kept, and needs many
  // results to fill the GPU. Otherwise a block per result.
  const bool perThread = !innermostReduced && p.numOut >= 2048;
  const std::string kernel = typed(step.name, in[0].dtype) + (perThread ? "_thread" : "_block");
  std::vector<KernelArg> args{in[0].address(), out[0].address(), KernelArg::value(p)};
  if (perThread)
    return single(kernel, gridFor(p.numOut, kBlock), kBlock, std::move(args));
  return single(kernel, gridFor(p.numOut, 1), reductionBlock(p.count), std::move(args));
}

namespace {
/// [outer, length, inner] around `axis`, or false if it is out of range.
bool splitAxis(const Dims &shape, int64_t axis, kernels::AxisParams &p) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0)
    axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank)
    return false;
  p.outer = product(shape, 0, axis);
  p.length = shape[axis];
  p.inner = product(shape, axis + 1);
  return true;
}
} // namespace

Launches StepPlanner::softmax() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].shape != out[0].shape)
    return std::nullopt;
  kernels::AxisParams p{};
  if (!splitAxis(in[0].shape, attrs.getInt("axis", -1), p))
    return std::nullopt;
  std::vector<KernelArg> args{in[0].address(), out[0].address(), KernelArg::value(p)};
  // A block per row when the axis is innermost (contiguous rows); else a
  // thread per row, reading coalesced across threads.
  if (p.inner == 1)
    return single(typed(step.name, in[0].dtype) + "_block", gridFor(p.outer, 1),
                  reductionBlock(p.length), std::move(args));
  return single(typed(step.name, in[0].dtype) + "_thread", gridFor(p.outer * p.inner, kBlock),
                kBlock, std::move(args));
}

Launches StepPlanner::argReduce() {
  if (in.size() != 1 || out[0].dtype != DType::I64)
    return std::nullopt;
  kernels::AxisParams p{};
  if (!splitAxis(in[0].shape, attrs.getInt("axis", 0), p))
    return std::nullopt;
  if (out[0].count() != p.outer * p.inner || (p.length == 0 && p.outer * p.inner != 0))
    return std::nullopt;
  p.last = attrs.getInt("select_last_index", 0) != 0;
  return single(typed(step.name, in[0].dtype), gridFor(p.outer * p.inner, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

Launches StepPlanner::topK() {
  if (in.size() != 1 || out.size() != 2 || out[0].dtype != in[0].dtype ||
      out[1].dtype != DType::I64 || out[0].shape != out[1].shape)
    return std::nullopt;
  kernels::AxisParams axis{};
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  int64_t a = attrs.getInt("axis", -1);
  a = a < 0 ? a + rank : a;
  if (!splitAxis(in[0].shape, a, axis) || out[0].shape.size() != in[0].shape.size())
    return std::nullopt;
  kernels::TopKParams p{axis.outer, axis.length, axis.inner, out[0].shape[a], 0, 0};
  if (p.k > p.length)
    return std::nullopt;
  p.largest = attrs.getInt("largest", 1) != 0;
  // A thread per line along the axis, as the CPU walks them.
  return single(typed("top_k", in[0].dtype), gridFor(p.outer * p.inner, kBlock), kBlock,
                {in[0].address(), out[0].address(), out[1].address(), KernelArg::value(p)});
}

Launches StepPlanner::scan() {
  if (in.size() != 1 || in[0].dtype != out[0].dtype || in[0].shape != out[0].shape)
    return std::nullopt;
  kernels::AxisParams axis{};
  if (!splitAxis(in[0].shape, attrs.getInt("axis", 0), axis))
    return std::nullopt;
  kernels::ScanParams p{axis.outer, axis.length, axis.inner};
  p.exclusive = attrs.getInt("exclusive", 0) != 0;
  p.reverse = attrs.getInt("reverse", 0) != 0;
  p.product = step.name == "cumprod";
  // A thread per line along the axis, in the CPU's order.
  return single(typed("scan", in[0].dtype), gridFor(p.outer * p.inner, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

namespace {
bool isF32OrF16(DType dtype) { return dtype == DType::F32 || dtype == DType::F16; }

/// Whether `param` broadcasts (numpy, right-aligned) to `shape`.
bool broadcastsTo(const Dims &param, const Dims &shape) {
  if (param.size() > shape.size())
    return false;
  const size_t lead = shape.size() - param.size();
  for (size_t d = 0; d < param.size(); ++d)
    if (param[d] != 1 && param[d] != shape[lead + d])
      return false;
  return true;
}
} // namespace

/// The launch of layer_norm's or instance_norm's row kernel for rows of
/// p.length elements (Normalization.cuh): a warp per row for rows a warp
/// holds in registers, a block per row for rows a block of at most
/// kNormMaxBlock threads holds, else a block per row that reads the row in
/// each pass; 16-byte loads (_vec) when every row starts at a multiple of 16
/// bytes.
Launches StepPlanner::rowNorm(llvm::StringRef op, const kernels::NormParams &p,
                              std::vector<KernelArg> args) {
  const int64_t bytes = static_cast<int64_t>(in[0].elementBytes());
  const int64_t lanes = (p.length * bytes) % 16 == 0 ? 16 / bytes : 1;
  const int64_t held =
      lanes == 1 ? kernels::kNormHeldElements : kernels::kNormHeldFloats / lanes;
  const int64_t vectors = p.length / lanes;
  std::string kernel = typed(op, in[0].dtype);
  uint32_t grid, block;
  if (vectors <= 32 * held) {
    kernel += "_warp";
    block = kBlock;
    grid = gridFor(p.rows, kBlock / 32);
  } else if (vectors <= kernels::kNormMaxBlock * held) {
    kernel += "_block";
    block = static_cast<uint32_t>((vectors + 32 * held - 1) / (32 * held) * 32);
    grid = gridFor(p.rows, 1);
  } else {
    kernel += "_stream";
    block = kernels::kNormMaxBlock;
    grid = gridFor(p.rows, 1);
  }
  if (lanes > 1)
    kernel += "_vec";
  args.push_back(KernelArg::value(p));
  return single(kernel, grid, block, std::move(args));
}

Launches StepPlanner::layerNorm() {
  if (in.size() != 2 && in.size() != 3)
    return std::nullopt;
  const Operand &x = in[0], &scale = in[1], &y = out[0];
  const Operand *bias = in.size() == 3 ? &in[2] : nullptr;
  if (!isF32OrF16(x.dtype) || y.dtype != x.dtype || y.shape != x.shape ||
      scale.dtype != x.dtype || (bias && bias->dtype != x.dtype))
    return std::nullopt;
  // The CPU kernel's axis: the normalized dims are [axis, rank).
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = attrs.getInt("axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return std::nullopt;
  const Dims normalized(x.shape.begin() + axis, x.shape.end());
  kernels::NormParams p{};
  p.rows = product(x.shape, 0, static_cast<size_t>(axis));
  p.length = product(normalized);
  p.epsilon = static_cast<float>(attrs.getFloat("epsilon", 1e-5));
  // Scale and bias as the kernel reads them: the normalized shape (step 1)
  // or one element (step 0). Other broadcasts run on the CPU tier, and what
  // does not broadcast is the CPU kernel's error.
  auto stepOf = [&](const Operand &param) -> std::optional<int32_t> {
    if (!broadcastsTo(param.shape, normalized))
      return std::nullopt;
    if (param.count() == p.length)
      return 1;
    if (param.count() == 1)
      return 0;
    return std::nullopt;
  };
  std::optional<int32_t> scaleStep = stepOf(scale), biasStep = bias ? stepOf(*bias) : 0;
  if (!scaleStep || !biasStep)
    return std::nullopt;
  p.scaleStep = *scaleStep;
  p.biasStep = *biasStep;
  return rowNorm("layer_norm", p,
                 {x.address(), scale.address(), bias ? bias->address() : KernelArg::null(),
                  y.address()});
}

Launches StepPlanner::instanceNorm() {
  if (in.size() != 3)
    return std::nullopt;
  const Operand &x = in[0], &scale = in[1], &bias = in[2], &y = out[0];
  if (!isF32OrF16(x.dtype) || y.dtype != x.dtype || y.shape != x.shape || x.shape.size() < 2)
    return std::nullopt;
  const int64_t channels = x.shape[1];
  for (const Operand *param : {&scale, &bias})
    if (param->dtype != x.dtype || param->count() != channels)
      return std::nullopt;
  kernels::NormParams p{};
  p.rows = x.shape[0] * channels;
  p.length = product(x.shape, 2);
  p.channels = channels;
  p.epsilon = static_cast<float>(attrs.getFloat("epsilon", 1e-5));
  return rowNorm("instance_norm", p,
                 {x.address(), scale.address(), bias.address(), y.address()});
}

Launches StepPlanner::batchNorm() {
  if (in.size() != 5)
    return std::nullopt;
  const Operand &x = in[0], &y = out[0];
  if (!isF32OrF16(x.dtype) || y.dtype != x.dtype || y.shape != x.shape || x.shape.size() < 2)
    return std::nullopt;
  const int64_t channels = x.shape[1];
  for (size_t i = 1; i < 5; ++i)
    if (in[i].dtype != x.dtype || in[i].count() != channels)
      return std::nullopt;
  kernels::BatchNormParams p{};
  p.n = x.count();
  p.channels = channels;
  p.inner = product(x.shape, 2);
  p.epsilon = attrs.getFloat("epsilon", 1e-5);
  // Two launches: the channels' factors into the workspace, then a thread
  // per element, or per 16 bytes of one channel's elements (_vec).
  const KernelArg factors =
      KernelArg::workspace(std::max<uint64_t>(16, static_cast<uint64_t>(channels) * 4));
  const int64_t lanes = 16 / static_cast<int64_t>(x.elementBytes());
  const bool vec = p.inner % lanes == 0;
  const std::string factor = typed("batch_norm_factor", x.dtype);
  const std::string apply = typed("batch_norm", x.dtype) + (vec ? "_vec" : "");
  if (KernelLibrary::familyOf(factor) < 0 || KernelLibrary::familyOf(apply) < 0)
    return std::nullopt;
  const Operand &scale = in[1], &bias = in[2], &mean = in[3], &variance = in[4];
  return std::vector<Launch>{
      makeLaunch(factor, gridFor(channels, kBlock), kBlock,
                 {scale.address(), variance.address(), factors, KernelArg::value(p)}),
      makeLaunch(apply, gridFor(vec ? p.n / lanes : p.n, kBlock), kBlock,
                 {x.address(), bias.address(), mean.address(), factors, y.address(),
                  KernelArg::value(p)})};
}

Launches StepPlanner::lrn() {
  if (in.size() != 1 || !isF32OrF16(in[0].dtype) || out[0].dtype != in[0].dtype ||
      out[0].shape != in[0].shape || in[0].shape.size() < 2)
    return std::nullopt;
  const int64_t size = attrs.getInt("size", 1);
  if (size < 1)
    return std::nullopt;
  const Dims &shape = in[0].shape;
  kernels::LrnParams p{};
  p.n = in[0].count();
  p.channels = shape[1];
  p.inner = product(shape, 2);
  p.before = (size - 1) / 2;
  p.after = size - 1 - p.before;
  // alpha / size in double, as the CPU kernel computes it, then in f32.
  p.coeff = static_cast<float>(attrs.getFloat("alpha", 1e-4) / static_cast<double>(size));
  p.beta = static_cast<float>(attrs.getFloat("beta", 0.75));
  p.bias = static_cast<float>(attrs.getFloat("bias", 1.0));
  return single(typed("lrn", in[0].dtype), gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

Launches StepPlanner::pool() {
  // max_pool_indices: f32 or f16 in, i64 indices out.
  const bool indices = step.name == "max_pool_indices";
  if (in.size() != 1 ||
      (indices ? !isF32OrF16(in[0].dtype) || out[0].dtype != DType::I64
               : in[0].dtype != out[0].dtype))
    return std::nullopt;
  // The CPU kernel's own reading of the layout and window (tessel/window.h):
  // where the CPU kernel would fail, there is no GPU kernel either.
  cpu::PoolGeometry g;
  std::string error;
  if (!cpu::readPoolGeometry(attrs, in[0].shape, out[0].shape, g, error))
    return std::nullopt;
  const size_t ns = g.inSpatial.size();
  if (ns > kernels::kMaxPoolDims)
    return std::nullopt;
  kernels::PoolParams p{};
  p.batch = g.batch;
  p.channels = g.channels;
  p.spatialRank = static_cast<int32_t>(ns);
  p.includePad = attrs.getInt("count_include_pad", 0) != 0;
  p.columnMajor = attrs.getInt("storage_order", 0) == 1;
  // Spatial dims right-aligned; unused leading slots are 1-wide windows.
  const size_t lead = kernels::kMaxPoolDims - ns;
  for (size_t s = 0; s < static_cast<size_t>(kernels::kMaxPoolDims); ++s) {
    p.inSpatial[s] = p.outSpatial[s] = p.kernel[s] = p.stride[s] = p.dilation[s] = 1;
    p.padBegin[s] = p.padEnd[s] = 0;
    if (s < lead)
      continue;
    const size_t d = s - lead;
    p.inSpatial[s] = g.inSpatial[d];
    p.outSpatial[s] = g.outSpatial[d];
    p.kernel[s] = g.kernel[d];
    p.stride[s] = g.window.strides[d];
    p.dilation[s] = g.window.dilations[d];
    p.padBegin[s] = g.window.padBegin[d];
    p.padEnd[s] = g.window.padEnd[d];
  }
  p.inBatch = g.inBatch;
  p.outBatch = g.outBatch;
  p.inC = g.inC;
  p.inS = g.inS;
  p.outC = g.outC;
  p.outS = g.outS;
  p.n = p.batch * p.channels * g.outSpatial.product();
  std::string name = typed(step.name, in[0].dtype);
  // NHWC float channels in 16-byte groups: a thread per group (Pool.cuh,
  // Lanes), which poolWindow sees as one channel at stride `lanes`.
  const int64_t lanes = 16 / static_cast<int64_t>(in[0].elementBytes());
  const bool floats = in[0].dtype == DType::F16 || in[0].dtype == DType::F32;
  if (g.nhwc && floats && !indices && p.channels % lanes == 0) {
    name += "_vec";
    p.channels /= lanes;
    p.inC = lanes;
    p.n /= lanes;
  }
  return single(name, gridFor(p.n, kBlock), kBlock,
                {in[0].address(), out[0].address(), KernelArg::value(p)});
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// attention (Attention.cuh): the simt kernel for f32 and f16 with head dims
/// up to 128, and on f16 with head dims that are multiples of 8 (16-byte
/// rows) the Tensor Core kernel of the smallest padded head dim that holds
/// them, as `tensorCore` (its split-keys form where the grid is small).
Launches StepPlanner::attention() {
  if (in.size() != 3 && in.size() != 4)
    return std::nullopt;
  const Operand &q = in[0], &k = in[1], &v = in[2], &y = out[0];
  const Operand *mask = in.size() == 4 ? &in[3] : nullptr;
  if (!isF32OrF16(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype || y.dtype != q.dtype)
    return std::nullopt;
  // The CPU kernel's own reading of the problem and the views
  // (tessel/attention.h): where it would fail, no GPU kernel.
  cpu::AttentionGeometry g;
  if (!cpu::readAttention(attrs.getInts("dims"), attrs.getInts("views"), q.shape, k.shape,
                          v.shape, y.shape, mask ? &mask->shape : nullptr, g)
           .empty())
    return std::nullopt;
  kernels::AttentionParams p{};
  p.batches = g.batch * g.heads;
  p.heads = g.heads;
  p.sq = g.sq;
  p.sk = g.sk;
  p.d = static_cast<int32_t>(g.d);
  p.dv = static_cast<int32_t>(g.dv);
  p.scale = static_cast<float>(attrs.getFloat("scale", 1.0));
  p.causal = attrs.getInt("causal", 0) != 0;
  auto view = [](const cpu::AttentionView &w) {
    return kernels::AttentionView{w.offset, w.batch, w.head, w.row};
  };
  p.q = view(g.q);
  p.k = view(g.k);
  p.v = view(g.v);
  p.out = view(g.out);
  if (p.d > kernels::kAttentionSimtMaxDim || p.dv > kernels::kAttentionSimtMaxDim ||
      p.batches > std::numeric_limits<int32_t>::max() || p.sq == 0 || p.sk == 0)
    return std::nullopt;
  p.maskB = g.maskB;
  p.maskH = g.maskH;
  p.maskI = g.maskI;
  p.maskJ = g.maskJ;
  if (mask) {
    switch (mask->dtype) {
    case DType::F32: p.maskKind = 1; break;
    case DType::F16: p.maskKind = 2; break;
    case DType::Bool: p.maskKind = 3; break;
    default: return std::nullopt;
    }
  }
  const std::vector<KernelArg> args = {q.address(), k.address(), v.address(),
                                       mask ? mask->address() : KernelArg::null(), y.address(),
                                       KernelArg::value(p)};
  auto launch = [&](const std::string &kernel, int64_t rows, uint32_t sharedBytes) -> Launches {
    const int64_t tiles = (p.sq + rows - 1) / rows;
    if (KernelLibrary::familyOf(kernel) < 0 || tiles > kMaxGrid)
      return std::nullopt;
    Launch l = makeLaunch(kernel, static_cast<uint32_t>(p.batches), kernels::kAttentionThreads,
                          args);
    l.grid[1] = static_cast<uint32_t>(tiles);
    l.sharedBytes = sharedBytes;
    return std::vector<Launch>{std::move(l)};
  };
  // The Tensor Core kernel moves 16-byte runs of rows and stores pairs:
  // every view's offset and strides whole runs of 8 halves.
  if (q.dtype == DType::F16 && p.d % 8 == 0 && p.dv % 8 == 0 && g.q.wholeRuns() &&
      g.k.wholeRuns() && g.v.wholeRuns() && g.out.wholeRuns())
    for (int headDim : kernels::kAttentionTcHeadDims)
      if (std::max(p.d, p.dv) <= headDim) {
        // Too few blocks of 64 query rows for the SMs (batch 1): the
        // split-keys kernel, 16 rows a block, its warps sharing the keys.
        const int64_t blocks =
            p.batches * ((p.sq + kernels::kAttentionTcRows - 1) / kernels::kAttentionTcRows);
        const std::string hd = std::to_string(headDim);
        tensorCore =
            blocks < kernels::kAttentionSplitBelowBlocks
                ? launch("tsl_attention_f16_tcsplit_d" + hd, kernels::kAttentionSplitRows,
                         static_cast<uint32_t>(kernels::attentionSplitSharedBytes(headDim)))
                : launch("tsl_attention_f16_tc_d" + hd, kernels::kAttentionTcRows,
                         static_cast<uint32_t>(kernels::attentionTcSharedBytes(headDim)));
        break;
      }
  return launch(typed("attention", q.dtype) + "_simt", kernels::kAttentionSimtRows, 0);
}

Launches StepPlanner::nms() {
  if (in.size() != 2 || out.size() != 2 || !isF32OrF16(in[0].dtype) ||
      in[1].dtype != in[0].dtype || out[0].dtype != DType::I64 || out[1].dtype != DType::I64 ||
      out[1].count() != 1)
    return std::nullopt;
  const Dims &boxes = in[0].shape, &scores = in[1].shape;
  if (boxes.size() != 3 || boxes[2] != 4 || scores.size() != 3 || scores[0] != boxes[0] ||
      scores[2] != boxes[1])
    return std::nullopt;
  kernels::NmsParams p{};
  p.batches = boxes[0];
  p.classes = scores[1];
  p.boxes = boxes[1];
  p.maxOutput = std::min(attrs.getInt("max_output_boxes_per_class", 0), p.boxes);
  p.bound = p.batches * p.classes * p.maxOutput;
  if (p.maxOutput < 0 || out[0].shape != Dims{p.bound, 3})
    return std::nullopt;
  p.iouThreshold = static_cast<float>(attrs.getFloat("iou_threshold", 0));
  p.hasScoreThreshold = attrs.has("score_threshold");
  p.scoreThreshold = static_cast<float>(attrs.getFloat("score_threshold", 0));
  p.centerPoint = attrs.getInt("center_point_box", 0) != 0;
  // The workspace: a byte per box per (batch, class), the kept boxes, the
  // counts (Detection.cuh).
  const int64_t lines = p.batches * p.classes;
  p.listOffset = (lines * p.boxes + 7) / 8 * 8;
  p.countOffset = p.listOffset + lines * p.maxOutput * 8;
  const KernelArg work =
      KernelArg::workspace(std::max<uint64_t>(16, static_cast<uint64_t>(p.countOffset + lines * 8)));
  const std::string select = typed("nms_select", in[0].dtype), compact = "tsl_nms_compact";
  if (KernelLibrary::familyOf(select) < 0 || KernelLibrary::familyOf(compact) < 0)
    return std::nullopt;
  return std::vector<Launch>{
      makeLaunch(select, static_cast<uint32_t>(std::max<int64_t>(1, lines)), kBlock,
                 {in[0].address(), in[1].address(), work, KernelArg::value(p)}),
      makeLaunch(compact, 1, kBlock,
                 {work, out[0].address(), out[1].address(), KernelArg::value(p)})};
}

} // namespace tessel::codegen::library
