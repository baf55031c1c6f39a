/* embed.c - a Tessel engine run from C through the installed runtime:
 * open the engine, bind each input (raw little-endian bytes read from a
 * file, of the input's size), run on the tier the machine has, print each
 * output (f32 values one per line).
 *
 *   embed ENGINE INPUT.bin...
 *
 * Built against the installed tree: find_package(Tessel) (CMakeLists.txt
 * here) or `cc embed.c $(pkg-config --cflags --libs tessel-runtime)`. */
#include <tessel_runtime.h>

#include <stdio.h>
#include <stdlib.h>

/* Prints a failed call's message and exits. */
static void check(tessel_status_t status, const char *what) {
  if (!status)
    return;
  fprintf(stderr, "%s: %s\n", what, tessel_status_message(status));
  tessel_status_free(status);
  exit(1);
}

/* The file's bytes, exactly `size` of them. */
static void *read_exactly(const char *path, size_t size) {
  FILE *file = fopen(path, "rb");
  char *data = malloc(size ? size : 1);
  size_t got = file && data ? fread(data, 1, size, file) : 0;
  int extra = file ? fgetc(file) : EOF;
  if (file)
    fclose(file);
  if (!data || got != size || extra != EOF) {
    fprintf(stderr, "%s: expected exactly %zu bytes\n", path, size);
    exit(1);
  }
  return data;
}

int main(int argc, char **argv) {
  tessel_engine_t *engine = NULL;
  tessel_context_t *context = NULL;
  tessel_tensor_info_t info;
  if (argc < 2) {
    fprintf(stderr, "usage: %s ENGINE INPUT.bin...\n", argv[0]);
    return 2;
  }
  check(tessel_engine_open_file(argv[1], &engine), "open");
  size_t inputs = tessel_engine_input_count(engine), outputs = tessel_engine_output_count(engine);
  if ((size_t)argc - 2 != inputs) {
    fprintf(stderr, "the engine has %zu inputs, %d files given\n", inputs, argc - 2);
    return 2;
  }
  check(tessel_context_create(engine, NULL, &context), "context");
  void **in = calloc(inputs, sizeof(void *)), **out = calloc(outputs, sizeof(void *));
  for (size_t i = 0; i < inputs; ++i) {
    check(tessel_engine_input_info(engine, i, &info), "input");
    in[i] = read_exactly(argv[2 + i], info.size_bytes);
    check(tessel_context_bind_input(context, i, in[i], info.size_bytes), "bind input");
  }
  for (size_t i = 0; i < outputs; ++i) {
    check(tessel_engine_output_info(engine, i, &info), "output");
    out[i] = malloc(info.size_bytes ? info.size_bytes : 1);
    check(tessel_context_bind_output(context, i, out[i], info.size_bytes), "bind output");
  }
  check(tessel_context_run(context), "run");
  printf("tier %s\n", tessel_context_tier(context));
  for (size_t i = 0; i < outputs; ++i) {
    check(tessel_engine_output_info(engine, i, &info), "output");
    printf("output %s %s", info.name, tessel_dtype_name(info.dtype));
    for (size_t d = 0; d < info.rank; ++d)
      printf("%s%lld", d ? "x" : " ", (long long)info.shape[d]);
    printf("\n");
    if (info.dtype == TESSEL_DTYPE_F32)
      for (size_t e = 0; e < info.size_bytes / sizeof(float); ++e)
        printf("%.9g\n", ((const float *)out[i])[e]);
  }
  for (size_t i = 0; i < inputs; ++i)
    free(in[i]);
  for (size_t i = 0; i < outputs; ++i)
    free(out[i]);
  free(in);
  free(out);
  tessel_context_release(context);
  tessel_engine_release(engine);
  return 0;
}
