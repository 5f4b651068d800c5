#!/usr/bin/python3
"""The runs `kf report --full` kept, beside the documented per-seed values.

`kf report --full --out DIR` keeps each of its 18 periodic runs in
DIR/trained/periodic_FUNCTION_SETTING_sSEED.safetensors with the command that made it
(`trained_by`), the rollout test MSE it reached (`test_mse_rollout`) and its training time
(`train_seconds`) in the safetensors header. This prints one markdown table of them, each run
beside the documented value of the same function, setting and seed
(docs/results/periodic_code_improved_dropout005.csv, periodic_code_faithful.csv), and per
function and setting the 3-seed median now against the documented one.
Usage: /usr/bin/python3 python/periodic_full_runs.py DIR [--out FILE.md]
"""
import argparse
import csv
import json
import os
import statistics
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DOCUMENTED = {
    "improved": "docs/results/periodic_code_improved_dropout005.csv",
    "faithful": "docs/results/periodic_code_faithful.csv",
}
FUNCTIONS = ["sin", "sin-exp", "square"]


def header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


def documented():
    out = {}
    for setting, rel in DOCUMENTED.items():
        with open(os.path.join(HERE, "..", rel), newline="") as f:
            for row in csv.DictReader(f):
                out[(row["function"], setting, int(row["seed"]))] = float(row["rollout"])
    return out


def fmt(v):
    return "—" if v is None else f"{v:.3g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="the --out of kf report --full")
    ap.add_argument("--out", help="write the table here too (markdown)")
    a = ap.parse_args()
    doc = documented()
    lines = ["| function | setting | seed | rollout MSE now | documented | train s | command |",
             "|---|---|---|---|---|---|---|"]
    now = {}
    for fn in FUNCTIONS:
        for setting in DOCUMENTED:
            for seed in range(3):
                path = os.path.join(a.dir, "trained", f"periodic_{fn}_{setting}_s{seed}.safetensors")
                if not os.path.exists(path):
                    lines.append(f"| {fn} | {setting} | {seed} | (not trained yet) | "
                                 f"{fmt(doc.get((fn, setting, seed)))} | | |")
                    continue
                md = header(path)
                mse = float(md["test_mse_rollout"])
                now.setdefault((fn, setting), []).append(mse)
                lines.append(f"| {fn} | {setting} | {seed} | {mse:.3g} | "
                             f"{fmt(doc.get((fn, setting, seed)))} | {md.get('train_seconds', '')} "
                             f"| `{md.get('trained_by', '')}` |")
    lines += ["", "| function | setting | 3-seed median now (min–max) | documented median (min–max) |",
              "|---|---|---|---|"]
    for fn in FUNCTIONS:
        for setting in DOCUMENTED:
            d = [doc[(fn, setting, s)] for s in range(3)]
            v = now.get((fn, setting), [])
            cell = (f"{statistics.median(v):.3g} ({min(v):.3g}–{max(v):.3g})" if len(v) == 3
                    else f"{len(v)} of 3 runs")
            lines.append(f"| {fn} | {setting} | {cell} | "
                         f"{statistics.median(d):.3g} ({min(d):.3g}–{max(d):.3g}) |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
