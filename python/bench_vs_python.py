#!/usr/bin/python3
"""kernelformer against the Python code it replaces, side by side in one run (issue 8).

Every kf figure is measured in the same run as its Python baseline (--only picks sections):
  seed001    seed 001's scikit-learn Gaussian kernel regression, verbatim (rbf_kernel(testx, x,
             gamma=5), rows normalized, @ y) at n = 100,000 training points x ~ U(0, 6),
             y = 2 sin x + N(0, 1), 1,000 queries linspace(0, 6), vs bench_regression's seed001
             (double and float, 2 threads): median time, peak extra memory (tracemalloc /
             bench/memory_probe.hpp's counted operator new). Targets: >= 10x faster, < 32 MiB.
  loocv      1-D Nadaraya-Watson with a leave-one-out CV bandwidth: statsmodels
             KernelReg(bw='cv_ls') at n = 2,000 (one run, ~15 s) vs bench_regression's loo_cv_1d
             at n = 2,000, 10^6, 10^7 (one run each). Target: 10^7 in < 20 s.
  attention  python/bench_attention_vs_torch.py's table (8 heads x 64, n in --sizes), run as a
             subprocess with this script's --repeats, --min-time, --sizes and --rounds.
  memory     bench_smooth's memory_64k (n = m = 65,536, d = 64, float32, its own process) vs
             PyTorch's softmax(Q K^T / sqrt(d)) V at n = 4,096, 8 heads x 64, float32 (its own
             process, growth of peak RSS around the call). Target: <= 64 MiB beyond
             inputs/output.
  kernels    bench_attention's distance kernels (gaussian, laplacian, cauchy, epanechnikov,
             periodic) against exp_dot at the attention shape (target: within 1.3x), and
             bench_regression's kernel_1d: compact kernels with small supports against the
             gaussian at seed 001's scale.
  threads    1 -> 2 thread speed-up: bench_regression's seed001 double (its threads argument) and
             bench_attention's heads_forward/1024/0 (OMP_NUM_THREADS=1 vs 2).
Threads: 2 everywhere (the target machine has 2 cores): OMP_NUM_THREADS=2 for the kf binaries
unless a case says otherwise, torch.set_num_threads(2) for PyTorch, numpy/scikit-learn/statsmodels
at OpenBLAS's default (every core). kf times are Google Benchmark real time, median over
--repeats repetitions; Python times are time.perf_counter, median over --repeats runs after one
warm-up. Prints a Markdown report, one table per section; --json writes every raw number.

Build the binaries first (release preset):
    cmake --preset release
    cmake --build --preset release --target bench_regression bench_smooth bench_attention
Reproduce:
    /usr/bin/python3 python/bench_vs_python.py
Usage: /usr/bin/python3 python/bench_vs_python.py [--only seed001,loocv,attention,kernels,memory,threads]
       [--repeats 5] [--min-time 1.0] [--sizes 1024,4096] [--skip-statsmodels]
       [--bench-dir build/release/bench] [--json OUT.json]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import bench_attention_vs_torch as att  # noqa: E402  (time_ms; its table runs as a subprocess)

SECTIONS = ("seed001", "loocv", "attention", "kernels", "memory", "threads")
BINARIES = {"seed001": ["bench_regression"], "loocv": ["bench_regression"],
            "attention": ["bench_attention"], "kernels": ["bench_attention", "bench_regression"],
            "memory": ["bench_smooth"],
            "threads": ["bench_regression", "bench_attention"]}
THREADS = 2
SEED001_N, SEED001_M = 100_000, 1_000
LOOCV_N_SM = 2_000
TORCH_MEMORY_N = 4_096
MiB = 1024.0 * 1024.0


# ---------------------------------------------------------------------------------------------
# Google Benchmark binaries
# ---------------------------------------------------------------------------------------------

def binary(bench_dir, name):
    """The path of bench_dir/name, or exit with the command that builds it."""
    path = os.path.join(bench_dir, name)
    if not os.access(path, os.X_OK):
        sys.exit(f"error: {path} not found; build it: "
                 f"cmake --build --preset release --target {name}")
    return path


def gbench(path, filt, repetitions=1, min_time=None, omp_threads=THREADS, interleave=False):
    """Runs one Google Benchmark binary with --benchmark_format=json.

    Returns {key: entry} with key = (name without BM_, integer args...), e.g.
    ('seed001_double', 100000, 1000, 2), and entry = {"seconds": median real time over the
    repetitions, "runs_s": every repetition's real time, counter: value...}. Peak-memory counters
    (peak_*) keep the maximum over repetitions, the others the median.
    """
    cmd = [path, "--benchmark_filter=" + filt, "--benchmark_format=json",
           "--benchmark_repetitions=%d" % repetitions]
    if min_time is not None:
        cmd.append("--benchmark_min_time=%g" % min_time)
    if interleave:  # repetitions of the matched cases in random order: drift hits them alike
        cmd.append("--benchmark_enable_random_interleaving=true")
    env = dict(os.environ, OMP_NUM_THREADS=str(omp_threads))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    skip = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
            "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
            "time_unit", "label", "error_occurred", "error_message", "aggregate_name",
            "aggregate_unit"}
    runs = {}
    for b in json.loads(proc.stdout)["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue  # aggregates: recomputed below from the repetitions
        if b.get("error_occurred"):
            sys.exit(f"error: {b['name']}: {b.get('error_message')}")
        runs.setdefault(b.get("run_name", b["name"]), []).append(b)
    if not runs:
        sys.exit(f"error: no benchmark of {path} matches {filt!r}")
    res = {}
    for name, bs in runs.items():
        # names like BM_seed001_double/100000/1000/2/real_time, BM_loo_cv_1d/2000/iterations:1/...
        parts = name.split("/")
        key = (parts[0][3:],) + tuple(int(p) for p in parts[1:] if p.isdigit())
        times = [b["real_time"] * unit[b["time_unit"]] for b in bs]
        entry = {"name": name, "seconds": statistics.median(times), "runs_s": times}
        for c in sorted(set(bs[0]) - skip):
            vals = [b[c] for b in bs if isinstance(b.get(c), (int, float))]
            if vals:
                entry[c] = max(vals) if c.startswith("peak_") else statistics.median(vals)
        res[key] = entry
    return res


# ---------------------------------------------------------------------------------------------
# Report helpers
# ---------------------------------------------------------------------------------------------

def table(header, rows):
    """Prints a Markdown table."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()


def met(ok):
    return "met" if ok else "**missed**"


def f(v, fmt):
    """Formats a number, or '—' for a missing one."""
    return "—" if v is None else format(v, fmt)


def meta():
    """Where and what was measured, for the JSON and the report's header."""
    m = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
         "host": platform.node(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
         "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("sklearn", "statsmodels", "torch"):
        try:
            m[mod] = __import__(mod).__version__
        except ImportError:
            m[mod] = None
    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                         capture_output=True, text=True)
    m["commit"] = git.stdout.strip() if git.returncode == 0 else None
    return m


# ---------------------------------------------------------------------------------------------
# 1. seed 001 at scale: scikit-learn vs bench_regression seed001
# ---------------------------------------------------------------------------------------------

def sklearn_seed001(n, m, repeats):
    """Seed 001's Gaussian kernel regression exactly as written there, at n x m."""
    from sklearn.metrics.pairwise import rbf_kernel
    np.random.seed(42)
    x = np.random.uniform(0, 6, n)
    y = 2 * np.sin(x) + np.random.normal(size=n)
    testx = np.linspace(0, 6, m)

    def fit():
        K = rbf_kernel(testx.reshape(-1, 1), x.reshape(-1, 1), gamma=5.0)
        K /= K.sum(axis=1, keepdims=True)
        y_kernel = K @ y
        return y_kernel

    ms = att.time_ms(fit, repeats)
    # Peak extra memory of one more run: numpy reports its buffers to tracemalloc (OpenBLAS's
    # internal work buffers are not included).
    tracemalloc.start()
    fit()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"n": n, "m": m, "ms": ms, "peak_MiB": peak / MiB}


def section_seed001(a, out):
    print(f"## 1. Seed 001 at scale: n = {SEED001_N:,} training points, m = {SEED001_M:,} "
          "queries\n")
    try:
        sk = sklearn_seed001(SEED001_N, SEED001_M, a.repeats)
    except ImportError:
        print("scikit-learn is not installed (Debian: python3-sklearn); skipped\n")
        return
    kf = gbench(binary(a.bench_dir, "bench_regression"),
                f"seed001_(double|float)/{SEED001_N}/{SEED001_M}/{THREADS}(/|$)",
                a.repeats, a.min_time)
    res = {"sklearn": sk}
    rows = [["scikit-learn rbf_kernel, normalize, K @ y (float64)", f(sk["ms"], ".1f"),
             f(sk["peak_MiB"], ".1f"), "1.0x", "—"]]
    for prec in ("double", "float"):
        e = kf[(f"seed001_{prec}", SEED001_N, SEED001_M, THREADS)]
        ms, heap = 1e3 * e["seconds"], e.get("peak_heap_MiB")
        ratio = sk["ms"] / ms
        res[f"kf_{prec}"] = dict(e, ms=ms, speedup=ratio)
        rows.append([f"kf smooth_forward, {prec}, {THREADS} threads", f(ms, ".1f"),
                     f(heap, ".2f"), f"{ratio:.1f}x",
                     f"≥ 10x, < 32 MiB: {met(ratio >= 10 and heap is not None and heap < 32)}"])
    table(["implementation", "time (ms)", "peak extra memory (MiB)", "speed-up over sklearn",
           "target"], rows)
    print("Time: median of --repeats; sklearn's memory: tracemalloc peak of one run (numpy's "
          "buffers); kf's: peak of counted operator new (peak_heap_MiB). Same data and "
          "bandwidth (gamma = 5, h = 1/sqrt(10)); kf draws its points with its own RNG.\n")
    out["seed001"] = res


# ---------------------------------------------------------------------------------------------
# 2. 1-D Nadaraya-Watson with a leave-one-out CV bandwidth: statsmodels vs loo_cv_1d
# ---------------------------------------------------------------------------------------------

def statsmodels_loocv(n):
    """KernelReg's least-squares CV bandwidth (one run), on data like BM_loo_cv_1d's."""
    from statsmodels.nonparametric.kernel_regression import KernelReg
    rng = np.random.RandomState(7)
    x = rng.uniform(0, 1, n)
    y = np.sin(2 * np.pi * x) + rng.normal(0, 0.3, n)
    t0 = time.perf_counter()
    kr = KernelReg(y, x, var_type="c", reg_type="lc", bw="cv_ls")
    return {"n": n, "seconds": time.perf_counter() - t0, "bandwidth": float(kr.bw[0])}


def section_loocv(a, out):
    print("## 2. 1-D Nadaraya–Watson with a leave-one-out CV bandwidth\n")
    sm = None
    if a.skip_statsmodels:
        note = "statsmodels skipped (--skip-statsmodels)"
    else:
        try:
            sm = statsmodels_loocv(LOOCV_N_SM)
            note = None
        except ImportError:
            note = "statsmodels is not installed (Debian: python3-statsmodels); skipped"
    # One repetition of each size: every case is one iteration and 10^7 takes seconds.
    kf = gbench(binary(a.bench_dir, "bench_regression"), "loo_cv_1d", 1)
    res = {"statsmodels": sm, "kf": {}}
    rows = []
    if sm:
        rows.append(["statsmodels KernelReg(reg_type='lc', bw='cv_ls')", f"{sm['n']:,}",
                     f(sm["seconds"], ".3f"), f(sm["bandwidth"], ".4g"), "—", "1.0x", "—"])
    for key in sorted(k for k in kf if k[0] == "loo_cv_1d"):
        e, n = kf[key], key[1]
        ratio = sm["seconds"] / e["seconds"] if sm and n == sm["n"] else None
        target = f"< 20 s: {met(e['seconds'] < 20)}" if n == 10_000_000 else "—"
        rows.append([f"kf regression_fit_data, loo_cv, {THREADS} threads", f"{n:,}",
                     f(e["seconds"], ".3f"), f(e.get("bandwidth"), ".4g"),
                     f(e.get("peak_heap_MiB"), ".1f"), f"{ratio:.1f}x" if ratio else "—",
                     target])
        res["kf"][n] = dict(e, speedup_vs_statsmodels=ratio)
    table(["implementation", "n", "time (s)", "bandwidth", "peak extra memory (MiB)",
           "speed-up over statsmodels", "target"], rows)
    if note:
        print(note + "\n")
    print("statsmodels' time is its bandwidth search only; kf's includes the search, the fit "
          "and its diagnostics. Same distribution (x ~ U(0, 1), y = sin 2πx + N(0, 0.3²)), "
          "different draws, so the bandwidths agree only roughly.\n")
    out["loocv"] = res


# ---------------------------------------------------------------------------------------------
# 3. Multi-head attention vs PyTorch: bench_attention_vs_torch.py's own table
# ---------------------------------------------------------------------------------------------

def section_attention(a, out):
    print(f"## 3. Multi-head attention vs PyTorch ({att.H} heads × {att.D}, float32, "
          f"{THREADS} threads)\n")
    # Its main() parses sys.argv and prints the table itself: run it as it is, in its own
    # process, and keep its rows from --json.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "attention.json")
        cmd = [sys.executable, os.path.join(HERE, "bench_attention_vs_torch.py"),
               "--bench", binary(a.bench_dir, "bench_attention"), "--sizes", a.sizes,
               "--repeats", str(a.repeats), "--min-time", "%g" % a.min_time,
               "--rounds", str(a.rounds), "--json", path] + (
                   ["--torch-keep-heap"] if a.torch_keep_heap else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"error: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
        print(proc.stdout.rstrip() + "\n")
        if not os.path.exists(path):  # PyTorch missing: it said so and skipped
            return
        with open(path) as fh:
            rows = json.load(fh)
    print("kf: bench_attention (OMP_NUM_THREADS=2); PyTorch: torch.set_num_threads(2). "
          "Speed-up = PyTorch ms / kf ms.\n")
    out["attention"] = rows


# ---------------------------------------------------------------------------------------------
# 4. Memory: bench_smooth memory_64k vs PyTorch's attention core
# ---------------------------------------------------------------------------------------------

# Runs in a fresh interpreter, with the growth of peak resident memory measured as kf's
# bench/memory_probe.hpp does: write "5" to /proc/self/clear_refs (resets the peak to the current
# RSS), then peak (VmHWM) minus the RSS before the call. getrusage's ru_maxrss alone is not
# enough here: it carries the parent's peak across fork/exec (after section 1 that is scikit-
# learn's ~1 GiB), and clear_refs does not reset that part; it remains the fallback when /proc
# is missing. The output is allocated beforehand, so like kf's figure the growth excludes inputs
# and output.
TORCH_MEMORY_PROBE = r"""
import json, resource, sys, time
import torch


def status_kib(key):
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith(key))
    except (OSError, StopIteration):
        return None


torch.set_num_threads(int(sys.argv[2]))
n, h, d = int(sys.argv[1]), 8, 64
torch.manual_seed(0)
q, k, v = (torch.randn(h, n, d) for _ in range(3))
out = torch.zeros(h, n, d)
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss0 = status_kib("VmRSS:")
except OSError:
    rss0 = None
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
with torch.no_grad():
    torch.matmul(torch.softmax(q @ k.transpose(1, 2) / d ** 0.5, dim=-1), v, out=out)
t = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
hwm = status_kib("VmHWM:")
growth_kib = hwm - rss0 if rss0 is not None and hwm is not None else r1 - r0
print(json.dumps({"n": n, "heads": h, "d": d, "seconds": t, "peak_rss_MiB": growth_kib / 1024,
                  "ru_maxrss_before_KiB": r0, "ru_maxrss_after_KiB": r1, "rss_before_KiB": rss0,
                  "peak_rss_KiB": hwm}))
"""


def torch_memory(n):
    proc = subprocess.run([sys.executable, "-c", TORCH_MEMORY_PROBE, str(n), str(THREADS)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        if "No module named 'torch'" in proc.stderr:
            return None
        sys.exit(f"error: the PyTorch memory probe failed:\n{proc.stderr}")
    return json.loads(proc.stdout.splitlines()[-1])


def section_memory(a, out):
    print("## 5. Peak extra memory (beyond inputs and output)\n")
    # memory_64k alone in its process: its peak_rss_MiB is then the growth from a fresh start.
    kf = gbench(binary(a.bench_dir, "bench_smooth"), "memory_64k", 1)
    e = kf[("memory_64k",)]
    th = torch_memory(TORCH_MEMORY_N)
    heap, rss = e.get("peak_heap_MiB"), e.get("peak_rss_MiB")
    rows = [["kf smooth_forward (bench_smooth memory_64k)",
             "n = m = 65,536, 1 head × 64", f(heap, ".1f"), f(rss, ".1f"),
             f(e["seconds"], ".2f"),
             f"≤ 64 MiB: {met(heap is not None and rss is not None and max(heap, rss) <= 64)}"]]
    if th:
        rows.append([f"PyTorch softmax(QKᵀ/√d)V, torch.set_num_threads({THREADS})",
                     f"n = {th['n']:,}, {th['heads']} heads × {th['d']}", "—",
                     f(th["peak_rss_MiB"], ".1f"), f(th["seconds"], ".2f"), "—"])
    table(["implementation", "problem (float32)", "peak heap (MiB)", "peak RSS growth (MiB)",
           "time (s)", "target"], rows)
    if not th:
        print("PyTorch is not installed (Debian: python3-torch); its row skipped\n")
    print(f"Peak RSS growth: peak resident memory (VmHWM, reset through /proc/self/clear_refs) "
          f"minus the resident memory before the call, each in its own process. kf's inputs and "
          f"output at 65,536 × 64 are 16 MiB each. PyTorch materializes the {att.H} × n × n "
          f"scores ({att.H * TORCH_MEMORY_N ** 2 * 4 / MiB:,.0f} MiB per copy at n = "
          f"{TORCH_MEMORY_N:,}); at n = 65,536 one head's would be "
          f"{65536 ** 2 * 4 / MiB / 1024:,.0f} GiB.\n")
    out["memory"] = {"kf": e, "torch": th}


# ---------------------------------------------------------------------------------------------
# 5. Thread scaling 1 -> 2
# ---------------------------------------------------------------------------------------------

KERNELS = ["gaussian", "laplacian", "cauchy", "epanechnikov", "periodic"]  # heads_kernel's arg


def section_kernels(a, out):
    """Distance kernels against exp_dot (attention shape) and compact supports (1-D regression)."""
    print("## 4. Distance kernels against exp_dot, compact supports\n")
    sizes = [int(x) for x in a.sizes.split(",")]
    rows, res = [], {}
    for n in sizes:
        # Each kernel is timed beside exp_dot in one process, repetitions interleaved at random,
        # so the host's drift (±20–30% over minutes here) does not land on one side of a ratio;
        # each side is its fastest repetition (bursts of load only ever slow a run down).
        bases = []
        for i, name in enumerate(KERNELS):
            filt = f"^BM_heads_(forward/{n}/0|kernel/{n}/{i})(/|$)"
            e = gbench(binary(a.bench_dir, "bench_attention"), filt, max(a.repeats, 5),
                       a.min_time, interleave=True)
            base = min(e[("heads_forward", n, 0)]["runs_s"])
            t = min(e[("heads_kernel", n, i)]["runs_s"])
            bases.append(base)
            rows.append([str(n), name, f(1e3 * t, ".1f"), f(1e3 * base, ".1f"),
                         f"{t / base:.2f}x", met(t / base <= 1.3)])
            res[f"{name}_{n}"] = {"seconds": t, "exp_dot_seconds": base, "vs_exp_dot": t / base}
        res[f"exp_dot_{n}"] = {"seconds": statistics.median(bases)}
    print(f"Forward, {att.H} heads × {att.D}, float32, 2 threads, random normal q, k, v "
          "(compact supports wide enough to keep every pair: the same work as exp_dot). Each "
          "kernel beside exp_dot in one process, at least 5 repetitions interleaved at random, "
          "the fastest of each.\n")
    table(["n", "kernel", "ms", "exp_dot ms (same run)", "time / exp_dot", "≤ 1.3x"], rows)
    r = gbench(binary(a.bench_dir, "bench_regression"), "^BM_kernel_1d/[0-3](/|$)", a.repeats,
               a.min_time)
    labels = ["gaussian h = 0.316 (seed 001's)", "epanechnikov h = 0.7", "epanechnikov h = 0.05",
              "boxcar h = 0.05"]
    base = r[("kernel_1d", 0)]["seconds"]
    rows = []
    for i, lab in enumerate(labels):
        t = r[("kernel_1d", i)]["seconds"]
        rows.append([lab, f(1e3 * t, ".2f"), f"{base / t:.1f}x"])
        res[f"kernel_1d_{i}"] = {"label": lab, "seconds": t}
    print("1-D regression, seed 001's data at n = 100,000 × 1,000 queries, x sorted, double, "
          "2 threads: compact kernels skip the key tiles outside their support.\n")
    table(["kernel", "ms", "speed-up over gaussian"], rows)
    out["kernels"] = res


def section_threads(a, out):
    print("## 6. Thread scaling, 1 → 2 threads\n")
    reg = gbench(binary(a.bench_dir, "bench_regression"),
                 f"seed001_double/{SEED001_N}/{SEED001_M}/(1|2)(/|$)", a.repeats, a.min_time)
    t_reg = {t: reg[("seed001_double", SEED001_N, SEED001_M, t)]["seconds"] for t in (1, 2)}
    t_att = {}
    for t in (1, 2):  # each head is single-threaded; OpenMP splits the heads
        e = gbench(binary(a.bench_dir, "bench_attention"), "^BM_heads_forward/1024/0(/|$)",
                   a.repeats, a.min_time, omp_threads=t)
        t_att[t] = e[("heads_forward", 1024, 0)]["seconds"]
    rows, res = [], {}
    for key, name, how, ts in [
            ("seed001_double", f"seed001 double, n = {SEED001_N:,}, m = {SEED001_M:,}",
             "threads argument", t_reg),
            ("heads_forward_1024", f"heads_forward, n = 1024, {att.H} heads × {att.D}",
             "OMP_NUM_THREADS", t_att)]:
        s = ts[1] / ts[2]
        rows.append([name, how, f(1e3 * ts[1], ".1f"), f(1e3 * ts[2], ".1f"), f"{s:.2f}x",
                     "2x (ideal)"])
        res[key] = {"seconds_1": ts[1], "seconds_2": ts[2], "speedup": s}
    table(["kf case", "threads set by", "1 thread (ms)", "2 threads (ms)", "speed-up",
           "target"], rows)
    out["threads"] = res


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help="comma-separated sections to run (default: all): " + ",".join(SECTIONS))
    ap.add_argument("--repeats", type=int, default=5,
                    help="Python runs (median) and Google Benchmark repetitions (default 5)")
    ap.add_argument("--min-time", type=float, default=1.0,
                    help="Google Benchmark min time per repetition, s (default 1.0)")
    ap.add_argument("--sizes", default="1024,4096", help="attention sizes n (default 1024,4096)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="attention: alternate kf and PyTorch this many times (medians, ranges)")
    ap.add_argument("--torch-keep-heap", action="store_true",
                    help="attention: PyTorch with glibc keeping freed memory in its heap")
    ap.add_argument("--skip-statsmodels", action="store_true",
                    help="loocv: run only kf's side (statsmodels takes ~15 s)")
    ap.add_argument("--bench-dir", default=os.path.join(ROOT, "build", "release", "bench"),
                    help="where bench_regression, bench_smooth, bench_attention are "
                         "(default: build/release/bench in the repository)")
    ap.add_argument("--json", help="also write every raw number here")
    a = ap.parse_args()
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown section(s) {','.join(unknown)}; choose from {','.join(SECTIONS)}")
    if a.repeats < 1:
        ap.error("--repeats must be >= 1")
    for s in only:  # every binary before anything runs: fail fast, not after minutes
        for b in BINARIES[s]:
            binary(a.bench_dir, b)

    m = meta()
    print("# kernelformer vs Python baselines\n")
    print(f"{m['date']}, {m['host']}, {m['cpus']} CPUs, load average "
          f"{', '.join('%.2f' % x for x in m['load_avg'])} at start; commit {m['commit']}; "
          f"numpy {m['numpy']}, scikit-learn {m['sklearn']}, statsmodels {m['statsmodels']}, "
          f"torch {m['torch']}. --repeats {a.repeats}, --min-time {a.min_time:g}.\n")
    sys.stdout.flush()
    out = {"meta": m, "options": vars(a)}
    run = {"seed001": section_seed001, "loocv": section_loocv, "attention": section_attention,
           "kernels": section_kernels, "memory": section_memory, "threads": section_threads}
    for s in SECTIONS:
        if s in only:
            run[s](a, out)
            sys.stdout.flush()
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
