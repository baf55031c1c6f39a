//===- tessel-run.cpp - run an engine, write or compare its outputs -------===//
//
// Exit status: 0 ran (and every comparison passed); 1 a comparison failed;
// 2 usage; 3 the engine could not be opened or run, or inputs do not fit it.
//
//===----------------------------------------------------------------------===//
#include "ToolMain.h"
#include "TensorFiles.h"
#include "TierOption.h"
#include "tessel_runtime.h"

#include <CLI/CLI.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

namespace {

using tessel::tools::HostTensor;

enum Exit { kOk = 0, kMismatch = 1, kUsage = 2, kError = 3 };

// Owns a status and prints it; true if the call failed.
bool failed(tessel_status_t status, const char *what) {
  if (!status)
    return false;
  std::fprintf(stderr, "error: %s: %s\n", what, tessel_status_message(status));
  tessel_status_free(status);
  return true;
}

HostTensor fromInfo(const tessel_tensor_info_t &info) {
  HostTensor t;
  t.name = info.name;
  t.dtype = info.dtype;
  t.shape.assign(info.shape, info.shape + info.rank);
  t.data.resize(info.size_bytes);
  return t;
}

bool isFloat(tessel_dtype_t dtype) {
  return dtype == TESSEL_DTYPE_F32 || dtype == TESSEL_DTYPE_F16 || dtype == TESSEL_DTYPE_F64 ||
         dtype == TESSEL_DTYPE_BF16;
}

// "f16[1,224,224,3] NHWC": what the engine takes or gives, layout included.
std::string describe(const tessel_tensor_info_t &info) {
  std::vector<int64_t> shape(info.shape, info.shape + info.rank);
  std::string text = tessel::tools::shapeText(info.dtype, shape);
  return *info.layout ? text + " " + info.layout : text;
}

/// The ONNX node names of a step's location, "a(Conv)+b(Relu)" -> a, b (the
/// name is what precedes a node's "(OpType)"; tessel-compile --fp32-nodes
/// takes them).
std::vector<std::string> locationNodes(const std::string &location) {
  std::vector<std::string> nodes;
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find(")+", start);
    std::string part = location.substr(start, end == std::string::npos ? end : end + 1 - start);
    size_t open = part.rfind('(');
    if (open != std::string::npos && open > 0)
      nodes.push_back(part.substr(0, open));
    if (end == std::string::npos)
      break;
    start = end + 2;
  }
  return nodes;
}

struct Comparison {
  double maxAbs = 0, maxRel = 0;
  int64_t mismatches = 0;
};

Comparison compare(const HostTensor &actual, const HostTensor &expected, double rtol,
                   double atol) {
  Comparison c;
  for (int64_t i = 0, n = actual.numElements(); i < n; ++i) {
    double a = tessel::tools::elementAsDouble(actual, i);
    double e = tessel::tools::elementAsDouble(expected, i);
    if (std::isnan(a) && std::isnan(e))
      continue;
    if (std::isinf(a) && std::isinf(e) && (a > 0) == (e > 0))
      continue;
    double diff = std::fabs(a - e);
    if (std::isnan(diff))
      diff = INFINITY;
    c.maxAbs = std::max(c.maxAbs, diff);
    if (e != 0)
      c.maxRel = std::max(c.maxRel, diff / std::fabs(e));
    if (!(diff <= atol + rtol * std::fabs(e)))
      ++c.mismatches;
  }
  return c;
}

void printValues(const HostTensor &t, int64_t limit) {
  int64_t n = t.numElements();
  std::printf("  [");
  for (int64_t i = 0; i < n && i < limit; ++i)
    std::printf("%s%.6g", i ? ", " : "", tessel::tools::elementAsDouble(t, i));
  std::printf("%s]\n", n > limit ? ", ..." : "");
}

} // namespace

static int toolMain(int argc, char **argv) {
  CLI::App app{"tessel-run: run a Tessel engine"};
  std::string enginePath, outputDir, outputFormat = "pb", tier = "auto";
  std::vector<std::string> inputs, expected;
  bool random = false, print = false;
  uint64_t seed = 0;
  double rtol = 1e-3, atol = 1e-7;
  int iterations = 1;
  app.add_option("engine", enginePath, "engine file (.tsl)")->required();
  app.add_option("inputs", inputs, "input tensors (.pb TensorProto or .npy), in engine input order");
  app.add_flag("--random", random, "random inputs instead of files");
  app.add_option("--seed", seed, "seed for --random");
  app.add_option("--output-dir", outputDir, "write each output to DIR/output_N.{pb,npy}");
  app.add_option("--output-format", outputFormat, "pb or npy")->check(CLI::IsMember({"pb", "npy"}));
  app.add_option("--compare", expected, "expected outputs (.pb or .npy), in engine output order");
  app.add_option("--rtol", rtol, "relative tolerance for --compare");
  app.add_option("--atol", atol, "absolute tolerance for --compare");
  app.add_option("--tier", tier,
                 "execution tier: auto (the best per step), cpu, simt (CUDA cores, else cpu "
                 "per step), tc (Tensor Cores, else simt, else cpu per step), or tc-sm80 / "
                 "tc-sm70 (as tc, no Tensor Core tier newer than that)")
      ->check(CLI::IsMember(tessel::tools::tierNames()));
  app.add_option("--iterations", iterations,
                 "runs to time; prints the median wall-clock time of run() (which returns "
                 "with the outputs in host memory); the last run's outputs are kept")
      ->check(CLI::PositiveNumber);
  long profile = -1;
  app.add_option("--profile", profile,
                 "the batch profile to run (tessel-compile --batch); by default the one whose "
                 "first input has the shape of the first input file, else profile 0")
      ->check(CLI::NonNegativeNumber);
  bool verbose = false, checkOverflow = false;
  std::string overflowReport;
  app.add_flag("-v,--verbose", verbose, "print the tier and kernel each step runs on");
  app.add_flag("--check-overflow", checkOverflow,
               "first run step by step on the cpu tier and name each step whose float "
               "results hold an infinity or NaN its operands did not (an f16 overflow), then "
               "each whose f16 results are mostly subnormals where its operands were not (an "
               "f16 underflow): exit 1 if there is one, and print the tessel-compile "
               "--fp32-nodes that keeps their nodes in f32");
  app.add_option("--overflow-report", overflowReport,
                 "with --check-overflow: write those nodes' names to FILE, one a line "
                 "(tessel-compile --fp32-nodes @FILE)");
  app.add_flag("--print", print, "print output values");
  std::vector<std::string> customOpLibs;
  app.add_option("--custom-op-lib", customOpLibs,
                 "a shared library of custom ops' CPU implementations: tessel-run calls its "
                 "`int tessel_custom_ops_init(void)`, which registers them "
                 "(tessel_register_custom_op); repeatable")
      ->type_name("LIB.so");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? kOk : kUsage;
  }

  if (checkOverflow && tier != "auto" && tier != "cpu") {
    std::fprintf(stderr, "error: --check-overflow runs on the cpu tier (whose kernels store f16 "
                         "as the GPU tiers do), not on --tier %s\n", tier.c_str());
    return kUsage;
  }
  if (checkOverflow)
    tier = "cpu";
  if (!overflowReport.empty() && !checkOverflow) {
    std::fprintf(stderr, "error: --overflow-report needs --check-overflow\n");
    return kUsage;
  }

  for (const std::string &path : customOpLibs) {
    // Kept loaded for the process's life: the runtime holds its functions.
    void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      std::fprintf(stderr, "error: --custom-op-lib %s: %s\n", path.c_str(), dlerror());
      return kError;
    }
    using Init = int (*)();
    auto init = reinterpret_cast<Init>(dlsym(library, "tessel_custom_ops_init"));
    if (!init) {
      std::fprintf(stderr, "error: --custom-op-lib %s: no function tessel_custom_ops_init\n",
                   path.c_str());
      return kError;
    }
    if (int code = init(); code != 0) {
      std::fprintf(stderr, "error: --custom-op-lib %s: tessel_custom_ops_init failed (%d)\n",
                   path.c_str(), code);
      return kError;
    }
  }

  tessel_engine_t *engineRaw = nullptr;
  if (failed(tessel_engine_open_file(enginePath.c_str(), &engineRaw), enginePath.c_str()))
    return kError;
  std::unique_ptr<tessel_engine_t, decltype(&tessel_engine_release)> engine(
      engineRaw, tessel_engine_release);

  // The profile: as asked, or by the first input file's shape.
  size_t profileCount = tessel_engine_profile_count(engine.get());
  size_t chosen = profile >= 0 ? static_cast<size_t>(profile) : 0;
  if (profile < 0 && profileCount > 1 && !random && !inputs.empty() &&
      tessel_engine_input_count(engine.get()) > 0) {
    HostTensor first;
    std::string error;
    if (!tessel::tools::readTensorFile(inputs[0], first, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return kError;
    }
    if (failed(tessel_engine_find_profile(engine.get(), 0, first.shape.data(), first.shape.size(),
                                          &chosen),
               inputs[0].c_str()))
      return kError;
  }
  if (chosen != 0 || profileCount > 1) {
    tessel_engine_t *profileRaw = nullptr;
    if (failed(tessel_engine_profile(engine.get(), chosen, &profileRaw), "--profile"))
      return kError;
    engine.reset(profileRaw);
    std::printf("profile %zu of %zu\n", chosen, profileCount);
  }

  size_t inputCount = tessel_engine_input_count(engine.get());
  size_t outputCount = tessel_engine_output_count(engine.get());
  if (!random && inputs.size() != inputCount) {
    std::fprintf(stderr, "error: the engine takes %zu input(s), %zu given (or use --random)\n",
                 inputCount, inputs.size());
    return kUsage;
  }
  if (!expected.empty() && expected.size() != outputCount) {
    std::fprintf(stderr, "error: the engine has %zu output(s), %zu expected given\n",
                 outputCount, expected.size());
    return kUsage;
  }

  tessel_tier_t tierValue = tessel::tools::parseTier(tier);
  tessel_context_options_t options{tierValue};
  tessel_context_t *contextRaw = nullptr;
  if (failed(tessel_context_create(engine.get(), &options, &contextRaw), "cannot create a context"))
    return kError;
  std::unique_ptr<tessel_context_t, decltype(&tessel_context_release)> context(
      contextRaw, tessel_context_release);

  std::mt19937_64 rng(seed);
  std::vector<HostTensor> inputTensors(inputCount);
  for (size_t i = 0; i < inputCount; ++i) {
    tessel_tensor_info_t info;
    if (failed(tessel_engine_input_info(engine.get(), i, &info), "input info"))
      return kError;
    HostTensor wanted = fromInfo(info);
    std::printf("input %zu '%s' %s\n", i, info.name, describe(info).c_str());
    if (random) {
      tessel::tools::fillRandom(wanted, rng);
      inputTensors[i] = std::move(wanted);
    } else {
      std::string error;
      if (!tessel::tools::readTensorFile(inputs[i], inputTensors[i], error)) {
        std::fprintf(stderr, "error: %s\n", error.c_str());
        return kError;
      }
      if (inputTensors[i].dtype != wanted.dtype || inputTensors[i].shape != wanted.shape) {
        std::fprintf(stderr, "error: input %zu '%s' expects %s, '%s' holds %s\n", i,
                     info.name, describe(info).c_str(), inputs[i].c_str(),
                     inputTensors[i].describe().c_str());
        return kError;
      }
    }
    if (failed(tessel_context_bind_input(context.get(), i, inputTensors[i].data.data(),
                                         inputTensors[i].data.size()),
               "bind input"))
      return kError;
  }

  std::vector<HostTensor> outputTensors(outputCount);
  std::vector<std::string> outputText(outputCount);
  for (size_t i = 0; i < outputCount; ++i) {
    tessel_tensor_info_t info;
    if (failed(tessel_engine_output_info(engine.get(), i, &info), "output info"))
      return kError;
    outputTensors[i] = fromInfo(info);
    outputText[i] = describe(info);
    // Poison: an output element the engine forgets to write cannot pass.
    std::fill(outputTensors[i].data.begin(), outputTensors[i].data.end(), 0xff);
    if (failed(tessel_context_bind_output(context.get(), i, outputTensors[i].data.data(),
                                          outputTensors[i].data.size()),
               "bind output"))
      return kError;
  }

  int exitCode = kOk;
  if (checkOverflow) {
    // Two runs step by step: the overflows, then the underflows.
    struct Check {
      const char *kind, *what;
      tessel_status_t (*find)(tessel_context_t *, size_t *, size_t, size_t *);
    };
    const Check checks[] = {
        {"overflow", "a float result holds inf or NaN, its operands do not",
         tessel_context_find_nonfinite},
        {"underflow", "an f16 result's nonzero values are at least 1% subnormals (|x| < 2^-14), its "
                      "operands' are not",
         tessel_context_find_underflow}};
    std::vector<std::string> nodes; // the ONNX nodes of every step found
    size_t total = 0;
    for (const Check &check : checks) {
      std::vector<size_t> found(tessel_context_step_count(context.get()));
      size_t count = 0;
      if (failed(check.find(context.get(), found.data(), found.size(), &count),
                 "--check-overflow"))
        return kError;
      for (size_t i = 0; i < count; ++i) {
        tessel_step_info_t step;
        if (failed(tessel_context_step_info(context.get(), found[i], &step), "step info"))
          return kError;
        std::printf("%s: step %zu %s at %s: %s\n", check.kind, found[i], step.op, step.location,
                    check.what);
        // Its location names its ONNX nodes: "a(Conv)+b(Relu)".
        for (const std::string &node : locationNodes(step.location))
          if (std::find(nodes.begin(), nodes.end(), node) == nodes.end())
            nodes.push_back(node);
      }
      if (count == 0)
        std::printf("%s: none\n", check.kind);
      total += count;
    }
    std::string list;
    for (const std::string &node : nodes)
      list += (list.empty() ? "" : ",") + node;
    if (total)
      std::printf("f16 range: %zu step(s); keep their nodes in f32: tessel-compile ... "
                  "--fp32-nodes %s\n",
                  total, list.c_str());
    if (!overflowReport.empty()) {
      std::FILE *f = std::fopen(overflowReport.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "error: cannot write %s\n", overflowReport.c_str());
        return kError;
      }
      for (const std::string &node : nodes)
        std::fprintf(f, "%s\n", node.c_str());
      std::fclose(f);
    }
    if (total)
      exitCode = kMismatch;
  }

  std::vector<double> times;
  for (int it = 0; it < iterations; ++it) {
    auto start = std::chrono::steady_clock::now();
    if (failed(tessel_context_run(context.get()), "run"))
      return kError;
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("tier: %s\n", tessel_context_tier_summary(context.get()));
  if (verbose)
    for (size_t i = 0, n = tessel_context_step_count(context.get()); i < n; ++i) {
      tessel_step_info_t step;
      if (failed(tessel_context_step_info(context.get(), i, &step), "step info"))
        return kError;
      std::printf("  [%zu] %s at %s: %s (%s)%s%s\n", i, step.op, step.location, step.tier,
                  step.kernel, *step.reason ? ": " : "", step.reason);
    }
  std::printf("time: median %.3f ms over %d run(s)\n", times[times.size() / 2], iterations);

  // An output with a data-dependent extent keeps the prefix the last run
  // filled (the rest of its buffer is the bound's padding).
  for (size_t i = 0; i < outputCount; ++i) {
    HostTensor &out = outputTensors[i];
    if (tessel_engine_output_dynamic_axis(engine.get(), i) < 0)
      continue;
    std::vector<int64_t> shape(out.shape.size());
    if (failed(tessel_context_output_shape(context.get(), i, shape.data(), shape.size()),
               "output shape"))
      return kError;
    outputText[i] = tessel::tools::shapeText(out.dtype, shape) + " (bound " +
                    tessel::tools::shapeText(out.dtype, out.shape) + ")";
    out.shape = shape;
    out.data.resize(static_cast<size_t>(out.numElements()) * tessel_dtype_size(out.dtype));
  }

  for (size_t i = 0; i < outputCount; ++i) {
    const HostTensor &out = outputTensors[i];
    std::printf("output %zu '%s' %s", i, out.name.c_str(), outputText[i].c_str());
    if (!expected.empty()) {
      HostTensor want;
      std::string error;
      if (!tessel::tools::readTensorFile(expected[i], want, error)) {
        std::printf("\n");
        std::fprintf(stderr, "error: %s\n", error.c_str());
        return kError;
      }
      // A float output is compared by value with a float reference of any
      // width: an engine built with --io-dtype f16 against a model's f32.
      bool comparable = want.dtype == out.dtype || (isFloat(want.dtype) && isFloat(out.dtype));
      if (want.shape != out.shape || !comparable) {
        std::printf(": FAIL (expected %s)\n", want.describe().c_str());
        exitCode = kMismatch;
        continue;
      }
      if (want.dtype != out.dtype)
        std::printf(" vs %s", want.describe().c_str());
      Comparison c = compare(out, want, rtol, atol);
      std::printf(": max_abs_err=%.3g max_rel_err=%.3g (rtol=%g atol=%g) %s", c.maxAbs,
                  c.maxRel, rtol, atol, c.mismatches ? "FAIL" : "PASS");
      if (c.mismatches) {
        std::printf(" (%lld of %lld elements outside tolerance)", (long long)c.mismatches,
                    (long long)out.numElements());
        exitCode = kMismatch;
      }
    }
    std::printf("\n");
    if (print)
      printValues(out, 64);
    if (!outputDir.empty()) {
      std::string path = outputDir + "/output_" + std::to_string(i) + "." + outputFormat;
      std::string error;
      if (!tessel::tools::writeTensorFile(path, out, error)) {
        std::fprintf(stderr, "error: %s\n", error.c_str());
        return kError;
      }
    }
  }
  return exitCode;
}

int main(int argc, char **argv) {
  return tessel::tools::guardedMain("tessel-run", kError, [&] { return toolMain(argc, argv); });
}
