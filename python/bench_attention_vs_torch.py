#!/usr/bin/python3
"""Multi-head attention, kernelformer vs PyTorch 1.13, side by side in one run (issue 8).

8 heads x head dim 64, n = m in {1024, 4096}, float32, 2 threads each:
  core     kf's fused primitive per head (bench/bench_attention: heads_forward, heads_fwd_bwd)
           vs PyTorch's plain softmax(Q K^T / sqrt(d)) V on (8, n, 64) tensors
  layer    kf's nn::multi_head_attention (projections + core) vs torch.nn.MultiheadAttention
  causal   the same with a causal mask (kf skips masked tiles; PyTorch adds a -inf mask)
  ceiling  OpenBLAS sgemm with the core's FLOP count, measured by the same bench binary
  tiles    the forward's two per-tile products alone (S = Q K^T: 256 x 256 x 64, P V: 256 x 64 x
           256), each thread its own row block as the smoother runs them: the core's own ceiling
           at head dim 64 (bench_attention's tile_gemms, n = 4096)
Prints a Markdown table: ms per call, GFLOP/s (4 n^2 d H forward, 14 n^2 d H forward+backward),
kf / sgemm, and the speed-up over PyTorch. Build first:
    cmake --preset release && cmake --build --preset release --target bench_attention
Usage: /usr/bin/python3 python/bench_attention_vs_torch.py [--bench build/release/bench/bench_attention]
       [--sizes 1024,4096] [--repeats 5] [--rounds 1] [--torch-keep-heap] [--json OUT.json]
--rounds R alternates kf and PyTorch R times and reports per-case medians with their ranges
(the host's load drifts; ratios are taken within each round). --torch-keep-heap runs PyTorch
with glibc keeping freed memory (by default PyTorch page-faults its n x n scores in on every call).
"""
import argparse
import json
import os
import subprocess
import sys
import time

H, D = 8, 64


def run_kf(bench, sizes, min_time):
    filt = ("BM_(sgemm|heads_forward|heads_fwd_bwd|layer_forward|layer_fwd_bwd)/(" +
            "|".join(str(n) for n in sizes) + ")(/|$)|BM_tile_gemms/4096/2")
    env = dict(os.environ, OMP_NUM_THREADS="2")
    out = subprocess.run([bench, "--benchmark_filter=" + filt, "--benchmark_format=json",
                          "--benchmark_min_time=%g" % min_time], check=True, env=env,
                         capture_output=True, text=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        # names like BM_heads_forward/4096/1/real_time
        parts = b["name"].split("/")
        key = (parts[0][3:],) + tuple(int(p) for p in parts[1:] if p.isdigit())
        res[key] = b["real_time"]  # ms (the benchmarks use kMillisecond)
        if key[0] == "tile_gemms":
            res[key] = b["GFLOP/s"]  # a rate: the products' own GFLOP/s
    return res


def time_ms(fn, repeats):
    fn()  # warm-up
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t0)
    best.sort()
    return 1e3 * best[len(best) // 2]


# glibc settings that keep freed memory in the heap: PyTorch on the CPU allocates its n × n
# score tensors with malloc, and by default glibc serves blocks above 32 MiB with mmap and unmaps
# them on free, so every call page-faults its scores in again (at n = 1024 that is ~60% of
# PyTorch's forward time). kf's CLI keeps its heap the same way (mallopt in apps/kf/main.cpp);
# --torch-keep-heap measures PyTorch so too.
KEEP_HEAP_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 32)}


def run_torch_child(sizes, repeats):
    """run_torch in a child process with KEEP_HEAP_ENV (glibc reads it at start-up)."""
    code = ("import json, sys; sys.path.insert(0, %r); import bench_attention_vs_torch as b; "
            "r = b.run_torch(%r, %d); print(json.dumps([[list(k), v] for k, v in r.items()]))"
            % (os.path.dirname(os.path.abspath(__file__)), sizes, repeats))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=dict(os.environ, **KEEP_HEAP_ENV)).stdout
    return {tuple(k): v for k, v in json.loads(out.strip().splitlines()[-1])}


def run_torch(sizes, repeats):
    import torch
    torch.set_num_threads(2)
    torch.manual_seed(0)
    res = {}
    for n in sizes:
        q, k, v = (torch.randn(H, n, D) for _ in range(3))
        causal = torch.full((n, n), float("-inf")).triu(1)

        def core(mask=None, grad=False):
            qq, kk, vv = (t.clone().requires_grad_(grad) for t in (q, k, v))
            s = qq @ kk.transpose(1, 2) / D ** 0.5
            if mask is not None:
                s = s + mask
            o = torch.softmax(s, dim=-1) @ vv
            if grad:
                o.backward(torch.ones_like(o))
            return o

        with torch.no_grad():
            res[("core_fwd", n, 0)] = time_ms(lambda: core(), repeats)
            res[("core_fwd", n, 1)] = time_ms(lambda: core(causal), repeats)
        res[("core_fwd_bwd", n, 0)] = time_ms(lambda: core(grad=True), repeats)
        res[("core_fwd_bwd", n, 1)] = time_ms(lambda: core(causal, grad=True), repeats)
        mha = torch.nn.MultiheadAttention(H * D, H, batch_first=True)
        x = torch.randn(1, n, H * D)
        with torch.no_grad():
            res[("mha_fwd", n)] = time_ms(lambda: mha(x, x, x, need_weights=False), repeats)

        def mha_step():
            xx = x.clone().requires_grad_(True)
            y, _ = mha(xx, xx, xx, need_weights=False)
            y.backward(torch.ones_like(y))

        res[("mha_fwd_bwd", n)] = time_ms(mha_step, repeats)
        del q, k, v, causal
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bench", default=os.path.join(here, "..", "build", "release", "bench",
                                                    "bench_attention"))
    ap.add_argument("--sizes", default="1024,4096")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=1.0, help="Google Benchmark min time (s)")
    ap.add_argument("--torch-keep-heap", action="store_true",
                    help="run PyTorch with glibc keeping freed memory in its heap (no page faults "
                    "per call); the default is PyTorch as installed")
    ap.add_argument("--rounds", type=int, default=1,
                    help="alternate kf and PyTorch this many times; report medians and ranges")
    ap.add_argument("--json", help="also write the raw numbers here")
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("PyTorch is not installed (Debian: python3-torch); skipping")
        return 0
    if not os.path.exists(a.bench):
        print(f"{a.bench} not found: cmake --build --preset release --target bench_attention",
              file=sys.stderr)
        return 2
    sizes = [int(s) for s in a.sizes.split(",")]

    def gf(ms, n, per):
        return per * n * n * D * H / (ms * 1e-3) * 1e-9

    def one_round():
        kf = run_kf(a.bench, sizes, a.min_time)
        th = run_torch_child(sizes, a.repeats) if a.torch_keep_heap else run_torch(sizes, a.repeats)
        rows = []
        for n in sizes:
            sg = kf[("sgemm", n)]
            cases = [
                ("core forward", kf[("heads_forward", n, 0)], th[("core_fwd", n, 0)], 4),
                ("core forward, causal", kf[("heads_forward", n, 1)], th[("core_fwd", n, 1)], 4),
                ("core forward+backward", kf[("heads_fwd_bwd", n, 0)], th[("core_fwd_bwd", n, 0)],
                 14),
                ("layer forward (MultiheadAttention)", kf[("layer_forward", n)],
                 th[("mha_fwd", n)], 4),
                ("layer forward+backward", kf[("layer_fwd_bwd", n)], th[("mha_fwd_bwd", n)], 14),
            ]
            if ("heads_fwd_bwd", n, 1) in kf:
                cases.insert(3, ("core forward+backward, causal", kf[("heads_fwd_bwd", n, 1)],
                                 th[("core_fwd_bwd", n, 1)], 14))
            for name, k_ms, t_ms, per in cases:
                rows.append(dict(n=n, case=name, kf_ms=k_ms, torch_ms=t_ms,
                                 kf_gflops=gf(k_ms, n, per), torch_gflops=gf(t_ms, n, per),
                                 sgemm_gflops=gf(sg, n, 4), speedup=t_ms / k_ms))
        tiles = kf.get(("tile_gemms", 4096, 2))
        if tiles is not None:
            for r in rows:
                r["tile_gflops"] = tiles
        return rows

    # Rounds alternate kf and PyTorch, so a drift in the host's load hits both sides; each
    # round's ratios are taken within the round, then the median (and range) over rounds.
    rounds = [one_round() for _ in range(max(1, a.rounds))]

    def med(xs):  # the median (the mean of the middle two for an even count)
        xs = sorted(xs)
        h = len(xs) // 2
        return xs[h] if len(xs) % 2 else 0.5 * (xs[h - 1] + xs[h])

    rows = []
    for i, r0 in enumerate(rounds[0]):
        col = [rd[i] for rd in rounds]
        r = dict(r0)
        for key in ("kf_ms", "torch_ms", "kf_gflops", "torch_gflops", "sgemm_gflops", "speedup"):
            r[key] = med([c[key] for c in col])
        r["sgemm_share"] = med([c["kf_gflops"] / c["sgemm_gflops"] for c in col])
        r["speedup_range"] = (min(c["speedup"] for c in col), max(c["speedup"] for c in col))
        r["sgemm_share_range"] = (min(c["kf_gflops"] / c["sgemm_gflops"] for c in col),
                                  max(c["kf_gflops"] / c["sgemm_gflops"] for c in col))
        r["rounds"] = [dict(kf_ms=c["kf_ms"], torch_ms=c["torch_ms"], speedup=c["speedup"])
                       for c in col]
        rows.append(r)
    many = len(rounds) > 1
    if a.torch_keep_heap:
        print("PyTorch ran with glibc keeping freed memory in its heap (" +
              ", ".join(f"{k}={v}" for k, v in KEEP_HEAP_ENV.items()) + ").\n")
    if many:
        print(f"Median of {len(rounds)} alternating rounds (min-max of the per-round figures in "
              "brackets).\n")
    print("| n | case | kf ms | PyTorch ms | kf GFLOP/s | PyTorch GFLOP/s | kf / sgemm | "
          "kf speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        share = f"{100 * r['sgemm_share']:.0f}%"
        spd = f"{r['speedup']:.2f}x"
        if many:
            share += " ({:.0f}-{:.0f}%)".format(*(100 * x for x in r["sgemm_share_range"]))
            spd += " ({:.2f}-{:.2f}x)".format(*r["speedup_range"])
        print(f"| {r['n']} | {r['case']} | {r['kf_ms']:.1f} | {r['torch_ms']:.1f} | "
              f"{r['kf_gflops']:.1f} | {r['torch_gflops']:.1f} | {share} | {spd} |")
    for n in sizes:
        sg = med([next(c for c in rd if c["n"] == n)["sgemm_gflops"] for rd in rounds])
        print(f"sgemm ceiling at n = {n}: {sg:.1f} GFLOP/s")
    if "tile_gflops" in rounds[0][0]:
        tg = [rd[0]["tile_gflops"] for rd in rounds]
        sg4 = [next(c for c in rd if c["n"] == 4096)["sgemm_gflops"] for rd in rounds] \
            if 4096 in sizes else None
        line = (f"tile products alone (S = Q K^T and P V, 256-row blocks, head dim 64, 2 threads): "
                f"{med(tg):.1f} GFLOP/s")
        if sg4:
            fw = [next(c for c in rd if c["n"] == 4096 and c["case"] == "core forward")
                  for rd in rounds]
            line += (f" = {100 * med([t / s for t, s in zip(tg, sg4)]):.0f}% of sgemm at n = 4096;"
                     f" the core forward at n = 4096 runs at "
                     f"{100 * med([f['kf_gflops'] / t for f, t in zip(fw, tg)]):.0f}% of it")
        print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
