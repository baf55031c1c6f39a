// Programmatic dependent launch on a chain of short kernels, in a CUDA graph:
// the time per kernel without PDL, with PDL and griddepcontrol.wait only
// (the implicit trigger at each block's exit), and with the trigger at the
// start of each kernel. nvcc -O3 -arch=sm_90 pdl_probe.cu -o pdl_probe
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

template <int mode>
__global__ void axpy(const float *x, float *y, int n) {
  if (mode >= 1) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (mode == 2) asm volatile("griddepcontrol.launch_dependents;");
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = 1.0001f * x[i] + 0.5f;
}

// A block that holds 100 KiB of shared memory and works a while (a GEMM's
// footprint), then a small kernel after it.
template <int mode>
__global__ void heavy(const float *x, float *y, int n, int iters) {
  extern __shared__ float s[];
  if (mode >= 1) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (mode == 2) asm volatile("griddepcontrol.launch_dependents;");
  float acc = 0;
  for (int i = threadIdx.x; i < 25600; i += blockDim.x) s[i] = x[(blockIdx.x * 25600 + i) % n];
  __syncthreads();
  for (int k = 0; k < iters; ++k)
    acc += s[(threadIdx.x * 7 + k * 33) % 25600];
  y[(blockIdx.x * blockDim.x + threadIdx.x) % n] = acc;
}

template <int mode>
float chain(int kernels, int n, int blocks, int threads, bool mixed, float *a, float *b,
            cudaStream_t st) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < kernels; ++k) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.stream = st;
    cfg.attrs = attr;
    cfg.numAttrs = (mode >= 1 && k > 0) ? 1 : 0;
    float *src = (k % 2) ? b : a, *dst = (k % 2) ? a : b;
    if (mixed && k % 2 == 0) {
      cfg.gridDim = dim3(132);
      cfg.blockDim = dim3(256);
      cfg.dynamicSmemBytes = 25600 * 4;
      CHECK(cudaLaunchKernelEx(&cfg, heavy<mode>, (const float *)src, dst, n, 2000));
    } else {
      cfg.gridDim = dim3(blocks);
      cfg.blockDim = dim3(threads);
      CHECK(cudaLaunchKernelEx(&cfg, axpy<mode>, (const float *)src, dst, n));
    }
  }
  CHECK(cudaStreamEndCapture(st, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < 25; ++r) {
    CHECK(cudaEventRecord(e0, st));
    CHECK(cudaGraphLaunch(ge, st));
    CHECK(cudaEventRecord(e1, st));
    CHECK(cudaEventSynchronize(e1));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 5) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaGraphExecDestroy(ge));
  CHECK(cudaGraphDestroy(g));
  return t[t.size() / 2] * 1000.0f / kernels;
}

int main() {
  const int n = 1 << 22;
  float *a, *b;
  CHECK(cudaMalloc(&a, n * 4));
  CHECK(cudaMalloc(&b, n * 4));
  CHECK(cudaMemset(a, 0, n * 4));
  CHECK(cudaMemset(b, 0, n * 4));
  CHECK(cudaFuncSetAttribute(heavy<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 25600 * 4));
  CHECK(cudaFuncSetAttribute(heavy<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 25600 * 4));
  CHECK(cudaFuncSetAttribute(heavy<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 25600 * 4));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  struct Case { const char *name; int elems, blocks, threads; bool mixed; };
  Case cases[] = {{"tiny (4k elems, 16 blocks)", 4096, 16, 256, false},
                  {"small (64k, 256 blocks)", 65536, 256, 256, false},
                  {"mid (1M, 1024 blocks)", 1 << 20, 1024, 256, false},
                  {"big (4M, 2048 blocks)", n, 2048, 256, false},
                  {"heavy smem + small alternating", 65536, 256, 256, true},
                  {"heavy smem + 528 tiny blocks", 65536, 528, 128, true}};
  printf("us per kernel, 200 kernels in a graph, medians of 20 replays\n");
  printf("%-34s %10s %10s %10s\n", "case", "no PDL", "PDL wait", "PDL trig");
  for (const Case &c : cases) {
    float t0 = chain<0>(200, c.elems, c.blocks, c.threads, c.mixed, a, b, st);
    float t1 = chain<1>(200, c.elems, c.blocks, c.threads, c.mixed, a, b, st);
    float t2 = chain<2>(200, c.elems, c.blocks, c.threads, c.mixed, a, b, st);
    printf("%-34s %10.3f %10.3f %10.3f\n", c.name, t0, t1, t2);
  }
  return 0;
}
