extern "C" __global__ void gate_f32(const float *a, const float *b, float *y,
                                    TesselCustomArgs args) {
  y[0] = a[0] * b[0]   // no semicolon
}
