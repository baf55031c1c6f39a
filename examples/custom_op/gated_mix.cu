// GatedMix: a channel mix gated by SiLU, for NHWC activations of C channels:
//   y[p, n] = s * sigmoid(beta * s) * b[p, n],
//   s = sum_k a[p, k] * w[k, n],
// with p a pixel (N*H*W of them) and w a [C, C] matrix. tessel-compile
// compiles this file with NVRTC behind its prelude, which defines
// TesselCustomArgs: every operand's shape and the manifest's numeric
// attributes in order (attrs[0] is beta).
#include <mma.h>

__device__ float gate(float s, float b, float beta) {
  return s / (1.0f + expf(-beta * s)) * b;
}

// One output element, any C: the SIMT variants, and the Tensor Core
// variant's fallback.
template <typename T>
__device__ void mix_one(const T *a, const T *b, const T *w, T *y, long long channels,
                        long long i, float beta) {
  long long p = i / channels, n = i % channels;
  float s = 0.0f;
  for (long long k = 0; k < channels; ++k)
    s += static_cast<float>(a[p * channels + k]) * static_cast<float>(w[k * channels + n]);
  y[i] = static_cast<T>(gate(s, static_cast<float>(b[i]), beta));
}

extern "C" __global__ void gated_mix_f32(const float *a, const float *b, const float *w,
                                         float *y, TesselCustomArgs args) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.outputs[0].elements)
    mix_one(a, b, w, y, args.inputs[0].dims[3], i, (float)args.attrs[0]);
}

extern "C" __global__ void gated_mix_f16(const __half *a, const __half *b, const __half *w,
                                         __half *y, TesselCustomArgs args) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.outputs[0].elements)
    mix_one(a, b, w, y, args.inputs[0].dims[3], i, (float)args.attrs[0]);
}

// Tensor Cores (WMMA, f16 operands, f32 accumulation): a warp per strip of
// 16 pixels and every output channel (up to 128: 8 accumulators), so that
// each 16x16 tile of a is loaded once for all of them. The manifest's launch
// (8 elements a thread: a warp per 256 outputs) gives at least as many warps
// as strips; the others return at once. The manifest's "when" gives this
// variant only steps whose C is a multiple of 16 up to 128 and whose pixel
// count is a multiple of 16; should it run on others, each thread computes
// its 8 elements as the SIMT variant does.
extern "C" __global__ void gated_mix_tc(const __half *a, const __half *b, const __half *w,
                                        __half *y, TesselCustomArgs args) {
  using namespace nvcuda;
  constexpr int kMaxTiles = 8;
  const long long channels = args.inputs[0].dims[3];
  const long long pixels = args.inputs[0].elements / channels;
  const long long thread = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const float beta = (float)args.attrs[0];
  if (channels % 16 != 0 || channels > 16 * kMaxTiles || pixels % 16 != 0) {
    for (long long i = thread * 8; i < thread * 8 + 8 && i < args.outputs[0].elements; ++i)
      mix_one(a, b, w, y, channels, i, beta);
    return;
  }
  const long long strip = thread / 32;
  const int lane = threadIdx.x % 32;
  if (strip >= pixels / 16)
    return; // the whole warp
  const int tiles = static_cast<int>(channels / 16);
  const long long row0 = strip * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kMaxTiles];
  for (int t = 0; t < kMaxTiles; ++t)
    wmma::fill_fragment(acc[t], 0.0f);
  for (long long k = 0; k < channels; k += 16) {
    wmma::load_matrix_sync(fa, a + row0 * channels + k, channels);
#pragma unroll
    for (int t = 0; t < kMaxTiles; ++t)
      if (t < tiles) {
        wmma::load_matrix_sync(fb, w + k * channels + t * 16, channels);
        wmma::mma_sync(acc[t], fa, fb, acc[t]);
      }
  }
  __shared__ float staging[8][16 * 16]; // a tile per warp of the block (256 threads)
  float *tile = staging[threadIdx.x / 32];
#pragma unroll
  for (int t = 0; t < kMaxTiles; ++t) {
    if (t >= tiles)
      break;
    wmma::store_matrix_sync(tile, acc[t], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      long long i = (row0 + e / 16) * channels + t * 16 + e % 16;
      y[i] = __float2half(gate(tile[e], __half2float(b[i]), beta));
    }
    __syncwarp();
  }
}
