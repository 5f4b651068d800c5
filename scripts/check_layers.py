#!/usr/bin/env python3
"""Checks the include graph against the layer order of docs/architecture.md ("Layers").

Each file of include/kernelformer/ and src/ belongs to the layer of its folder; a file may include
its own layer and those below it, never one above. apps/ (the kf command line) and python/src/
(the binding) are above every library layer. Prints each include that goes up, with the file and
line; exit 1 if there is one.

    python3 scripts/check_layers.py
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Lowest first. A folder not named here belongs to the layer of its parent folder.
LAYERS = [
    ("core", ["", "detail", "smooth", "io", "text"]),  # the primitive, kernels, masks, files
    ("nn", ["nn", "optim"]),                              # layers and the optimizer
    ("regression", ["regression"]),                       # smoothers, density, classification
    ("viz", ["viz"]),                                     # figures and the HTML report
    ("model", ["model"]),                                 # models, training, forecasting
    ("explore", ["explore"]),                             # explorer, inspection, demos, pages
    ("dist", ["dist"]),                                   # the MPI route over the library
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(rel):
    """The layer index of a path relative to include/kernelformer/ or src/ (its first folder)."""
    parts = Path(rel).parts
    folder = parts[0] if len(parts) > 1 else ""
    for k, (_, folders) in enumerate(LAYERS):
        if folder in folders:
            return k
    return None


def target_of(inc, here):
    """The included file, relative to include/kernelformer/ or src/, or None (third party)."""
    if inc.startswith("kernelformer/"):
        return inc[len("kernelformer/"):]
    for base in (here.parent, ROOT / "src"):  # "plan.hpp" beside it, "smooth/common.hpp" in src/
        f = base / inc
        if f.exists() and (ROOT / "src") in f.resolve().parents:
            return str(f.resolve().relative_to(ROOT / "src"))
    return None


def main():
    ups, checked = [], 0
    for top in (ROOT / "include" / "kernelformer", ROOT / "src"):
        for f in sorted(top.rglob("*.[ch]pp")):
            own = layer_of(f.relative_to(top))
            if own is None:
                ups.append(f"{f.relative_to(ROOT)}: folder in no layer (docs/architecture.md)")
                continue
            for n, line in enumerate(f.read_text().splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                t = target_of(m.group(1), f)
                if t is None:
                    continue
                checked += 1
                to = layer_of(t)
                if to is not None and to > own:
                    ups.append(f"{f.relative_to(ROOT)}:{n}: layer {LAYERS[own][0]} includes "
                               f"{m.group(1)} (layer {LAYERS[to][0]})")
    for u in ups:
        print(u)
    print(f"check_layers: {checked} includes checked, {len(ups)} going up a layer",
          file=sys.stderr)
    sys.exit(1 if ups else 0)


if __name__ == "__main__":
    main()
