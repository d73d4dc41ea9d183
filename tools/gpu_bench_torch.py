"""torch's side of the GPU day (tools/gpu-bench.sh): scaled_dot_product_attention at the prefill
shapes of `vkattn bench --preset gpu` (B=1, H=32, D=128, L=S from 512 to 8192, fp16, causal and
not) and the projections' matmul (L x 4096 by 4096 x 4096, fp16), median CUDA-event times over
repeats after a warm-up, written as JSON (argv[1]) with GFLOP/s counted as vkattn counts them
(attention 4 B H L S D, halved when causal is not; matmul 2 M N K).
"""
import json
import sys

import torch
import torch.nn.functional as F


def median_ms(fn, repeats=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    dev = torch.device("cuda")
    H, D, E = 32, 128, 4096
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "sdpa": [], "matmul": []}
    for L in (512, 1024, 2048, 4096, 8192):
        q, k, v = (torch.randn(1, H, L, D, device=dev, dtype=torch.float16) for _ in range(3))
        for causal in (False, True):
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            flops = 4.0 * H * L * L * D  # as vkattn counts: the whole score matrix
            out["sdpa"].append({"L": L, "causal": causal, "ms": ms, "gflops": flops / ms / 1e6})
            print("sdpa   L=S=%5d %-6s %8.3f ms %9.1f GFLOP/s" % (L, "causal" if causal else "", ms, flops / ms / 1e6))
        x, w = torch.randn(L, E, device=dev, dtype=torch.float16), torch.randn(E, E, device=dev, dtype=torch.float16)
        ms = median_ms(lambda: x @ w.t())
        out["matmul"].append({"M": L, "N": E, "K": E, "ms": ms, "gflops": 2.0 * L * E * E / ms / 1e6})
        print("matmul M=%5d N=K=%d      %8.3f ms %9.1f GFLOP/s" % (L, E, ms, 2.0 * L * E * E / ms / 1e6))
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
