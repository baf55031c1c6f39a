// What TMA's im2col mode loads, for the emulator and the implicit-GEMM conv
// to copy: an NHWC f16 tensor (N 2, H 5, W 6, C 8) whose element (n, h, w, c)
// holds pixel id ((n H + h) W + w) + c / 8, one cp.async.bulk.tensor.4d
// im2col copy of 16 pixels x 8 channels (no swizzle) per case, printed as
// the pixel each row holds (-1: zero fill).
//   nvcc -arch=sm_90a -o probe tma-im2col-probe.cu -lcuda && ./probe
#include <cuda.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <vector>

__global__ void probe(const __grid_constant__ CUtensorMap map, int n, int h, int w,
                      unsigned short offW, unsigned short offH, __half *out) {
  __shared__ alignas(128) __half tile[16 * 8];
  __shared__ alignas(8) unsigned long long bar;
  unsigned tileAddr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  unsigned barAddr = static_cast<unsigned>(__cvta_generic_to_shared(&bar));
  for (int i = threadIdx.x; i < 16 * 8; i += blockDim.x)
    tile[i] = __float2half(-7.0f);
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barAddr));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("{\n.reg .b64 s;\nmbarrier.arrive.expect_tx.shared::cta.b64 s, [%0], %1;\n}" ::"r"(
                     barAddr),
                 "r"(16 * 8 * 2));
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(tileAddr),
                 "l"(&map), "r"(0), "r"(w), "r"(h), "r"(n), "r"(barAddr), "h"(offW), "h"(offH)
                 : "memory");
    asm volatile("{\n.reg .pred p;\nW:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                 "@!p bra W;\n}" ::"r"(barAddr));
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 16 * 8; i += blockDim.x)
    out[i] = tile[i];
}

int main() {
  const int N = 2, H = 5, W = 6, C = 8;
  std::vector<__half> host(N * H * W * C);
  for (int p = 0; p < N * H * W; ++p)
    for (int c = 0; c < C; ++c)
      host[p * C + c] = __float2half(p + c / 8.0f);
  __half *dev, *out;
  cudaMalloc(&dev, host.size() * 2);
  cudaMalloc(&out, 16 * 8 * 2);
  cudaMemcpy(dev, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  struct Case {
    const char *name;
    int lower[2], upper[2]; // {W, H}
    unsigned strides[4];    // {C, W, H, N}
    int n, h, w, offW, offH;
  };
  const Case cases[] = {
      // 3x3 pad 1 stride 1: upper = pad - (R - 1) (CUTLASS) or other.
      {"3x3 p1 s1 up-1, start (0,-1,-1) off 0,0", {-1, -1}, {-1, -1}, {1, 1, 1, 1}, 0, -1, -1, 0, 0},
      {"3x3 p1 s1 up-1, start (0,-1,-1) off 1,1", {-1, -1}, {-1, -1}, {1, 1, 1, 1}, 0, -1, -1, 1, 1},
      {"3x3 p1 s1 up-1, start (0,-1,-1) off 2,0", {-1, -1}, {-1, -1}, {1, 1, 1, 1}, 0, -1, -1, 2, 0},
      {"3x3 p1 s1 up-1, start (0,3,4) off 0,0 (crosses to n 1)", {-1, -1}, {-1, -1}, {1, 1, 1, 1}, 0, 3, 4, 0, 0},
      {"3x3 p1 s1 up+1, start (0,-1,-1) off 0,0", {-1, -1}, {1, 1}, {1, 1, 1, 1}, 0, -1, -1, 0, 0},
      {"3x3 p1 s1 up 0, start (0,-1,-1) off 0,0", {-1, -1}, {0, 0}, {1, 1, 1, 1}, 0, -1, -1, 0, 0},
      // 3x3 pad 1 stride 2: element strides on W and H.
      {"3x3 p1 s2 up-1, start (0,-1,-1) off 0,0", {-1, -1}, {-1, -1}, {1, 2, 2, 1}, 0, -1, -1, 0, 0},
      {"3x3 p1 s2 up-1, start (0,-1,-1) off 1,1", {-1, -1}, {-1, -1}, {1, 2, 2, 1}, 0, -1, -1, 1, 1},
      // 1x1 pad 0 stride 2.
      {"1x1 p0 s2 up 0, start (0,0,0) off 0,0", {0, 0}, {0, 0}, {1, 2, 2, 1}, 0, 0, 0, 0, 0},
      {"1x1 p0 s2 up 0, start (1,0,2) off 0,0", {0, 0}, {0, 0}, {1, 2, 2, 1}, 1, 0, 2, 0, 0},
  };
  CUresult (*encode)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                     const cuuint64_t *, const int *, const int *, cuuint32_t, cuuint32_t,
                     const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                     CUtensorMapL2promotion, CUtensorMapFloatOOBfill) = cuTensorMapEncodeIm2col;
  for (const Case &k : cases) {
    CUtensorMap map;
    cuuint64_t dims[4] = {C, W, H, N};
    cuuint64_t strides[3] = {C * 2, W * C * 2, H * W * C * 2};
    CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, dev, dims, strides, k.lower,
                        k.upper, /*channelsPerPixel=*/8, /*pixelsPerColumn=*/16, k.strides,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    printf("%-58s encode=%d:", k.name, int(r));
    if (r != CUDA_SUCCESS) {
      printf("\n");
      continue;
    }
    probe<<<1, 128>>>(map, k.n, k.h, k.w, k.offW, k.offH, out);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      printf(" %s\n", cudaGetErrorString(e));
      return 1;
    }
    std::vector<__half> tile(16 * 8);
    cudaMemcpy(tile.data(), out, tile.size() * 2, cudaMemcpyDeviceToHost);
    for (int row = 0; row < 16; ++row) {
      float v = __half2float(tile[row * 8]), v1 = __half2float(tile[row * 8 + 1]);
      if (v == -7.0f)
        printf(" .");
      else if (v == 0.0f && v1 == 0.0f)
        printf(" -1");
      else {
        int p = int(v), n = p / (H * W), h = p / W % H, w = p % W;
        printf(" %d:%d,%d", n, h, w);
      }
    }
    printf("\n");
  }
  return 0;
}
