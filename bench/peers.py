#!/usr/bin/python3
"""The PyTorch peers of the benchmark suites, timed as tessel-bench times
Tessel: a CUDA-event pair around each single launch on the current stream,
waited for before the next, median over the timed iterations after the
warm-up, inputs rotated over as many buffer sets as tessel-bench used.

    gemm    torch.matmul on f16 CUDA tensors with the row's transposes (cuBLAS)
    conv    torch.nn.functional.conv2d, f16, channels_last (cuDNN,
            cudnn.benchmark on, warmed)
            Both captured in one CUDA graph per rotated set and replayed, as
            tessel-bench replays Tessel's: timed eagerly, a small op's time
            is mostly PyTorch's dispatch on the host (ResNet-50 b1's first
            1x1 conv on the H100, 2026-11-23: 39.5 us eager, 17.1 us
            replayed), which is no peer's kernel.
    models  eager channels_last f16, its CUDA-graph replay, torch.compile
            (default mode) and torch.compile followed by CUDA-graph capture of
            the compiled module (the strongest configuration a PyTorch user
            picks: Inductor's kernels without the launch overhead). Both
            compiled peers run in a child process with a time limit:
            `python3 bench/peers.py compile MODEL BATCH ...` prints one JSON
            line, the graph replay's result under "graph".

Also the roofline's two lines: device-to-device copy bandwidth and cuBLAS's
f16 8192^3 TFLOP/s. Needs torch with CUDA (the device machine).
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suites  # noqa: E402


def time_launches(launch, rotation, warmup, iterations):
    """launch(i) enqueues one run on input set i; returns {median_ms, min_ms,
    max_ms, mean_ms, warmup, iterations, rotation}. Every set is warmed up at
    least once."""
    rotation = max(1, rotation)
    for i in range(max(warmup, rotation)):
        launch(i % rotation)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(iterations):
        start.record()
        launch(i % rotation)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "mean_ms": statistics.fmean(times), "warmup": warmup, "iterations": iterations,
            "rotation": rotation}


def graph_replays(launch, rotation):
    """replay(i) of one CUDA graph per rotated set i, each capturing launch(i):
    the peer's launch overhead as small as Tessel's (tessel-bench replays its
    own graph). launch runs eagerly first, on a side stream, so that cuDNN's
    benchmark search and cuBLAS's workspace set-up happen outside capture."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(rotation):
            for _ in range(2):
                launch(i)
    torch.cuda.current_stream().wait_stream(stream)
    graphs = []
    for i in range(rotation):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            launch(i)
        graphs.append(graph)
    return lambda i: graphs[i].replay()


def _randn(shape, **kw):
    return torch.randn(*shape, device="cuda", dtype=torch.float16, **kw)


def gemm(row, rotation, warmup, iterations):
    """torch.matmul(A', B') with A, B and the output rotated; A' and B' are
    transposed views when a_t/b_t, so cuBLAS gets the transposes."""
    a_shape, b_shape = suites.gemm_shapes(row)
    sets = [(_randn(a_shape), _randn(b_shape),
             torch.empty(row["m"], row["n"], device="cuda", dtype=torch.float16))
            for _ in range(rotation)]

    def launch(i):
        a, b, y = sets[i]
        torch.matmul(a.t() if row["a_t"] else a, b.t() if row["b_t"] else b, out=y)

    result = time_launches(graph_replays(launch, rotation), rotation, warmup, iterations)
    result["name"] = "torch.matmul (cuBLAS), CUDA graph replay"
    return result


def conv(row, rotation, warmup, iterations):
    """conv2d on channels_last f16, cuDNN's algorithm chosen by
    cudnn.benchmark (its search runs in the warm-up); the input rotated, the
    weight shared (as Tessel's)."""
    torch.backends.cudnn.benchmark = True
    fmt = torch.channels_last
    w = _randn((row["k"], row["c"], row["r"], row["s"])).to(memory_format=fmt)
    xs = [_randn((row["n"], row["c"], row["h"], row["w"])).to(memory_format=fmt)
          for _ in range(rotation)]
    stride, padding = (row["stride_h"], row["stride_w"]), (row["pad_h"], row["pad_w"])

    def launch(i):
        torch.nn.functional.conv2d(xs[i], w, stride=stride, padding=padding)

    with torch.no_grad():
        result = time_launches(graph_replays(launch, rotation), rotation, warmup, iterations)
    result["name"] = "F.conv2d channels_last (cuDNN), CUDA graph replay"
    return result


def _model_inputs(row, rotation):
    module, shape = suites.build_torch_model(row["model"], row["batch"])
    module = module.cuda().half()
    image = len(shape) == 4
    if image:
        module = module.to(memory_format=torch.channels_last)
    xs = [suites.model_input(row["model"], shape, "cuda", torch.float16) for _ in range(rotation)]
    if image:
        xs = [x.to(memory_format=torch.channels_last) for x in xs]
    return module, xs


def model_eager_and_graph(row, rotation, warmup, iterations):
    """{'eager': ..., 'cuda_graph': ...}: the f16 module (channels_last for
    images), and one CUDA graph per rotated input replayed."""
    results = {}
    module, xs = _model_inputs(row, rotation)
    with torch.no_grad():
        results["eager"] = time_launches(lambda i: module(xs[i]), rotation, warmup, iterations)
        results["eager"]["name"] = "PyTorch eager f16"
        try:
            replay = graph_replays(lambda i: module(xs[i]), rotation)
            results["cuda_graph"] = time_launches(replay, rotation, warmup, iterations)
            results["cuda_graph"]["name"] = "PyTorch eager f16, CUDA graph replay"
        except Exception as e:  # noqa: BLE001 (capture can fail on some modules)
            results["cuda_graph"] = {"name": "PyTorch CUDA graph", "error": repr(e)[:500]}
    return results  # the caller empties the cache


def model_compiled(row, rotation, warmup, iterations):
    """torch.compile (default mode) of the f16 module; compile_s is the first
    call (Inductor's compile)."""
    module, xs = _model_inputs(row, rotation)
    compiled = torch.compile(module)
    with torch.no_grad():
        start = time.time()
        compiled(xs[0])
        torch.cuda.synchronize()
        compile_s = time.time() - start
        result = time_launches(lambda i: compiled(xs[i]), rotation, warmup, iterations)
        try:
            replay = graph_replays(lambda i: compiled(xs[i]), rotation)
            graph = time_launches(replay, rotation, warmup, iterations)
            graph["name"] = "torch.compile (default mode) f16, CUDA graph replay"
        except Exception as e:  # noqa: BLE001 (capture can fail on some modules)
            graph = {"name": "torch.compile + CUDA graph", "error": repr(e)[:500]}
    result["name"] = "torch.compile (default mode) f16"
    result["compile_s"] = round(compile_s, 1)
    result["graph"] = graph
    return result


def copy_gbps(nbytes=1 << 30, iterations=20):
    """Device-to-device copy_ of NBYTES: read + write bytes per second (GB/s)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    r = time_launches(lambda i: dst.copy_(src), 1, 3, iterations)
    return 2 * nbytes / (r["median_ms"] * 1e6)


def cublas_peak_tflops(n=8192, iterations=20):
    a, b = _randn((n, n)), _randn((n, n))
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    r = time_launches(lambda i: torch.matmul(a, b, out=c), 1, 3, iterations)
    return 2.0 * n ** 3 / (r["median_ms"] * 1e9)


def _cublas_version():
    """cuBLAS's version as loaded by torch (cublasGetProperty), else the
    pip package's, else None."""
    try:
        import ctypes
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcublas.so" in line}
        for path in paths:
            lib = ctypes.CDLL(path)
            parts = []
            for prop in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
                value = ctypes.c_int()
                if lib.cublasGetProperty(prop, ctypes.byref(value)) != 0:
                    break
                parts.append(str(value.value))
            if len(parts) == 3:
                return ".".join(parts)
    except Exception:  # noqa: BLE001
        pass
    try:
        from importlib import metadata
        for dist in metadata.distributions():
            if (dist.metadata["Name"] or "").lower().startswith("nvidia-cublas"):
                return dist.version
    except Exception:  # noqa: BLE001
        pass
    return None


def versions():
    torch.matmul(_randn((16, 16)), _randn((16, 16)))  # loads cuBLAS
    torch.cuda.synchronize()
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "cublas": _cublas_version(),
            "gpu": torch.cuda.get_device_name()}


def main(argv=None):
    ap = argparse.ArgumentParser(description="torch.compile peer of a models-suite row, "
                                             "one JSON line on stdout")
    ap.add_argument("what", choices=["compile"])
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("--rotation", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    args = ap.parse_args(argv)
    row = {"model": args.model, "batch": args.batch}
    result = model_compiled(row, args.rotation, args.warmup, args.iterations)
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
