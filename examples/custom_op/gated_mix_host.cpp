// GatedMix's CPU implementation, for the cpu tier: an engine carries no host
// code, so the application registers it. Built as a shared library that
// tessel-run loads with --custom-op-lib (it calls tessel_custom_ops_init);
// an application would call tessel_register_custom_op itself.
#include <tessel_runtime.h>

#include <cmath>
#include <cstdio>
#include <string_view>

namespace {

// y[p, n] = s * sigmoid(beta * s) * b[p, n], s = sum_k a[p, k] * w[k, n] (NHWC).
template <typename T>
void mix(const tessel_custom_call_t *call, float beta) {
  const tessel_custom_tensor_t &a = call->inputs[0];
  const T *av = static_cast<const T *>(a.data);
  const T *bv = static_cast<const T *>(call->inputs[1].data);
  const T *wv = static_cast<const T *>(call->inputs[2].data);
  T *yv = static_cast<T *>(call->outputs[0].data);
  const int64_t channels = a.shape[3];
  const int64_t pixels = a.shape[0] * a.shape[1] * a.shape[2];
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t n = 0; n < channels; ++n) {
      float s = 0.0f;
      for (int64_t k = 0; k < channels; ++k)
        s += static_cast<float>(av[p * channels + k]) * static_cast<float>(wv[k * channels + n]);
      const int64_t i = p * channels + n;
      yv[i] = static_cast<T>(s / (1.0f + std::exp(-beta * s)) * static_cast<float>(bv[i]));
    }
}

int gatedMixCpu(const tessel_custom_call_t *call, void *, char *error, size_t errorSize) {
  const tessel_custom_tensor_t &a = call->inputs[0];
  if (a.rank != 4 || std::string_view(a.layout) != "NHWC") {
    std::snprintf(error, errorSize, "GatedMix: a must be a 4-D NHWC tensor");
    return 1;
  }
  double beta = 1.0;
  tessel_custom_attr_float(call, "beta", &beta);
  switch (call->outputs[0].dtype) {
  case TESSEL_DTYPE_F32: mix<float>(call, static_cast<float>(beta)); return 0;
  case TESSEL_DTYPE_F16: mix<_Float16>(call, static_cast<float>(beta)); return 0;
  default:
    std::snprintf(error, errorSize, "GatedMix: element type %s",
                  tessel_dtype_name(call->outputs[0].dtype));
    return 1;
  }
}

} // namespace

extern "C" __attribute__((visibility("default"))) int tessel_custom_ops_init(void) {
  tessel_status_t status =
      tessel_register_custom_op("com.example", "GatedMix", gatedMixCpu, nullptr);
  if (!status)
    return 0;
  std::fprintf(stderr, "GatedMix: %s\n", tessel_status_message(status));
  tessel_status_free(status);
  return 1;
}
