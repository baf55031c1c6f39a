#!/usr/bin/env python3
"""PyTorch's peer of the attention kernel's timing (tessel-gpu-attention-check
--bench, codegen/cuda/kernels/Attention.cuh): F.scaled_dot_product_attention
on the same shapes (f16, no mask; causal where stated), the median of 100
calls, each between two CUDA events, after 10 warm-up calls, as the check
times its kernel; the default backend choice, then each backend forced.
Run on the GPU machine beside the check (gpu-run/run.sh does), so that both
figures come from the same run:

    python3 attention-sdpa.py
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend


def median_ms(fn, reps=100):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


print("torch", torch.__version__, torch.cuda.get_device_name())
# The two shapes, then BERT-base b8's and ViT-B/16 b32's own.
for b, h, s, d, causal in [(8, 12, 512, 64, False), (1, 16, 2048, 128, True),
                           (8, 12, 128, 64, False), (32, 12, 197, 64, False)]:
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16, generator=g)
               for _ in range(3))
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    name = "b%d h%d s%d d%d%s" % (b, h, s, d, " causal" if causal else "")
    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    print("sdpa %s (default): median %.4f ms, %.1f TFLOP/s" % (name, ms, flops / ms / 1e9))
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                    SDPBackend.CUDNN_ATTENTION):
        try:
            with sdpa_kernel(backend):
                ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            print("sdpa %s (%s): median %.4f ms, %.1f TFLOP/s" % (name, backend.name, ms,
                                                                 flops / ms / 1e9))
        except Exception as e:  # a backend that does not take the shape
            print("sdpa %s (%s): unavailable: %s" % (name, backend.name, str(e).splitlines()[0]))
