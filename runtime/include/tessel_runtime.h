/* tessel_runtime.h - the C API of libtessel_runtime.
 *
 * Loads a Tessel engine (.tsl), verifies it, and runs it on the best tier the
 * machine has. Links nothing of the compiler (no MLIR, LLVM, ONNX, protobuf).
 *
 * Conventions
 * - Every fallible call returns a tessel_status_t: NULL means success; any
 *   other value carries a code and a message and must be released with
 *   tessel_status_free. No C++ exception ever crosses this API.
 * - Handles are opaque; each *_create / *_open has a matching *_release, which
 *   accepts NULL. A context keeps its engine alive: an engine may be released
 *   while contexts created from it are still in use.
 * - A failing call that returns a handle through an out-pointer sets it to
 *   NULL.
 * - Threads: an engine is immutable once opened and may be shared by any number
 *   of threads and contexts. A context is used by one thread at a time; run
 *   distinct contexts concurrently for parallelism. Thread-safe: every
 *   tessel_engine_* call, tessel_context_create and _release (also while
 *   other contexts of the engine run, capture or replay their CUDA graphs:
 *   set-up waits on its own streams only, graphs are captured thread-local),
 *   the driver and device queries, and every call on distinct contexts;
 *   calls on one context must not overlap.
 * - Memory: a context allocates its activation arena once, at creation;
 *   tessel_context_run allocates nothing.
 * - GPU: a context runs each step on the best tier the device and the engine
 *   share (Tensor Cores, then SIMT, then the CPU), per step: a step without a
 *   usable GPU kernel runs on the CPU between GPU steps. A context with GPU
 *   steps holds, on device 0, one stream and one device allocation (its
 *   arena and a buffer per graph input and output); the engine's constants
 *   and kernel modules are loaded once per engine and device, shared by its
 *   contexts. tessel_context_run copies the bound inputs to the device,
 *   launches the steps, copies the outputs back and returns when they are in
 *   the bound buffers. When every step runs on the GPU, the second run
 *   captures the launches into a CUDA graph and later runs replay it.
 * - Device-resident IO and asynchronous runs (TensorRT-style): inputs and
 *   outputs may be bound to device memory (tessel_context_bind_*_device),
 *   and a context whose steps all run on the GPU may be enqueued on a
 *   caller's CUDA stream (tessel_context_enqueue), so that an application
 *   or a benchmark pays for the GPU work only.
 */
#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TESSEL_API __attribute__((visibility("default")))
#else
#define TESSEL_API
#endif

/* C++ sees the enums below with int as their fixed underlying type: a C
 * caller may pass any int, and the runtime's range checks must then read a
 * value C++ defines (the same size and calling convention as C's). */
#ifdef __cplusplus
#define TESSEL_ENUM_INT : int
#else
#define TESSEL_ENUM_INT
#endif

typedef enum tessel_status_code_e TESSEL_ENUM_INT {
  TESSEL_OK = 0,
  TESSEL_INVALID_ARGUMENT = 1, /* a bad handle, index, size or option */
  TESSEL_INVALID_ENGINE = 2,   /* the engine file is malformed or corrupt */
  TESSEL_UNSUPPORTED = 3,      /* a valid engine this runtime cannot run */
  TESSEL_IO_ERROR = 4,         /* the file could not be read */
  TESSEL_OUT_OF_MEMORY = 5,
  TESSEL_INTERNAL = 6
} tessel_status_code_t;

typedef struct tessel_status_s *tessel_status_t;

TESSEL_API tessel_status_code_t tessel_status_code(tessel_status_t status);
/* The message; valid until tessel_status_free. "" for NULL (success). */
TESSEL_API const char *tessel_status_message(tessel_status_t status);
TESSEL_API void tessel_status_free(tessel_status_t status);

/* Element types; values match the engine schema's DType. */
typedef enum tessel_dtype_e TESSEL_ENUM_INT {
  TESSEL_DTYPE_F32 = 0,
  TESSEL_DTYPE_F16 = 1,
  TESSEL_DTYPE_F64 = 2,
  TESSEL_DTYPE_BF16 = 3,
  TESSEL_DTYPE_I8 = 4,
  TESSEL_DTYPE_I16 = 5,
  TESSEL_DTYPE_I32 = 6,
  TESSEL_DTYPE_I64 = 7,
  TESSEL_DTYPE_U8 = 8,
  TESSEL_DTYPE_U16 = 9,
  TESSEL_DTYPE_U32 = 10,
  TESSEL_DTYPE_U64 = 11,
  TESSEL_DTYPE_BOOL = 12
} tessel_dtype_t;

TESSEL_API const char *tessel_dtype_name(tessel_dtype_t dtype);
TESSEL_API size_t tessel_dtype_size(tessel_dtype_t dtype);

typedef struct tessel_engine_s tessel_engine_t;
typedef struct tessel_context_s tessel_context_t;

/* Opens and fully verifies an engine: header, format version, checksum,
 * FlatBuffers verifier, and the bounds of every tensor and constant. */
TESSEL_API tessel_status_t tessel_engine_open_file(const char *path,
                                                   tessel_engine_t **engine);
/* As above from memory; the bytes are copied, the caller keeps its buffer. */
TESSEL_API tessel_status_t tessel_engine_open_memory(const void *data,
                                                     size_t size,
                                                     tessel_engine_t **engine);
TESSEL_API void tessel_engine_release(tessel_engine_t *engine);

/* The engine file's bytes as opened and verified, for tools that read the
 * rest of what it holds (steps, kernels, modules) through the engine format
 * library (tessel/engine_format.h: format::payload() and the schema's
 * generated reader), as tessel-inspect does. Valid while the engine is
 * open; 256-byte aligned. TESSEL_INVALID_ARGUMENT for a NULL argument. */
TESSEL_API tessel_status_t tessel_engine_file(const tessel_engine_t *engine,
                                              const void **data, size_t *size);

typedef struct tessel_tensor_info_s {
  const char *name;
  tessel_dtype_t dtype;
  size_t rank;
  const int64_t *shape; /* rank entries, owned by the engine */
  const char *layout;   /* "NCHW", "NHWC" or "" */
  size_t size_bytes;
} tessel_tensor_info_t;

TESSEL_API size_t tessel_engine_input_count(const tessel_engine_t *engine);
TESSEL_API size_t tessel_engine_output_count(const tessel_engine_t *engine);
/* Pointers in *info stay valid while the engine is open. */
TESSEL_API tessel_status_t tessel_engine_input_info(const tessel_engine_t *engine,
                                                    size_t index,
                                                    tessel_tensor_info_t *info);
TESSEL_API tessel_status_t tessel_engine_output_info(const tessel_engine_t *engine,
                                                     size_t index,
                                                     tessel_tensor_info_t *info);
/* The axis of output `index` whose extent is data dependent
 * (NonMaxSuppression's selected rows, and what is computed from them), or -1
 * when its shape is static (or the engine or index is invalid). Such an
 * output's info gives its bound, the buffer size to bind; after a run,
 * tessel_context_output_shape gives the extent, and the valid elements are
 * the buffer's prefix (only dims of 1 precede the axis). */
TESSEL_API int64_t tessel_engine_output_dynamic_axis(const tessel_engine_t *engine,
                                                     size_t index);

/* Batch profiles (tessel-compile --batch 1,8,32): an engine holds one plan
 * per profile over one copy of the constants and kernels. A handle views one
 * plan, profile 0 when opened: its inputs, outputs and contexts are that
 * plan's. Every profile has the same inputs and outputs (names, dtypes,
 * ranks, layouts) with its own shapes. The count is 1 for an engine built
 * without profiles. */
TESSEL_API size_t tessel_engine_profile_count(const tessel_engine_t *engine);
/* The profile a handle views. */
TESSEL_API size_t tessel_engine_profile_index(const tessel_engine_t *engine);
/* A new handle on the same engine viewing profile `index` (release it with
 * tessel_engine_release; it keeps the engine's bytes alive on its own).
 * TESSEL_INVALID_ARGUMENT for an index beyond the count. */
TESSEL_API tessel_status_t tessel_engine_profile(const tessel_engine_t *engine, size_t index,
                                                 tessel_engine_t **profile);
/* The first profile whose input `input` has exactly `shape` (`rank` dims):
 * how an application picks a plan for the data it has.
 * TESSEL_INVALID_ARGUMENT when none has, the message listing the profiles'
 * shapes of that input. */
TESSEL_API tessel_status_t tessel_engine_find_profile(const tessel_engine_t *engine,
                                                      size_t input, const int64_t *shape,
                                                      size_t rank, size_t *index);

typedef enum tessel_tier_e TESSEL_ENUM_INT {
  TESSEL_TIER_AUTO = 0, /* the best tier the machine supports, per step */
  TESSEL_TIER_CPU = 1,  /* reference kernels on the host */
  TESSEL_TIER_SIMT = 2, /* CUDA cores */
  TESSEL_TIER_TC = 3,   /* Tensor Cores */
  TESSEL_TIER_TC_SM70 = 4, /* Tensor Cores, variants no newer than tc-sm70 (WMMA) */
  TESSEL_TIER_TC_SM80 = 5  /* Tensor Cores, variants no newer than tc-sm80 */
} tessel_tier_t;

typedef struct tessel_context_options_s {
  tessel_tier_t tier;
} tessel_context_options_t;

/* options may be NULL (TESSEL_TIER_AUTO). Per step the best variant the
 * device runs and the tier allows: AUTO and TC any (tc-sm90 > tc-sm80 >
 * tc-sm70 > simt > cpu), TC_SM80 and TC_SM70 none newer than theirs (to
 * measure or test one Tensor Core tier), SIMT simt or cpu, CPU cpu only; a step without such
 * a GPU variant runs on the CPU. AUTO never fails for want of a GPU: without
 * one (or when it cannot be set up) every step runs on the CPU, saying why
 * once per process on stderr. Forcing SIMT or TC on a machine without a
 * usable GPU, or TC on a GPU without Tensor Cores, is TESSEL_UNSUPPORTED,
 * with the reason; so is a forced tier's GPU failing to load a kernel module
 * (the message carries the driver's JIT log). */
TESSEL_API tessel_status_t
tessel_context_create(const tessel_engine_t *engine,
                      const tessel_context_options_t *options,
                      tessel_context_t **context);
TESSEL_API void tessel_context_release(tessel_context_t *context);

/* Host buffers of exactly the tensor's size_bytes, in its dtype and layout.
 * Bindings persist across runs until rebound. */
TESSEL_API tessel_status_t tessel_context_bind_input(tessel_context_t *context,
                                                     size_t index,
                                                     const void *data,
                                                     size_t size_bytes);
TESSEL_API tessel_status_t tessel_context_bind_output(tessel_context_t *context,
                                                      size_t index, void *data,
                                                      size_t size_bytes);
/* Device memory of exactly the tensor's size_bytes, in its dtype and layout:
 * `device_ptr` is a CUdeviceptr in the primary context of device 0 (the
 * device the runtime uses; cuDevicePrimaryCtxRetain, or the CUDA runtime
 * API's default context), 256-byte aligned (cuMemAlloc's and cudaMalloc's
 * allocations are) because kernels use vector loads and stores. Kernels read
 * and write it in place: no copy is made, and tessel_context_run leaves a
 * device-bound output on the device. The binding persists until rebound; a
 * host bind (tessel_context_bind_input/_output) goes back to the context's
 * own device buffer. Changing a device address after a CUDA graph was
 * captured destroys the graph and the next run captures it again (it holds
 * addresses), so rebind rarely: keep one context per set of buffers to
 * rotate between them.
 * In a mixed context (some steps on the CPU) those steps read and write a
 * device-bound tensor through a host staging buffer the bind allocates.
 * TESSEL_UNSUPPORTED for a context without GPU steps ("the context runs on
 * the cpu tier; bind host buffers"); TESSEL_INVALID_ARGUMENT for a wrong
 * size, a 0 address or one not 256-byte aligned. */
TESSEL_API tessel_status_t tessel_context_bind_input_device(tessel_context_t *context,
                                                            size_t index,
                                                            uint64_t device_ptr,
                                                            size_t size_bytes);
TESSEL_API tessel_status_t tessel_context_bind_output_device(tessel_context_t *context,
                                                             size_t index,
                                                             uint64_t device_ptr,
                                                             size_t size_bytes);
/* Runs every step; fails if an input or output is unbound, or with the
 * failing step's index, op and ONNX node. A GPU kernel fault surfaces at the
 * next synchronization and names the steps in flight; it leaves the device
 * unusable for this process, so later runs fail too. Synchronous: returns
 * when the outputs are in their bound buffers (host or device). */
TESSEL_API tessel_status_t tessel_context_run(tessel_context_t *context);
/* Enqueues one run on `cu_stream` (a CUstream of device 0's primary context;
 * 0 / NULL is CUDA's default stream, as everywhere in CUDA: the work is
 * ordered with the caller's default-stream work, e.g. PyTorch's; the
 * context's own stream is tessel_context_stream's) and returns without
 * waiting; the caller
 * synchronizes the stream (or records an event after it) before reading the
 * outputs or changing the inputs. Only for a context whose steps all run on
 * the GPU: otherwise TESSEL_UNSUPPORTED naming the first cpu-tier step (use
 * tessel_context_run). Works with host and device bindings: host inputs and
 * outputs are copied with cuMemcpy*Async on the stream, under CUDA's rules
 * for pageable memory: a host-to-device copy first waits for the stream's
 * earlier work and a device-to-host copy returns when done, so that with
 * host bindings the call waits for the run; bind device memory (or
 * page-locked host memory) to keep it asynchronous. As in tessel_context_run, the second run (of either kind)
 * captures a CUDA graph and later ones launch it on the given stream.
 * Ordering: a run is ordered after the context's earlier runs and enqueues,
 * whatever their stream (one arena serves them all). A kernel fault
 * surfaces at a later call. The stream must outlive the work enqueued. */
TESSEL_API tessel_status_t tessel_context_enqueue(tessel_context_t *context, void *cu_stream);
/* Output `index`'s shape after the context's last run, `rank` entries
 * (the output's rank) into shape: the engine's, but along a data-dependent
 * axis (tessel_engine_output_dynamic_axis) the extent that run found.
 * After tessel_context_enqueue it waits for that run to finish.
 * TESSEL_INVALID_ARGUMENT for a data-dependent output before any run. */
TESSEL_API tessel_status_t tessel_context_output_shape(tessel_context_t *context, size_t index,
                                                       int64_t *shape, size_t rank);
/* Runs once, step by step, and finds the steps whose float results hold an
 * infinity or NaN that none of their float operands held: where an fp16
 * engine overflows f16's range (65504), or an operation is invalid. Writes
 * their indices, in step order, to steps[0 .. min(count, capacity) - 1] and
 * their number to *count (tessel_context_step_info names each step's ONNX
 * node; tessel-compile --fp32-nodes keeps nodes in f32). Outputs are written
 * as by tessel_context_run. Only on the cpu tier (TESSEL_UNSUPPORTED for a
 * context with GPU steps): create the context on TESSEL_TIER_CPU, whose
 * kernels store f16 as the GPU tiers do. */
TESSEL_API tessel_status_t tessel_context_find_nonfinite(tessel_context_t *context,
                                                         size_t *steps, size_t capacity,
                                                         size_t *count);
/* As above, the steps whose f16 results underflow: at least 1% of their
 * nonzero values are f16 subnormals (magnitudes below 2^-14, where f16 keeps
 * fewer than 11 bits; below 2^-25 a value rounds to zero), where their float
 * operands other than the engine's constants held fewer (an f32 operand
 * counted as if stored in f16; subnormal f16 weights flag the step reading
 * them). */
TESSEL_API tessel_status_t tessel_context_find_underflow(tessel_context_t *context,
                                                         size_t *steps, size_t capacity,
                                                         size_t *count);
/* The context's own CUstream (where tessel_context_run works), for a caller
 * that wants enqueue to use it: tessel_context_enqueue(context, *cu_stream).
 * TESSEL_UNSUPPORTED for a context without GPU steps. */
TESSEL_API tessel_status_t tessel_context_stream(const tessel_context_t *context,
                                                 void **cu_stream);
/* Runs once, step by step (never a CUDA graph), and writes each step's time
 * in milliseconds to ms[0 .. count - 1]; count must be
 * tessel_context_step_count(). A GPU step is timed by CUDA events around its
 * launches on the context's stream; a cpu-tier step by a steady clock around
 * its kernel (in a mixed context, with its copies to and from the device).
 * The outputs are written as by tessel_context_run. For finding where the
 * time goes; the sum is above a graph replay's time (launch gaps). */
TESSEL_API tessel_status_t tessel_context_profile_steps(tessel_context_t *context, double *ms,
                                                        size_t count);
/* The tier every step runs on: "cpu", "simt", "tc-sm70", "tc-sm80" or
 * "tc-sm90"; "mixed" when steps run on different tiers. "" for NULL. The
 * strings stay valid while the context lives. */
TESSEL_API const char *tessel_context_tier(const tessel_context_t *context);
/* tessel_context_tier, or for a mixed context the steps per tier, best
 * first: "mixed: 50 tc-sm80, 10 simt, 3 cpu". */
TESSEL_API const char *tessel_context_tier_summary(const tessel_context_t *context);

/* What each step of a context runs on. */
typedef struct tessel_step_info_s {
  const char *op;       /* the graph op, e.g. "conv" */
  const char *location; /* the ONNX node, e.g. "conv1(Conv)" */
  const char *tier;     /* "cpu", "simt", "tc-sm70", "tc-sm80" or "tc-sm90" */
  const char *kernel;   /* the kernel variant's name */
  const char *reason;   /* why no better tier was taken, or "" */
} tessel_step_info_t;

/* The engine's step count (0 for NULL). */
TESSEL_API size_t tessel_context_step_count(const tessel_context_t *context);
/* Step `index` (0 .. tessel_context_step_count() - 1); the strings stay
 * valid while the context lives. TESSEL_INVALID_ARGUMENT for a NULL context
 * or info or an index out of range; *info is left untouched on failure. */
TESSEL_API tessel_status_t tessel_context_step_info(const tessel_context_t *context,
                                                    size_t index, tessel_step_info_t *info);

/* Custom ops (tessel-compile --custom-op).
 *
 * An engine carries a custom op's GPU kernels (compiled from the manifest's
 * CUDA C++ by NVRTC) but never host code: on the CPU tier a custom step
 * runs the implementation the application registers here, by the op's
 * ONNX domain and op type, before creating the contexts that need it. A
 * context whose cpu tier would run a custom step with none registered
 * fails at creation with TESSEL_UNSUPPORTED naming the op (under
 * TESSEL_TIER_AUTO too: a context on a machine without a GPU). */

/* One operand of a custom step: dense, row-major in its layout. */
typedef struct tessel_custom_tensor_s {
  tessel_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  const char *layout; /* "NCHW" or "NHWC" for a 4-D activation, else "" */
  void *data;         /* inputs: read only */
} tessel_custom_tensor_t;

/* What a CPU implementation gets: the step's operands and its attributes
 * (read with tessel_custom_attr_*). Valid during the call only. */
typedef struct tessel_custom_call_s {
  const char *domain;
  const char *op_type;
  const char *location; /* the ONNX node, e.g. "mix(GatedMix)" */
  size_t input_count;
  const tessel_custom_tensor_t *inputs;
  size_t output_count;
  const tessel_custom_tensor_t *outputs;
  const void *attrs; /* opaque: the tessel_custom_attr_* functions read it */
} tessel_custom_call_t;

/* A CPU implementation: 0 on success; otherwise it may write a message
 * (NUL-terminated, at most error_size bytes) into `error`, which the run
 * reports as TESSEL_INTERNAL naming the step. Called from the thread that
 * runs the context; distinct contexts may call it concurrently. */
typedef int (*tessel_custom_cpu_fn)(const tessel_custom_call_t *call, void *user_data,
                                    char *error, size_t error_size);

/* Registers `fn` as the CPU implementation of domain/op_type for this
 * process. TESSEL_INVALID_ARGUMENT for NULL or empty arguments or an op
 * registered already. Thread-safe. */
TESSEL_API tessel_status_t tessel_register_custom_op(const char *domain, const char *op_type,
                                                     tessel_custom_cpu_fn fn, void *user_data);

/* A custom step's attribute by its ONNX name (the manifest's default when
 * the node has none): 1 and the value when the attribute exists with that
 * kind (int, float: an int attribute reads as a float too; ints, floats:
 * a pointer to `*count` values, valid during the call; string: a
 * NUL-terminated string), else 0 and the output untouched. */
TESSEL_API int tessel_custom_attr_int(const tessel_custom_call_t *call, const char *name,
                                      int64_t *value);
TESSEL_API int tessel_custom_attr_float(const tessel_custom_call_t *call, const char *name,
                                        double *value);
TESSEL_API int tessel_custom_attr_ints(const tessel_custom_call_t *call, const char *name,
                                       const int64_t **values, size_t *count);
TESSEL_API int tessel_custom_attr_floats(const tessel_custom_call_t *call, const char *name,
                                         const double **values, size_t *count);
TESSEL_API int tessel_custom_attr_string(const tessel_custom_call_t *call, const char *name,
                                         const char **value);

/* Devices.
 *
 * The runtime links no CUDA library: it opens the CUDA driver (libcuda.so.1)
 * with dlopen on first use and probes its devices once per process. Any of
 * the calls below, or creating a context with TESSEL_TIER_AUTO, SIMT or TC,
 * triggers the probe; TESSEL_TIER_CPU never does. All are thread-safe.
 *
 * Environment (read once, at the probe):
 *   TESSEL_LIBCUDA  the driver library to open instead of libcuda.so.1
 *                   (a path or a soname); tests use it to simulate a missing
 *                   or broken driver.
 *   TESSEL_QUIET=1  silences the one line a TESSEL_TIER_AUTO context prints
 *                   on stderr (once per process) when it runs on the cpu tier
 *                   although a GPU tier was looked for, naming the reason.
 * Environment read when a context with GPU steps is created:
 *   TESSEL_CUDA_GRAPH=0  never capture or replay CUDA graphs (every run
 *                        launches step by step).
 *   TESSEL_GPU_SYNC=1    synchronize after every GPU step, so that a kernel
 *                        fault names its step (slow; for debugging; implies
 *                        TESSEL_CUDA_GRAPH=0 and no overlapped launches).
 *   TESSEL_OVERLAP_LAUNCHES=0  never launch a kernel during the tail of the
 *                        one before it (on sm_90 and later, kernels whose
 *                        engine image waits for the grids before them are
 *                        launched so by default). */

/* NULL when the driver loaded, initialized and reports at least one device;
 * otherwise TESSEL_UNSUPPORTED with the reason, e.g. "no CUDA driver:
 * libcuda.so.1 not found (dlopen: ...)" or "cuInit failed:
 * CUDA_ERROR_NO_DEVICE (...)". Free it with tessel_status_free. */
TESSEL_API tessel_status_t tessel_driver_status(void);

/* The driver's CUDA version as cuDriverGetVersion reports it (12040 for
 * 12.4); 0 when no driver library could be loaded. */
TESSEL_API int tessel_driver_version(void);

/* The number of usable CUDA devices: 0 whenever tessel_driver_status fails. */
TESSEL_API size_t tessel_device_count(void);

typedef struct tessel_device_info_s {
  const char *name;                 /* e.g. "NVIDIA H100 80GB HBM3"; valid
                                       for the life of the process */
  int compute_capability_major;     /* 9 for sm_90 */
  int compute_capability_minor;     /* 0 for sm_90 */
  int sm_count;                     /* streaming multiprocessors */
  uint64_t memory_bytes;            /* total device memory */
  int tensor_cores;                 /* 1 if compute capability >= 7.0 */
} tessel_device_info_t;

/* Device `index` (0 .. tessel_device_count() - 1). TESSEL_INVALID_ARGUMENT
 * for a NULL info or an index out of range (the message says why there are
 * no devices, if so); *info is left untouched on failure. */
TESSEL_API tessel_status_t tessel_device_info(size_t index, tessel_device_info_t *info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_RUNTIME_H */
