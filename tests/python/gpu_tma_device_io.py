#!/usr/bin/python3
"""A TMA-fed conv whose tensor maps read a graph input bound on the device
(bindDevice encodes them again for each new address), on a GPU machine.

    gpu_tma_device_io.py ENGINE.tsl
(an engine compiled with --io-layout nhwc --io-dtype f16 whose conv reads
its input by TMA: tests/lit/tools/Inputs/pointwise_model.py.) For two
PyTorch tensors at two addresses, run_device's output must equal, bit for
bit, the host run's of another context on the same input (which reads the
context's own buffer).
"""
import sys

import numpy as np
import torch

import tessel

engine = tessel.Engine(sys.argv[1])
device, host = engine.context("tc"), engine.context("tc")
(xi,), (yi,) = engine.inputs, engine.outputs
print("engine:", xi, "->", yi, "tier", device.tier_summary)
kept = []
for seed in (0, 1):
    torch.manual_seed(seed)
    x = torch.randn(xi.shape, device="cuda", dtype=torch.float16)
    y = torch.full(yi.shape, float("nan"), device="cuda", dtype=torch.float16)
    kept.append(x)  # a new address each time: the maps are encoded again
    device.run_device([x], [y])
    torch.cuda.synchronize()
    (reference,) = host.run([x.cpu().numpy()])
    got = y.cpu().numpy()
    assert np.array_equal(got, reference), ("device run differs from the host run", seed)
    print("input at %#x: output equals the host run's" % x.data_ptr())
print("PASS")
