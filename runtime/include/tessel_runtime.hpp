// tessel_runtime.hpp - a header-only C++ wrapper over the C API.
//
// RAII handles and exceptions for C++ applications. Everything here is inline
// over tessel_runtime.h: the shared library's ABI stays the C API, and the
// exceptions are thrown by this header, in the caller's code, never across the
// library boundary.
//
//   tessel::Engine engine = tessel::Engine::openFile("model.tsl");
//   tessel::Context context(engine);
//   context.bindInput(0, input.data(), input.size() * sizeof(float));
//   context.bindOutput(0, output.data(), output.size() * sizeof(float));
//   context.run();
//
// Thread rules are the C API's: an Engine may be shared, a Context is used by
// one thread at a time.
#ifndef TESSEL_RUNTIME_HPP
#define TESSEL_RUNTIME_HPP

#include "tessel_runtime.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessel {

/// A failed C API call: its status code and message.
class Error : public std::runtime_error {
public:
  Error(tessel_status_code_t code, const std::string &message)
      : std::runtime_error(message), statusCode(code) {}
  tessel_status_code_t code() const noexcept { return statusCode; }

private:
  tessel_status_code_t statusCode;
};

namespace detail {
/// Takes ownership of `status`; throws Error if it is a failure.
inline void check(tessel_status_t status) {
  if (!status)
    return;
  tessel_status_code_t code = tessel_status_code(status);
  std::string message = tessel_status_message(status);
  tessel_status_free(status);
  throw Error(code, message);
}
} // namespace detail

/// A graph input or output, copied out of the engine.
struct TensorInfo {
  std::string name;
  tessel_dtype_t dtype = TESSEL_DTYPE_F32;
  std::vector<int64_t> shape;
  std::string layout;
  size_t sizeBytes = 0;
  /// An output's data-dependent axis (shape is then its bound;
  /// Context::outputShape gives the extent after a run), or -1.
  int64_t dynamicAxis = -1;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// An opened, verified engine. Movable, not copyable.
class Engine {
public:
  static Engine openFile(const std::string &path) {
    tessel_engine_t *raw = nullptr;
    detail::check(tessel_engine_open_file(path.c_str(), &raw));
    return Engine(raw);
  }
  /// The bytes are copied; the caller keeps its buffer.
  static Engine openMemory(const void *data, size_t size) {
    tessel_engine_t *raw = nullptr;
    detail::check(tessel_engine_open_memory(data, size, &raw));
    return Engine(raw);
  }

  size_t inputCount() const { return tessel_engine_input_count(handle.get()); }
  size_t outputCount() const { return tessel_engine_output_count(handle.get()); }
  TensorInfo input(size_t index) const {
    return info(tessel_engine_input_info, index);
  }
  TensorInfo output(size_t index) const {
    TensorInfo result = info(tessel_engine_output_info, index);
    result.dynamicAxis = tessel_engine_output_dynamic_axis(handle.get(), index);
    return result;
  }

  /// Batch profiles (tessel_engine_profile_count): this object views one.
  size_t profileCount() const { return tessel_engine_profile_count(handle.get()); }
  size_t profileIndex() const { return tessel_engine_profile_index(handle.get()); }
  /// The same engine viewing profile `index`.
  Engine profile(size_t index) const {
    tessel_engine_t *raw = nullptr;
    detail::check(tessel_engine_profile(handle.get(), index, &raw));
    return Engine(raw);
  }
  /// The first profile whose input `input` has `shape`; throws when none has.
  size_t findProfile(size_t input, const std::vector<int64_t> &shape) const {
    size_t index = 0;
    detail::check(
        tessel_engine_find_profile(handle.get(), input, shape.data(), shape.size(), &index));
    return index;
  }

  /// The C handle, for mixing with C API calls; owned by this object.
  tessel_engine_t *get() const { return handle.get(); }

private:
  struct Release {
    void operator()(tessel_engine_t *engine) const { tessel_engine_release(engine); }
  };
  explicit Engine(tessel_engine_t *raw) : handle(raw) {}

  using InfoFn = tessel_status_t (*)(const tessel_engine_t *, size_t, tessel_tensor_info_t *);
  TensorInfo info(InfoFn fn, size_t index) const {
    tessel_tensor_info_t raw{};
    detail::check(fn(handle.get(), index, &raw));
    TensorInfo result;
    result.name = raw.name;
    result.dtype = raw.dtype;
    result.shape.assign(raw.shape, raw.shape + raw.rank);
    result.layout = raw.layout;
    result.sizeBytes = raw.size_bytes;
    return result;
  }

  std::unique_ptr<tessel_engine_t, Release> handle;
};

/// What one step of a context runs on.
struct StepInfo {
  std::string op;       ///< the graph op, e.g. "conv"
  std::string location; ///< the ONNX node, e.g. "conv1(Conv)"
  std::string tier;     ///< "cpu", "simt", "tc-sm70", "tc-sm80" or "tc-sm90"
  std::string kernel;   ///< the kernel variant's name
  std::string reason;   ///< why no better tier was taken, or ""
};

/// One execution context of an engine; keeps the engine alive. Movable, not
/// copyable.
class Context {
public:
  explicit Context(const Engine &engine, tessel_tier_t tier = TESSEL_TIER_AUTO) {
    tessel_context_options_t options{};
    options.tier = tier;
    tessel_context_t *raw = nullptr;
    detail::check(tessel_context_create(engine.get(), &options, &raw));
    handle.reset(raw);
  }

  /// `data` must hold exactly the tensor's sizeBytes; it must outlive every
  /// run() until rebound.
  void bindInput(size_t index, const void *data, size_t sizeBytes) {
    detail::check(tessel_context_bind_input(handle.get(), index, data, sizeBytes));
  }
  void bindOutput(size_t index, void *data, size_t sizeBytes) {
    detail::check(tessel_context_bind_output(handle.get(), index, data, sizeBytes));
  }
  template <typename T> void bindInput(size_t index, const std::vector<T> &data) {
    bindInput(index, data.data(), data.size() * sizeof(T));
  }
  template <typename T> void bindOutput(size_t index, std::vector<T> &data) {
    bindOutput(index, data.data(), data.size() * sizeof(T));
  }

  void run() { detail::check(tessel_context_run(handle.get())); }

  /// Output `index`'s shape after the last run (tessel_context_output_shape):
  /// a data-dependent axis holds the extent that run found.
  std::vector<int64_t> outputShape(size_t index, size_t rank) {
    std::vector<int64_t> shape(rank);
    detail::check(tessel_context_output_shape(handle.get(), index, shape.data(), rank));
    return shape;
  }

  /// Device-resident IO (tessel_context_bind_input_device): a CUDA device
  /// address, 256-byte aligned, of exactly the tensor's sizeBytes.
  void bindInputDevice(size_t index, uint64_t devicePtr, size_t sizeBytes) {
    detail::check(tessel_context_bind_input_device(handle.get(), index, devicePtr, sizeBytes));
  }
  void bindOutputDevice(size_t index, uint64_t devicePtr, size_t sizeBytes) {
    detail::check(tessel_context_bind_output_device(handle.get(), index, devicePtr, sizeBytes));
  }
  /// One run on `cuStream` (a CUstream; nullptr: CUDA's default stream), not
  /// waited for (tessel_context_enqueue).
  void enqueue(void *cuStream) {
    detail::check(tessel_context_enqueue(handle.get(), cuStream));
  }
  /// The context's own CUstream (tessel_context_stream).
  void *stream() const {
    void *cuStream = nullptr;
    detail::check(tessel_context_stream(handle.get(), &cuStream));
    return cuStream;
  }
  /// The steps whose float results first hold an infinity or NaN, from one
  /// run on a cpu-tier context (tessel_context_find_nonfinite).
  std::vector<size_t> findNonFinite() { return findSteps(tessel_context_find_nonfinite); }
  /// The steps whose f16 results first underflow (mostly f16 subnormals),
  /// from one run on a cpu-tier context (tessel_context_find_underflow).
  std::vector<size_t> findUnderflow() { return findSteps(tessel_context_find_underflow); }
  /// One run step by step, each step's time in milliseconds
  /// (tessel_context_profile_steps).
  std::vector<double> profileSteps() {
    std::vector<double> ms(stepCount());
    detail::check(tessel_context_profile_steps(handle.get(), ms.data(), ms.size()));
    return ms;
  }

  /// The tier every step runs on ("cpu", "simt", "tc-sm70", "tc-sm80",
  /// "tc-sm90"), or "mixed".
  std::string tier() const { return tessel_context_tier(handle.get()); }
  /// tier(), or "mixed: 50 tc-sm80, 10 simt, 3 cpu".
  std::string tierSummary() const { return tessel_context_tier_summary(handle.get()); }

  size_t stepCount() const { return tessel_context_step_count(handle.get()); }
  StepInfo step(size_t index) const {
    tessel_step_info_t raw{};
    detail::check(tessel_context_step_info(handle.get(), index, &raw));
    return StepInfo{raw.op, raw.location, raw.tier, raw.kernel, raw.reason};
  }

  tessel_context_t *get() const { return handle.get(); }

private:
  /// One step-by-step check run (tessel_context_find_nonfinite or _underflow).
  std::vector<size_t> findSteps(tessel_status_t (*find)(tessel_context_t *, size_t *, size_t,
                                                        size_t *)) {
    std::vector<size_t> steps(stepCount());
    size_t count = 0;
    detail::check(find(handle.get(), steps.data(), steps.size(), &count));
    steps.resize(count);
    return steps;
  }
  struct Release {
    void operator()(tessel_context_t *context) const { tessel_context_release(context); }
  };
  std::unique_ptr<tessel_context_t, Release> handle;
};

/// Registers a custom op's CPU implementation for this process
/// (tessel_register_custom_op: before creating the contexts that need it).
inline void registerCustomOp(const std::string &domain, const std::string &opType,
                             tessel_custom_cpu_fn fn, void *userData = nullptr) {
  detail::check(tessel_register_custom_op(domain.c_str(), opType.c_str(), fn, userData));
}

} // namespace tessel

#endif // TESSEL_RUNTIME_HPP
