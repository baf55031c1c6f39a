// A two-input elementwise kernel for the manifest tests: y = a * b.
extern "C" __global__ void gate_f32(const float *a, const float *b, float *y,
                                    TesselCustomArgs args) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < args.outputs[0].elements)
    y[i] = a[i] * b[i];
}

// Not a kernel entry: a device function of the same parameters.
extern "C" __device__ void gate_device(const float *a, const float *b, float *y,
                                       TesselCustomArgs args) {
  y[0] = a[0] * b[0];
}
