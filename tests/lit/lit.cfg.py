# lit configuration for Tessel's FileCheck tests. Parameters come from ctest
# (tests/lit/CMakeLists.txt): tessel_bin_dir, llvm_bin_dir, conformance_dir.
import os
import lit.formats

config.name = "tessel"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
# Outputs go to the build tree, never next to the sources.
config.test_exec_root = lit_config.params.get("exec_root", os.path.join(config.test_source_root, "Output"))

params = lit_config.params
tessel_bin = os.path.abspath(params.get("tessel_bin_dir", "."))
llvm_bin = params.get("llvm_bin_dir", "/usr/lib/llvm-19/bin")
conformance = params.get("conformance_dir", "")

config.environment["PATH"] = os.pathsep.join(
    [tessel_bin, llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%tessel_compile", os.path.join(tessel_bin, "tessel-compile")))
config.substitutions.append(("%tessel_opt", os.path.join(tessel_bin, "tessel-opt")))
config.substitutions.append(("%tessel_run", os.path.join(tessel_bin, "tessel-run")))
config.substitutions.append(("%tessel_inspect", os.path.join(tessel_bin, "tessel-inspect")))
config.substitutions.append(("%tessel_bench", os.path.join(tessel_bin, "tessel-bench")))
config.substitutions.append(("%conformance", conformance))
config.substitutions.append(("%python", "/usr/bin/python3"))
# The custom op example (examples/custom_op): its sources and its CPU
# implementation, a shared library for tessel-run --custom-op-lib.
config.substitutions.append(("%examples", os.path.join(os.path.dirname(config.test_source_root), "..", "examples")))
config.substitutions.append(("%custom_op_lib", os.path.abspath(params.get(
    "custom_op_lib", os.path.join(tessel_bin, "..", "examples", "custom_op", "libtessel_example_gated_mix.so")))))

# CUDA's ptxas checks that generated PTX assembles (tests/lit/codegen); where it
# is absent those tests are UNSUPPORTED, and the run says why.
ptxas = params.get("ptxas", "/usr/local/cuda/bin/ptxas")
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
else:
    lit_config.note("ptxas not found at " + ptxas + ": PTX assembly tests are UNSUPPORTED")

# A usable CUDA device (the driver loads, initializes and reports one): the
# "gpu" feature, for tests whose expectations differ with and without one.
def has_gpu():
    import ctypes
    try:
        cuda = ctypes.CDLL(os.environ.get("TESSEL_LIBCUDA") or "libcuda.so.1")
        count = ctypes.c_int(0)
        return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 \
            and count.value > 0
    except (OSError, AttributeError):
        return False

if has_gpu():
    config.available_features.add("gpu")

# The sanitizer tree's tools (scripts/sanitize.sh passes sanitizers=1): the
# "asan" feature, for the one test ASan cannot model (an impossible
# allocation, which AddressSanitizer reports and aborts on where a release
# build throws std::bad_alloc and the tool says "out of memory").
if params.get("sanitizers", "0") == "1":
    config.available_features.add("asan")
