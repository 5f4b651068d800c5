#!/usr/bin/env python3
"""Example series for `kf train series` (docs/series.md), written as CSV files, and optionally
the table of docs/series.md: kf run on each with several seeds, medians of the test errors.

Series (the real ones ship with Debian's python3-statsmodels, public domain):
  elnino.csv    monthly sea surface temperature, Nino 1+2, 1950-2010 (732 values): t, sst
  sunspots.csv  yearly sunspot activity, 1700-2008 (309 values): year, activity
  co2.csv       weekly CO2 at Mauna Loa, 1958-2001 (2,284 values, 59 missing, left blank):
                day (days since the first week), co2
  monthly.csv   synthetic, like tests/apps/test_kf_series.cpp: 240 months of a level with a
                trend, a yearly season with a second harmonic and noise: month, sales

Usage (from the repository root):
    /usr/bin/python3 python/series_examples.py --out runs/series_data
    /usr/bin/python3 python/series_examples.py --out runs/series_data --kf build/release/kf \
        --seeds 0,1,2 --markdown runs/series_table.md
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

# Each example: file, kf arguments, the series' description for the table; each also runs with
# --scale-inputs (an improvement option: every window divided by its RMS, after standardizing).
EXAMPLES = [
    ("monthly.csv", "--y sales --x month", "synthetic monthly, 240 values"),
    ("elnino.csv", "--y sst --x t", "El Niño SST, monthly, 732 values"),
    ("sunspots.csv", "--y activity --x year", "sunspots, yearly, 309 values"),
    ("co2.csv", "--y co2 --x day --fill linear", "Mauna Loa CO2, weekly, 2,284 values"),
]
VARIANTS = [("", ""), ("--scale-inputs", ", `--scale-inputs`")]

def write_csv(path, names, columns):
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        for row in zip(*columns):
            f.write(",".join("" if (isinstance(v, float) and np.isnan(v)) else repr(float(v))
                             for v in row) + "\n")


def write_examples(out):
    import statsmodels.api as sm
    os.makedirs(out, exist_ok=True)
    el = sm.datasets.elnino.load_pandas().data
    months = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
    t, sst = [], []
    for _, row in el.iterrows():
        for m, name in enumerate(months):
            t.append(row["YEAR"] + m / 12)
            sst.append(row[name])
    write_csv(os.path.join(out, "elnino.csv"), ["t", "sst"], [t, sst])
    sun = sm.datasets.sunspots.load_pandas().data
    write_csv(os.path.join(out, "sunspots.csv"), ["year", "activity"],
              [sun["YEAR"].values, sun["SUNACTIVITY"].values])
    co2 = sm.datasets.co2.load_pandas().data
    days = (co2.index - co2.index[0]).days.values.astype(float)
    write_csv(os.path.join(out, "co2.csv"), ["day", "co2"], [days, co2["co2"].values])
    rng = np.random.default_rng(7)
    month = np.arange(1, 241)
    a = 2 * np.pi * month / 12
    sales = 100 + 0.05 * month + 10 * np.sin(a) + 4 * np.cos(2 * a) + rng.normal(0, 3, month.size)
    write_csv(os.path.join(out, "monthly.csv"), ["month", "sales"], [month, sales])


def run_table(out, kf, seeds, markdown):
    rows = []
    for (file, base, name), (flag, suffix) in [(e, v) for e in EXAMPLES for v in VARIANTS]:
        args, title = (base + " " + flag).strip(), name + suffix
        runs = []
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                summary = os.path.join(tmp, "s.json")
                cmd = [kf, "train", "series", os.path.join(out, file)] + args.split() + [
                    "--seed", str(seed), "--summary", summary, "--quiet"]
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True)
                wall = time.perf_counter() - t0
                with open(summary) as f:
                    s = json.load(f)
                s["wall"] = wall
                runs.append(s)
        med = lambda f, how: statistics.median(r["errors"][f][how]["rmse"] for r in runs)
        s0 = runs[0]
        rows.append(
            f"| {title} | {s0['window']} / {s0['horizon']} / {s0['period']} "
            f"| {med('transformer', 'rollout'):.4g} ({med('transformer', 'teacher_forced'):.4g}) "
            f"| {med('nw', 'rollout'):.4g} ({med('nw', 'teacher_forced'):.4g}) "
            f"| {med('seasonal_naive', 'rollout'):.4g} ({med('seasonal_naive', 'teacher_forced'):.4g}) "
            f"| {s0['errors']['mean']['rmse']:.4g} "
            f"| {statistics.median(r['epochs_run'] for r in runs):.0f} "
            f"| {statistics.median(r['wall'] for r in runs):.1f} |")
    text = (
        f"| series | window / horizon / period | transformer, median of {len(seeds)} seeds | "
        "NW forecaster | seasonal naive | mean | epochs (median) | s per run (median) |\n"
        "|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(text)
    if markdown:
        with open(markdown, "w") as f:
            f.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder for the CSV files")
    p.add_argument("--kf", help="the kf binary: also run the table")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--markdown", help="write the table here too")
    a = p.parse_args()
    write_examples(a.out)
    print(f"wrote {a.out}/: " + ", ".join(e[0] for e in EXAMPLES), file=sys.stderr)
    if a.kf:
        run_table(a.out, a.kf, [int(s) for s in a.seeds.split(",")], a.markdown)


if __name__ == "__main__":
    main()
