// SiluGate's CPU implementation, for the cpu tier: an engine carries no host
// code, so the application registers it. Built as a shared library that
// tessel-run loads with --custom-op-lib (it calls tessel_custom_ops_init);
// an application would call tessel_register_custom_op itself.
#include <tessel_runtime.h>

#include <cmath>
#include <cstdio>

namespace {

float siluGate(float a, float b, float alpha) { return a / (1.0f + std::exp(-alpha * a)) * b; }

template <typename T>
void apply(const void *a, const void *b, void *y, size_t n, float alpha) {
  const T *av = static_cast<const T *>(a), *bv = static_cast<const T *>(b);
  T *yv = static_cast<T *>(y);
  for (size_t i = 0; i < n; ++i)
    yv[i] = static_cast<T>(siluGate(static_cast<float>(av[i]), static_cast<float>(bv[i]), alpha));
}

int siluGateCpu(const tessel_custom_call_t *call, void *, char *error, size_t errorSize) {
  const tessel_custom_tensor_t &a = call->inputs[0], &b = call->inputs[1], &y = call->outputs[0];
  size_t n = 1;
  for (size_t d = 0; d < a.rank; ++d)
    n *= static_cast<size_t>(a.shape[d]);
  if (a.dtype != y.dtype || b.dtype != y.dtype) {
    std::snprintf(error, errorSize, "SiluGate: operands of different element types");
    return 1;
  }
  double alpha = 1.0;
  tessel_custom_attr_float(call, "alpha", &alpha);
  if (y.dtype == TESSEL_DTYPE_F32)
    apply<float>(a.data, b.data, y.data, n, static_cast<float>(alpha));
  else if (y.dtype == TESSEL_DTYPE_F16)
    apply<_Float16>(a.data, b.data, y.data, n, static_cast<float>(alpha));
  else {
    std::snprintf(error, errorSize, "SiluGate: element type %s", tessel_dtype_name(y.dtype));
    return 1;
  }
  return 0;
}

} // namespace

extern "C" __attribute__((visibility("default"))) int tessel_custom_ops_init(void) {
  tessel_status_t status =
      tessel_register_custom_op("com.example", "SiluGate", siluGateCpu, nullptr);
  if (!status)
    return 0;
  std::fprintf(stderr, "SiluGate: %s\n", tessel_status_message(status));
  tessel_status_free(status);
  return 1;
}
