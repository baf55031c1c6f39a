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
 *   distinct contexts concurrently for parallelism.
 * - Memory: a context allocates its activation arena once, at creation;
 *   tessel_context_run allocates nothing.
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

typedef enum tessel_status_code_e {
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
typedef enum tessel_dtype_e {
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

typedef enum tessel_tier_e {
  TESSEL_TIER_AUTO = 0, /* the best tier the machine supports, per step */
  TESSEL_TIER_CPU = 1,  /* reference kernels on the host */
  TESSEL_TIER_SIMT = 2, /* CUDA cores */
  TESSEL_TIER_TC = 3    /* Tensor Cores */
} tessel_tier_t;

typedef struct tessel_context_options_s {
  tessel_tier_t tier;
} tessel_context_options_t;

/* options may be NULL (TESSEL_TIER_AUTO). Forcing a tier the machine or the
 * engine lacks is TESSEL_UNSUPPORTED, with the reason. */
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
/* Runs every step; fails if an input or output is unbound. */
TESSEL_API tessel_status_t tessel_context_run(tessel_context_t *context);
/* The tier the context runs on: "cpu", "simt" or "tc". */
TESSEL_API const char *tessel_context_tier(const tessel_context_t *context);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSEL_RUNTIME_H */
