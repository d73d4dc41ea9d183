"""torch's side of the GPU day (tools/gpu-bench.sh), fp16, median CUDA-event times over repeats
after a warm-up, written as JSON (argv[1]):
- scaled_dot_product_attention at the prefill shapes of `vkattn bench --preset gpu` (B=1, H=32,
  D=128, L=S from 512 to 8192, causal and not), and at head dims 64 (B=4, H=16, L=S=2048) and 256
  (B=1, H=16, L=S=4096), GFLOP/s counted as vkattn counts them (4 B H L S D: the whole score
  matrix, also when causal);
- the projections' matmul: L x 4096 by 4096 x 4096, and the fused Q/K/V projection vkattn runs at
  L = 4096 (4096 x 4096 by 12288 x 4096; 2 M N K);
- a decoding step's attention: one query of 32 heads over a GQA cache of 8 K/V heads (D=128) at
  1024, 8192 and 32768 keys, with the K/V bytes read per ms (vkattn bench --preset decode's layer).
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


def sdpa(out, dev, B, H, L, D):
    q, k, v = (torch.randn(B, H, L, D, device=dev, dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        flops = 4.0 * B * H * L * L * D  # as vkattn counts: the whole score matrix
        out["sdpa"].append({"B": B, "H": H, "L": L, "D": D, "causal": causal, "ms": ms, "gflops": flops / ms / 1e6})
        print("sdpa   B=%d H=%2d D=%3d L=S=%5d %-6s %8.3f ms %9.1f GFLOP/s" %
              (B, H, D, L, "causal" if causal else "", ms, flops / ms / 1e6))


def matmul(out, dev, M, N, K):
    x, w = torch.randn(M, K, device=dev, dtype=torch.float16), torch.randn(N, K, device=dev, dtype=torch.float16)
    ms = median_ms(lambda: x @ w.t())
    out["matmul"].append({"M": M, "N": N, "K": K, "ms": ms, "gflops": 2.0 * M * N * K / ms / 1e6})
    print("matmul M=%5d N=%5d K=%d %8.3f ms %9.1f GFLOP/s" % (M, N, K, ms, 2.0 * M * N * K / ms / 1e6))


def main():
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "sdpa": [], "matmul": [], "decode": []}

    def save():  # after each figure: a run cut short keeps what it measured
        with open(sys.argv[1], "w") as f:
            json.dump(out, f, indent=1)

    for L in (512, 1024, 2048, 4096, 8192):
        sdpa(out, dev, 1, 32, L, 128)
        matmul(out, dev, L, 4096, 4096)
        save()
    matmul(out, dev, 4096, 12288, 4096)
    sdpa(out, dev, 4, 16, 2048, 64)
    sdpa(out, dev, 1, 16, 4096, 256)
    save()
    for S in (1024, 8192, 32768):
        q = torch.randn(1, 32, 1, 128, device=dev, dtype=torch.float16)
        k, v = (torch.randn(1, 8, S, 128, device=dev, dtype=torch.float16) for _ in range(2))
        ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), repeats=50)
        gbs = 2.0 * S * 8 * 128 * 2 / ms / 1e6
        out["decode"].append({"S": S, "heads": 32, "kv_heads": 8, "D": 128, "ms": ms, "gbs": gbs})
        print("decode S=%5d (32 heads over 8 K/V heads, D=128) %8.4f ms %7.0f GB/s" % (S, ms, gbs))
        save()


if __name__ == "__main__":
    main()
