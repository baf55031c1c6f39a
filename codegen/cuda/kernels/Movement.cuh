//===- Movement.cuh - copy, transpose/slice/expand, tile, pad, concat, gather -===//
//
// The data movement ops of runtime/kernels/src/movement.cpp. They move elements
// by their bits, so each is instantiated per element width (W, an unsigned
// type of 1, 2, 4 or 8 bytes; copy, concat and gather also of 16 bytes when
// the planner finds every size and offset a multiple of it), and serve every
// dtype. Each thread writes one result element from elements it reads
// first; none of these may write over its input except copy onto itself.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_MOVEMENT_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_MOVEMENT_CUH

#include "Common.cuh"

namespace tessel::kernels {

/// identity, reshape, the writer's output copies: bytes, 16 at a time (the
/// simt tier's pointers are 16-byte aligned); nothing when the planner put
/// the result on the operand itself.
__device__ __forceinline__ void copyBytes(const uint8_t *x, uint8_t *y, const CopyParams &p) {
  if (x == y)
    return;
  const int64_t words = static_cast<int64_t>(p.bytes / 16);
  const uint4 *xs = reinterpret_cast<const uint4 *>(x);
  uint4 *ys = reinterpret_cast<uint4 *>(y);
  for (int64_t i = gridStart(); i < words; i += gridStep())
    ys[i] = xs[i];
  const int64_t tail = static_cast<int64_t>(p.bytes) - words * 16;
  if (gridStart() < tail)
    y[words * 16 + gridStart()] = x[words * 16 + gridStart()];
}

template <typename W>
__device__ __forceinline__ void affineCopy(const W *x, W *y, const AffineParams &p) {
  forEachIndex(p.n, [&](auto i) {
    y[i] = x[p.base + stridedOffset(i, p.rank, p.shape, p.stride)];
  });
}

template <typename W>
__device__ __forceinline__ void tile(const W *x, W *y, const TileParams &p) {
  forEachIndex(p.n, [&](auto i) {
    uint64_t rest = i;
    int64_t offset = 0;
#pragma unroll 1
    for (int d = p.rank - 1; d >= 0; --d) {
      const uint64_t extent = static_cast<uint64_t>(p.shape[d]);
      const uint64_t q = divide(rest, extent);
      const uint64_t c = rest - q * extent, inExtent = static_cast<uint64_t>(p.inShape[d]);
      offset += static_cast<int64_t>(c - divide(c, inExtent) * inExtent) * p.inStride[d];
      rest = q;
    }
    y[i] = x[offset];
  });
}

/// The input index that result index `i` reads along one dim, or -1 for the
/// fill value (mode 0 constant, 1 reflect, 2 edge).
__device__ __forceinline__ int64_t padSource(int64_t i, int64_t begin, int64_t extent,
                                             int mode) {
  int64_t j = i - begin;
  if (j >= 0 && j < extent)
    return j;
  if (mode == 0)
    return -1;
  if (mode == 2)
    return j < 0 ? 0 : extent - 1;
  if (extent == 1)
    return 0;
  // Mirror without repeating the edge, periodically for wide pads.
  const int64_t period = 2 * (extent - 1);
  j %= period;
  if (j < 0)
    j += period;
  return j < extent ? j : period - j;
}

/// pad: a thread writes a run of 16 bytes of consecutive results along the
/// last dim (fewer at the end of a row), so the leading dims' index
/// arithmetic is paid once per run; a run wholly inside the input is one
/// 16-byte store where the last dim is a multiple of it (then every run
/// starts 16-byte aligned), else the run goes element by element.
/// p.n is the result's element count, p.rank at least 1.
template <typename W>
__device__ __forceinline__ void pad(const W *x, W *y, const PadParams &p) {
  constexpr int64_t kRun = 16 / sizeof(W);
  const W fill = static_cast<W>(p.fill);
  const int last = p.rank - 1;
  const int64_t width = p.shape[last];
  if (p.n == 0)
    return;
  const uint64_t runsPerRow = static_cast<uint64_t>((width + kRun - 1) / kRun);
  const uint64_t rows = divide(static_cast<uint64_t>(p.n), static_cast<uint64_t>(width));
  forEachIndex(static_cast<int64_t>(rows * runsPerRow), [&](auto i) {
    const uint64_t row = divide(i, runsPerRow);
    const int64_t first = static_cast<int64_t>(i - row * runsPerRow) * kRun;
    uint64_t rest = row;
    int64_t offset = 0;
    bool filled = false;
#pragma unroll 1
    for (int d = last - 1; d >= 0; --d) {
      const uint64_t extent = static_cast<uint64_t>(p.shape[d]);
      const uint64_t q = divide(rest, extent);
      const int64_t source =
          padSource(static_cast<int64_t>(rest - q * extent), p.begin[d], p.inShape[d], p.mode);
      filled = filled || source < 0;
      offset += source * p.inStride[d];
      rest = q;
    }
    W *out = y + static_cast<int64_t>(row) * width + first;
    const int64_t start = first - p.begin[last];
    if (!filled && width % kRun == 0 && start >= 0 && start + kRun <= p.inShape[last]) {
      // Inside the input along the last dim too: kRun loads, one store.
      union {
        W element[kRun];
        uint4 word;
      } run;
#pragma unroll
      for (int64_t j = 0; j < kRun; ++j)
        run.element[j] = x[offset + (start + j) * p.inStride[last]];
      *reinterpret_cast<uint4 *>(out) = run.word;
      return;
    }
    const int64_t count = min(kRun, width - first);
#pragma unroll 1
    for (int64_t j = 0; j < count; ++j) {
      const int64_t source = padSource(first + j, p.begin[last], p.inShape[last], p.mode);
      out[j] = filled || source < 0 ? fill : x[offset + source * p.inStride[last]];
    }
  });
}

/// im2row: a thread writes a run of 16 bytes of a result position's
/// channels (one 16-byte store where the depth is a multiple of it): tap s,
/// channel c of each element counted up from the run's first, zero outside
/// the input's columns and past kernel x channels.
template <typename W>
__device__ __forceinline__ void im2row(const W *x, W *y, const Im2RowParams &p) {
  constexpr int64_t kRun = 16 / sizeof(W);
  const uint64_t runs = static_cast<uint64_t>((p.depth + kRun - 1) / kRun);
  const uint64_t outWidth = static_cast<uint64_t>(p.outWidth);
  forEachIndex(p.rows * p.outWidth * static_cast<int64_t>(runs), [&](auto i) {
    const uint64_t position = divide(i, runs);
    const int64_t first = static_cast<int64_t>(i - position * runs) * kRun;
    const uint64_t row = divide(position, outWidth);
    const int64_t o = static_cast<int64_t>(position - row * outWidth);
    const W *source = x + static_cast<int64_t>(row) * p.width * p.channels;
    const int64_t s0 = static_cast<int64_t>(
        divide(static_cast<uint64_t>(first), static_cast<uint64_t>(p.channels)));
    int64_t s = s0, c = first - s0 * p.channels;
    union {
      W element[kRun];
      uint4 word;
    } run;
#pragma unroll
    for (int64_t j = 0; j < kRun; ++j) {
      const int64_t column = o * p.stride + s * p.dilation - p.pad;
      const bool inside = s < p.kernel && column >= 0 && column < p.width;
      run.element[j] = inside ? source[column * p.channels + c] : W(0);
      if (++c == p.channels) {
        c = 0;
        ++s;
      }
    }
    W *out = y + static_cast<int64_t>(position) * p.depth + first;
    if (p.depth % kRun == 0) {
      *reinterpret_cast<uint4 *>(out) = run.word;
    } else {
#pragma unroll
      for (int64_t j = 0; j < kRun; ++j)
        if (first + j < p.depth)
          out[j] = run.element[j];
    }
  });
}

/// im2row, a block per input row (dilation 1; StepPlanner::im2row launches
/// it where the row and its padding fit kIm2RowRowBytes): the row staged in
/// shared memory once (16-byte loads where rows are whole 16-byte runs),
/// zeros about it, so that result position o's kernel x channels taps are
/// contiguous there from column o * stride - pad on; then each thread
/// writes runs of 16 bytes of the row's result, zero past the taps. No
/// division per element, unlike im2row above (instruction-bound on
/// ResNet-50's stem: bench/NOTES.md (26)).
template <typename W>
__device__ __forceinline__ void im2rowRows(const W *x, W *y, const Im2RowParams &p) {
  constexpr int kRun = 16 / sizeof(W);
  __shared__ __align__(16) unsigned char bytes[kIm2RowRowBytes];
  W *staged = reinterpret_cast<W *>(bytes);
  const int channels = static_cast<int>(p.channels), inner = static_cast<int>(p.width) * channels;
  const int lead = static_cast<int>(p.pad) * channels;
  // The row's first element 16-byte aligned, the pad's zeros before it.
  const int at = (lead + kRun - 1) / kRun * kRun, first = at - lead;
  // Columns read: up to the last position's last tap.
  const int reach = static_cast<int>((p.outWidth - 1) * p.stride + p.kernel - p.pad) * channels;
  const int end = at + max(inner, reach);
  const int taps = static_cast<int>(p.kernel) * channels, depth = static_cast<int>(p.depth);
  const int runs = (depth + kRun - 1) / kRun, total = static_cast<int>(p.outWidth) * runs;
  const int stride = static_cast<int>(p.stride) * channels;
  const bool wholeRuns = inner % kRun == 0;
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const W *source = x + r * inner;
    for (int i = threadIdx.x; i < lead; i += blockDim.x)
      staged[first + i] = W(0);
    for (int i = at + inner + threadIdx.x; i < end; i += blockDim.x)
      staged[i] = W(0);
    if (wholeRuns) {
      for (int i = threadIdx.x; i < inner / kRun; i += blockDim.x)
        reinterpret_cast<uint4 *>(staged + at)[i] = reinterpret_cast<const uint4 *>(source)[i];
    } else {
      for (int i = threadIdx.x; i < inner; i += blockDim.x)
        staged[at + i] = source[i];
    }
    __syncthreads();
    W *out = y + r * p.outWidth * depth;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int position = i / runs, e0 = (i - position * runs) * kRun;
      const W *window = staged + first + position * stride;
      union {
        W element[kRun];
        uint4 word;
      } run;
#pragma unroll
      for (int j = 0; j < kRun; ++j)
        run.element[j] = e0 + j < taps ? window[e0 + j] : W(0);
      W *o = out + position * depth + e0;
      if (depth % kRun == 0) {
        *reinterpret_cast<uint4 *>(o) = run.word;
      } else {
#pragma unroll
        for (int j = 0; j < kRun; ++j)
          if (e0 + j < depth)
            o[j] = run.element[j];
      }
    }
    __syncthreads(); // the next row's staging overwrites this one's
  }
}

/// One concat operand's rows into the result.
template <typename W>
__device__ __forceinline__ void concatPart(const W *x, W *y, const ConcatParams &p) {
  forEachIndex(p.rows * p.chunk, [&](auto i) {
    const uint64_t chunk = static_cast<uint64_t>(p.chunk);
    const uint64_t row = divide(i, chunk);
    const int64_t column = static_cast<int64_t>(i - row * chunk);
    y[p.dstOffset + static_cast<int64_t>(row) * p.dstRow + column] = x[i];
  });
}

/// gather; an index outside [-extent, extent) (which the CPU tier reports as
/// an error) yields zeros rather than a read out of bounds.
template <typename W, typename Index>
__device__ __forceinline__ void gather(const W *x, const Index *indices, W *y,
                                       const GatherParams &p) {
  forEachIndex(p.outer * p.count * p.inner, [&](auto i) {
    const uint64_t inner = static_cast<uint64_t>(p.inner), count = static_cast<uint64_t>(p.count);
    const uint64_t t = divide(i, inner);
    const uint64_t o = divide(t, count);
    const uint64_t j = t - o * count;
    const int64_t column = static_cast<int64_t>(i - t * inner);
    int64_t v = static_cast<int64_t>(indices[j]);
    if (v < 0)
      v += p.extent;
    if (v < 0 || v >= p.extent)
      y[i] = W{};
    else
      y[i] = x[(static_cast<int64_t>(o) * p.extent + v) * p.inner + column];
  });
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_MOVEMENT_CUH
