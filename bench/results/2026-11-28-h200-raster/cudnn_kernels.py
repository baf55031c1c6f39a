# Which kernels cuDNN runs for ResNet-50 b256's convs (channels_last f16), by name and time.
import torch, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark = True
convs = {"l1.3x3": (56, 64, 64, 3, 1), "l2.3x3": (28, 128, 128, 3, 1), "l3.reduce_first": (28, 512, 256, 1, 1),
         "l2.expand": (28, 128, 512, 1, 1), "l4.reduce": (7, 2048, 512, 1, 1), "l2.reduce_first": (56, 256, 128, 1, 1)}
for name, (hw, c, k, r, s) in convs.items():
    x = torch.randn(256, c, hw, hw, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    w = torch.randn(k, c, r, r, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    for _ in range(5): F.conv2d(x, w, padding=r // 2, stride=s)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(10): F.conv2d(x, w, padding=r // 2, stride=s)
        torch.cuda.synchronize()
    for e in p.key_averages():
        if e.device_type.name == "CUDA" or True:
            t = getattr(e, "device_time", getattr(e, "cuda_time", 0))
            if t > 0: print(f"{name:18s} {t:9.1f} us x{e.count} {e.key[:150]}")
