#!/usr/bin/python3
"""Merge the table.csv files of several `kf experiment periodic` runs into one table.

On a 2-core machine the 9 runs of a 3-seed table are faster as separate one-thread processes
(one per function and seed, two at a time) than as one process. Each run is seeded, so the
rows should be the ones a single `kf experiment periodic --seeds 0,1,2` with one thread gives.
Writes OUT.csv (every row, sorted) and OUT.md (per function and kernel: median and min-max of
the rollout MSE over seeds, the teacher-forced median, and the half-the-paper target of
issue 5).
Usage: /usr/bin/python3 python/merge_periodic_tables.py RUN_DIR_OR_CSV... --out OUT
       [--title "Setting: ..."]
"""
import argparse
import csv
import os
import statistics
import sys

ORDER = {"sin": 0, "sin-exp": 1, "square": 2}


def read_rows(path):
    if os.path.isdir(path):
        path = os.path.join(path, "table.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "rollout" not in rows[0]:
        raise ValueError(f"{path}: not a kf experiment periodic table.csv")
    return rows


def fmt(x):
    return f"{x:.3g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", help="run directories (with table.csv) or CSV files")
    ap.add_argument("--out", required=True, help="OUT: writes OUT.csv and OUT.md")
    ap.add_argument("--title", default="", help="a line above the table (the setting)")
    a = ap.parse_args()
    rows = []
    try:
        for p in a.inputs:
            rows += read_rows(p)
    except (OSError, ValueError, KeyError) as e:
        print(f"merge_periodic_tables: {e}", file=sys.stderr)
        return 2
    rows.sort(key=lambda r: (ORDER.get(r["function"], 9), r["kernel"], int(r["seed"])))
    seen = set()
    for r in rows:
        key = (r["function"], r["kernel"], r["seed"])
        if key in seen:
            print(f"merge_periodic_tables: {key} appears twice", file=sys.stderr)
            return 2
        seen.add(key)

    groups = {}
    for r in rows:
        groups.setdefault((r["function"], r["kernel"]), []).append(r)
    lines = []
    if a.title:
        lines += [a.title, ""]
    lines += ["| function | paper | target (half) | NW forecaster | NW, rollout-validated h | kernel "
              "| seeds | rollout MSE median (min–max) | teacher-forced median | met |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for (fn, kern), g in groups.items():
        ro = [float(r["rollout"]) for r in g]
        tf = [float(r["teacher_forced"]) for r in g]
        paper = float(g[0]["paper"])
        med = statistics.median(ro)
        lines.append(
            f"| {fn} | {paper:g} | {paper / 2:g} | {fmt(float(g[0]['nw_rollout']))} | "
            f"{fmt(float(g[0]['nw_rollout_validated_rollout']))} | {kern} | "
            f"{','.join(r['seed'] for r in g)} | **{fmt(med)}** ({fmt(min(ro))}–{fmt(max(ro))}) | "
            f"{fmt(statistics.median(tf))} | {'yes' if med <= paper / 2 else 'no'} |")
    tmp_md, tmp_csv = a.out + ".md.tmp", a.out + ".csv.tmp"
    try:  # both files written in full, then renamed: no partial output
        with open(tmp_csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        with open(tmp_md, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp_csv, a.out + ".csv")
        os.replace(tmp_md, a.out + ".md")
    except OSError as e:
        for t in (tmp_csv, tmp_md):
            if os.path.exists(t):
                os.remove(t)
        print(f"merge_periodic_tables: --out {a.out}: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
