//===- Index.cuh - gather_elements, gather_nd, scatter_nd, trilu ----------===//
//
// The selections by index or position of runtime/kernels/src/gather.cpp
// (gather_elements, gather_nd, scatter_nd) and movement.cpp (trilu): a
// thread per result element (gather_nd: per word of a slice), which reads
// the one element it copies before writing it; scatter_nd writes into a
// copy of the data (the planner's first launch), a thread per word of the
// updates, or, with a reduction, a thread per element of the slice that
// combines every tuple's update in the CPU kernel's order. They move elements by their bits, so
// each is instantiated per width (W, an unsigned type of 1, 2, 4 or 8 bytes;
// gather_nd also of 16 bytes when its slices are whole 16-byte words). As
// in gather (Movement.cuh), an index outside [-extent, extent), which the
// CPU tier reports as an error, yields zeros rather than a read out of
// bounds.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_CODEGEN_CUDA_KERNELS_INDEX_CUH
#define TESSEL_CODEGEN_CUDA_KERNELS_INDEX_CUH

#include "Common.cuh"
#include "Elementwise.cuh"

namespace tessel::kernels {

/// result[i] = data[i with its axis coordinate replaced by indices[i]].
template <typename W, typename Index>
__device__ __forceinline__ void gatherElements(const W *x, const Index *indices, W *y,
                                               const GatherElementsParams &p) {
  forEachIndex(p.n, [&](uint64_t i) {
    int64_t v = static_cast<int64_t>(indices[i]);
    if (v < 0)
      v += p.extent;
    if (v < 0 || v >= p.extent)
      y[i] = W{};
    else
      y[i] = x[stridedOffset(i, p.rank, p.shape, p.stride) + v * p.axisStride];
  });
}

/// The slice a tuple of p.k indices addresses (index j along a dim of
/// p.extent[j], whose step is p.stride[j] slices), or -1 when an index lies
/// outside [-extent, extent), which the CPU tier reports as an error.
/// gather_nd's and scatter_nd's parameters both carry k, extent and stride.
template <typename Params>
__device__ __forceinline__ int64_t tupleSlice(const int64_t *tuple, const Params &p) {
  int64_t slice = 0;
#pragma unroll 1
  for (int j = 0; j < p.k; ++j) {
    int64_t v = tuple[j];
    if (v < 0)
      v += p.extent[j];
    if (v < 0 || v >= p.extent[j])
      return -1;
    slice += v * p.stride[j];
  }
  return slice;
}

/// Word w of the slice of tuple t: the tuple's indices address a slice of
/// its batch's data block (zeros for an index out of range).
template <typename W>
__device__ __forceinline__ void gatherND(const W *x, const int64_t *indices, W *y,
                                         const GatherNDParams &p) {
  const uint64_t words = static_cast<uint64_t>(p.sliceWords);
  forEachIndex(p.n, [&](uint64_t i) {
    const uint64_t t = divide(i, words);
    const int64_t local = tupleSlice(indices + static_cast<int64_t>(t) * p.k, p);
    const int64_t slice =
        static_cast<int64_t>(divide(t, static_cast<uint64_t>(p.tuplesPerBatch))) * p.batchSlices +
        local;
    y[i] = local >= 0 ? x[slice * p.sliceWords + static_cast<int64_t>(i - t * words)] : W{};
  });
}

/// Reduction none: word i of the updates to its place in its tuple's slice.
/// Tuples that repeat leave either's slice (ONNX leaves it undefined).
template <typename W>
__device__ __forceinline__ void scatterND(const int64_t *indices, const W *u, W *y,
                                          const ScatterNDParams &p) {
  const uint64_t words = static_cast<uint64_t>(p.sliceWords);
  forEachIndex(p.n, [&](uint64_t i) {
    const uint64_t t = divide(i, words);
    const int64_t slice = tupleSlice(indices + static_cast<int64_t>(t) * p.k, p);
    if (slice >= 0)
      y[slice * p.sliceWords + static_cast<int64_t>(i - t * words)] = u[i];
  });
}

/// A reduction: element j of the slice combined with every tuple's update
/// in turn (the CPU kernel's order, so repeated tuples accumulate the same).
template <B op, typename T>
__device__ __forceinline__ void scatterNDReduce(const int64_t *indices, const T *u, T *y,
                                                const ScatterNDParams &p) {
  forEachIndex(p.n, [&](uint64_t j) {
#pragma unroll 1
    for (int64_t t = 0; t < p.tuples; ++t) {
      const int64_t slice = tupleSlice(indices + t * p.k, p);
      if (slice >= 0) {
        T &e = y[slice * p.sliceWords + static_cast<int64_t>(j)];
        e = binaryOp<op>(e, u[t * p.sliceWords + static_cast<int64_t>(j)]);
      }
    }
  });
}

/// Element (i, j) of each matrix kept where j - i >= k (upper) or
/// j - i <= k (lower), else 0.
template <typename W>
__device__ __forceinline__ void trilu(const W *x, W *y, const TriluParams &p) {
  const uint64_t rows = static_cast<uint64_t>(p.rows), cols = static_cast<uint64_t>(p.cols);
  forEachIndex(p.n, [&](uint64_t e) {
    const uint64_t t = divide(e, cols);
    const int64_t j = static_cast<int64_t>(e - t * cols);
    const int64_t i = static_cast<int64_t>(t - divide(t, rows) * rows);
    const bool keep = p.upper ? j - i >= p.k : j - i <= p.k;
    y[e] = keep ? x[e] : W{};
  });
}

} // namespace tessel::kernels

#endif // TESSEL_CODEGEN_CUDA_KERNELS_INDEX_CUH
