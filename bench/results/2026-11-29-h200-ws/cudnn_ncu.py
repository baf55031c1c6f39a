# cuDNN's kernel for each of ResNet-50 b256's convs (channels_last f16, autotuned), one launch
# each between cudaProfilerStart and Stop, for `ncu --profile-from-start off`.
import sys, torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = True
convs = {"l3.expand": (14, 256, 1024, 1, 1), "l1.expand": (56, 64, 256, 1, 1),
         "l1.3x3": (56, 64, 64, 3, 1), "l2.3x3": (28, 128, 128, 3, 1),
         "l3.reduce_first": (28, 512, 256, 1, 1)}
for name, (hw, c, k, r, s) in convs.items():
    if len(sys.argv) > 1 and name not in sys.argv[1:]:
        continue
    x = torch.randn(256, c, hw, hw, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    w = torch.randn(k, c, r, r, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    for _ in range(5): F.conv2d(x, w, padding=r // 2, stride=s)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    F.conv2d(x, w, padding=r // 2, stride=s)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(name, flush=True)
