// SiluGate: y = a * sigmoid(alpha * a) * b, element by element (a and b of
// one shape). tessel-compile compiles this file with NVRTC behind its
// prelude, which defines TesselCustomArgs (every operand's shape, and the
// manifest's numeric attributes in order: attrs[0] is alpha).

__device__ float silu_gate(float a, float b, float alpha) {
  return a / (1.0f + expf(-alpha * a)) * b;
}

extern "C" __global__ void silu_gate_f32(const float *a, const float *b, float *y,
                                         TesselCustomArgs args) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.outputs[0].elements)
    y[i] = silu_gate(a[i], b[i], (float)args.attrs[0]);
}

// Two elements a thread, as one __half2 (the manifest's elements_per_thread).
extern "C" __global__ void silu_gate_f16(const __half *a, const __half *b, __half *y,
                                         TesselCustomArgs args) {
  long long i = 2 * (blockIdx.x * (long long)blockDim.x + threadIdx.x);
  long long n = args.outputs[0].elements;
  float alpha = (float)args.attrs[0];
  if (i + 1 < n) {
    float2 av = __half22float2(*reinterpret_cast<const __half2 *>(a + i));
    float2 bv = __half22float2(*reinterpret_cast<const __half2 *>(b + i));
    *reinterpret_cast<__half2 *>(y + i) =
        __floats2half2_rn(silu_gate(av.x, bv.x, alpha), silu_gate(av.y, bv.y, alpha));
  } else if (i < n) {
    y[i] = __float2half(silu_gate(__half2float(a[i]), __half2float(b[i]), alpha));
  }
}
