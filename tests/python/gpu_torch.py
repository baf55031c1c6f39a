#!/usr/bin/python3
"""The Python API with PyTorch CUDA tensors (issue 18), on a GPU machine:

- run_device binds the tensors in place: each keeps its device pointer (no
  copy), and the output equals the host run's (context.run on numpy arrays
  of the same engine and tier) bit for bit;
- enqueue on a PyTorch stream is ordered with PyTorch's work on it: the
  input is written by a PyTorch kernel on the stream just before, the output
  read by one just after, with no synchronization in between, repeated with
  changing inputs; CUDA events recorded around the enqueue on that stream
  time it;
- enqueue on stream 0 is the same with PyTorch's default stream (CUDA's
  default stream), and events recorded on it around the enqueue measure
  the work (issue 18: with 0 as the context's own stream they measured
  nothing).

    gpu_torch.py ENGINE.tsl [TESSEL_RUN]
(an f32-in, f32-out engine with GPU steps; with TESSEL_RUN, the device run's
output must also equal what tessel-run writes for the same input on the
same tier)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

import tessel

engine = tessel.Engine(sys.argv[1])
context = engine.context("tc")
host = engine.context("tc")
(xi,), (yi,) = engine.inputs, engine.outputs
print("engine:", xi, "->", yi, "tier", context.tier_summary)

torch.manual_seed(0)
x = torch.randn(xi.shape, device="cuda", dtype=torch.float32)
y = torch.empty(yi.shape, device="cuda", dtype=torch.float32)
x_ptr, y_ptr = x.data_ptr(), y.data_ptr()
context.run_device([x], [y])
torch.cuda.synchronize()
assert x.data_ptr() == x_ptr and y.data_ptr() == y_ptr, "a tensor moved"
(reference,) = host.run([x.cpu().numpy()])
got = y.cpu().numpy()
assert np.array_equal(got, reference), ("device run differs from the host run",
                                        np.abs(got - reference).max())
print("run_device: pointers kept (x %#x, y %#x), output equals the host run's" % (x_ptr, y_ptr))


class DLPackOnly:
    """A CUDA tensor seen through DLPack alone (as JAX's or TensorFlow's
    arrays are): no __cuda_array_interface__."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


y2 = torch.full(yi.shape, -1.0, device="cuda")
context.run_device([DLPackOnly(x)], [DLPackOnly(y2)])
torch.cuda.synchronize()
assert np.array_equal(y2.cpu().numpy(), reference), "the DLPack-bound run differs"
print("run_device through DLPack alone: output equals the host run's")
if len(sys.argv) > 2:
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), x.cpu().numpy())
        subprocess.run([sys.argv[2], sys.argv[1], os.path.join(tmp, "x.npy"), "--tier", "tc",
                        "--output-dir", tmp, "--output-format", "npy"], check=True,
                       stdout=subprocess.DEVNULL)
        by_tool = np.load(os.path.join(tmp, "output_0.npy"))
    assert np.array_equal(got, by_tool), ("device run differs from tessel-run's",
                                          np.abs(got - by_tool).max())
    print("run_device: output equals tessel-run's on the same input and tier")

# enqueue on a PyTorch stream, ordered with PyTorch's kernels on it.
stream = torch.cuda.Stream()
base = torch.randn(xi.shape, device="cuda")
results = []
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
with torch.cuda.stream(stream):
    for k in range(5):
        x.copy_(base * (k + 1))           # PyTorch writes the input on the stream
        if k == 4:
            start.record(stream)
        context.enqueue([x], [y], stream)  # Tessel's run on the same stream
        if k == 4:
            end.record(stream)
        results.append(y.clone())         # PyTorch reads the output on the stream
stream.synchronize()
for k, r in enumerate(results):
    (expected,) = host.run([(base * (k + 1)).cpu().numpy()])
    assert np.array_equal(r.cpu().numpy(), expected), ("enqueue %d out of order" % k,
                                                       np.abs(r.cpu().numpy() - expected).max())
print("enqueue on a torch stream: 5 runs ordered with PyTorch's writes and reads; "
      "the last timed by events on the stream: %.3f ms" % start.elapsed_time(end))

# enqueue on stream 0: CUDA's default stream, PyTorch's default stream. The
# same pattern with PyTorch on its default stream and no synchronization;
# events recorded on the default stream around the enqueue time its work.
assert torch.cuda.current_stream().cuda_stream == 0
results = []
for k in range(5):
    x.copy_(base * (k + 2))
    if k == 4:
        start.record()
    context.enqueue([x], [y], 0)
    if k == 4:
        end.record()
    results.append(y.clone())
torch.cuda.synchronize()
for k, r in enumerate(results):
    (expected,) = host.run([(base * (k + 2)).cpu().numpy()])
    assert np.array_equal(r.cpu().numpy(), expected), ("default-stream enqueue %d out of order"
                                                       % k)
elapsed = start.elapsed_time(end)
assert elapsed > 0, "the events around enqueue(0) measured nothing"
print("enqueue on stream 0: 5 runs ordered with PyTorch's default stream; events around the "
      "last: %.3f ms" % elapsed)
own = context.stream
assert own not in (0, stream.cuda_stream)
print("context.stream: its own stream %#x" % own)
print("PASS gpu_torch")
