#!/usr/bin/python3
"""Big inputs without copies (issue 30): kf's peak memory on large files and its CSV parse rate,
each beside a baseline measured in the same run.

  attend  n = m = 65,536, d = dv = 64, float32 .npy (16 MiB each): `kf attend` peak RSS
          (/usr/bin/time -f %M) against inputs + output (64 MiB) and against `kf --version`
          (the process's own base); numpy's np.load of the same three files (no mmap) beside it.
          Target: peak RSS <= inputs + output + 24 MiB.
  smooth  a 10^7-row x,y CSV: `kf smooth --bandwidth silverman` and with the default CV
          bandwidth, peak RSS against the parsed data (2 columns x 10^7 float64 = 152.6 MiB).
          Target: <= 2 x parsed data + 32 MiB.
  csv     parse rate of the same 10^6-row x,y file (17 significant digits): bench_io's
          csv_read (MB/s of file) vs numpy.loadtxt and pandas.read_csv, best of --repeats.

Run from the repository root after a release build (bench_io included):
  cmake --preset release && cmake --build --preset release -j2
  /usr/bin/python3 python/bench_io.py [--only attend,smooth,csv] [--dir /tmp/kf_bench_io]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KF = os.path.join(ROOT, "build", "release", "kf")
BENCH_IO = os.path.join(ROOT, "build", "release", "bench", "bench_io")
MIB = 1024 * 1024


def peak_rss_mib(cmd):
    """Peak RSS of a command in MiB and its wall time, by GNU time."""
    t0 = time.time()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        sys.exit(f"bench_io.py: {' '.join(cmd)} failed: {r.stderr.strip()[-300:]}")
    return int(r.stderr.strip().splitlines()[-1]) / 1024, wall


def write_xy_csv(path, n, digits):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 6, n)
    y = 2 * np.sin(x) + rng.normal(size=n)
    fmt = "{:.%dg},{:.%dg}" % (digits, digits)
    with open(path, "w") as f:
        f.write("x,y\n")
        for i in range(0, n, 10**6):
            f.write("\n".join(map(fmt.format, x[i:i + 10**6], y[i:i + 10**6])))
            f.write("\n")


def bench_attend(d):
    rng = np.random.default_rng(1)
    paths = []
    for name in "qkv":
        p = os.path.join(d, name + ".npy")
        if not os.path.exists(p):
            np.save(p, rng.standard_normal((65536, 64), dtype=np.float32))
        paths.append(p)
    base, _ = peak_rss_mib([KF, "--version"])
    rss, wall = peak_rss_mib([KF, "attend", "-q", paths[0], "-k", paths[1], "-v", paths[2],
                              "-o", os.path.join(d, "out.npy"), "--quiet"])
    code = "import numpy as np,sys; a=[np.load(p) for p in sys.argv[1:]]; print(sum(x.sum() for x in a))"
    np_rss, _ = peak_rss_mib(["/usr/bin/python3", "-c", code] + paths)
    np_base, _ = peak_rss_mib(["/usr/bin/python3", "-c", "import numpy"])
    io = 64.0
    print("## kf attend, n = m = 65,536, d = dv = 64, float32 (inputs + output = 64 MiB)\n")
    print("| process | peak RSS (MiB) | beyond inputs + output | beyond its own base |")
    print("|---|---|---|---|")
    print(f"| `kf attend` ({wall:.1f} s) | {rss:.1f} | {rss - io:.1f} (target <= 24) | {rss - base:.1f} (base {base:.1f}) |")
    print(f"| numpy: np.load of Q, K, V only | {np_rss:.1f} | — | {np_rss - np_base:.1f} (base {np_base:.1f}) |")
    print()


def bench_smooth(d):
    p = os.path.join(d, "xy1e7.csv")
    if not os.path.exists(p):
        write_xy_csv(p, 10**7, 9)
    parsed = 2 * 10**7 * 8 / MIB
    print(f"## kf smooth on a 10^7-row x,y CSV ({os.path.getsize(p) / 1e6:.0f} MB; parsed data {parsed:.1f} MiB)\n")
    print("| command | peak RSS (MiB) | / parsed data | wall (s) |")
    print("|---|---|---|---|")
    for bw in ("silverman", "cv"):
        rss, wall = peak_rss_mib([KF, "smooth", p, "--x", "x", "--y", "y", "--bandwidth", bw,
                                  "--out", os.path.join(d, "fit.csv"), "--quiet"])
        print(f"| `kf smooth --bandwidth {bw}` | {rss:.1f} | {rss / parsed:.2f} (target <= {2 + 32 / parsed:.2f}) | {wall:.1f} |")
    print()


def best_of(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_csv(d, repeats):
    p = os.path.join(d, "xy1e6_17.csv")
    if not os.path.exists(p):
        write_xy_csv(p, 10**6, 17)
    mb = os.path.getsize(p) / 1e6
    env = dict(os.environ, KF_BENCH_CSV=p)
    r = subprocess.run([BENCH_IO, "--benchmark_filter=csv_read", "--benchmark_format=json",
                        f"--benchmark_repetitions={repeats}"], capture_output=True, text=True,
                       env=env, check=True)
    runs = [b for b in json.loads(r.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
    kf_s = min(b["real_time"] for b in runs) / 1e3  # ms -> s
    rows = [("kf io::csv_read", kf_s)]
    rows.append(("numpy.loadtxt", best_of(lambda: np.loadtxt(p, delimiter=",", skiprows=1), repeats)))
    try:
        import pandas as pd
        rows.append(("pandas.read_csv", best_of(lambda: pd.read_csv(p), repeats)))
    except ImportError:
        pass
    print(f"## CSV parse rate, 10^6 rows x 2 columns, 17 significant digits ({mb:.1f} MB), best of {repeats}\n")
    print("| reader | seconds | MB/s | kf's speed-up |")
    print("|---|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {s:.3f} | {mb / s:.0f} | {s / kf_s:.1f}x |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="attend,smooth,csv")
    ap.add_argument("--dir", default="/tmp/kf_bench_io", help="where the generated files go")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    for exe in (KF, BENCH_IO):
        if not os.access(exe, os.X_OK):
            sys.exit(f"bench_io.py: {exe} not built (cmake --build --preset release)")
    os.makedirs(a.dir, exist_ok=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read())
    print(f"# bench_io.py at {commit} on {cpu.group(1) if cpu else 'unknown CPU'}, {os.cpu_count()} cores\n")
    only = a.only.split(",")
    if "attend" in only:
        bench_attend(a.dir)
    if "smooth" in only:
        bench_smooth(a.dir)
    if "csv" in only:
        bench_csv(a.dir, a.repeats)


if __name__ == "__main__":
    main()
