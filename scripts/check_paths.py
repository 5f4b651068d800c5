#!/usr/bin/env python3
"""Finds paths of this repository named in the docs and in source comments that no longer exist.

Scans README.md, docs/*.md, and the comments and strings of every tracked source file for words
that look like a repository path — src/..., include/..., apps/..., tests/..., python/...,
scripts/..., bench/..., web/..., docs/..., models/..., fuzz/..., cmake/... with a file name at the
end, and bare file names (smooth.cpp) that no tracked file has — and prints each one that names neither a file nor a folder of the checkout, with where it was
named. A path may be relative to the repository, to the naming file's folder (CMake, #include) or
to its top folder (tests/ includes "apps/run_kf.hpp"); a trailing `:LINE` or `#anchor`, a glob
(`*`), a brace list (`a{b,c}.hpp`) and a format field (`{}`) are allowed (they must match).

    python3 scripts/check_paths.py        exit 1 if a named path does not exist
"""
import glob
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPS = ("src", "include", "apps", "tests", "python", "scripts", "bench", "web", "docs", "models",
        "fuzz", "cmake", ".ci", "kernelformer")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w.*{},/+-]*[\w*}])" % "|".join(re.escape(t) for t in TOPS))
# Other projects' files, named as such (nanoGPT's scripts, Debian's nanoflann header).
EXTERNAL = {"train.py", "model.py", "prepare.py", "nanoflann.hpp"}
# Named on purpose although absent: made by a build or a run, not kept in the repository.
GENERATED = ("build/", "web/node_modules", "docs/results/periodic_report_full.md")
SUFFIXES = (".cpp", ".hpp", ".h", ".py", ".sh", ".md", ".mjs", ".js", ".css", ".html", ".json",
            ".cmake", ".txt", ".csv", ".safetensors", ".supp", ".toml", ".in")


BARE = re.compile(r"(?<![\w./-])([A-Za-z_][\w-]*\.(?:cpp|hpp|mjs|py|sh))\b")


def candidates(text):
    for m in PATH.finditer(text):
        p = m.group(1).rstrip(".,;:)")
        p = re.sub(r"[:#].*$", "", p)
        yield p


def is_prose(f, line):
    """Docs, and the comments of source files (where bare names are file names, not code)."""
    if f.endswith(".md"):
        return True
    t = line.lstrip()
    return t.startswith(("//", "/*", "* ")) if f.endswith((".cpp", ".hpp", ".h", ".js", ".mjs",
                                                          ".css")) else t.startswith("#")


def exists(p, base=ROOT):
    """P names something under BASE: a file, a folder, a glob's match; a{b,c} brace lists name
    every expansion; {} (a format string's field) matches anything."""
    if any(p.startswith(g) for g in GENERATED):
        return True
    p = p.replace("{{", "{").replace("}}", "}").replace("{}", "*")
    if "{" in p:
        head, rest = p.split("{", 1)
        inner, tail = rest.split("}", 1) if "}" in rest else (rest, "")
        return all(exists(head + x + tail, base) for x in inner.split(","))
    if "*" in p:
        return bool(glob.glob(str(base / p)))
    return (base / p).exists()


def named_from(f, p):
    """P as FILE names it: from the repository root, from FILE's folder (CMake, includes), or
    from FILE's top folder (tests/ includes "apps/run_kf.hpp")."""
    here = (ROOT / f).parent
    top = ROOT / Path(f).parts[0]
    bases = (ROOT, here, top, ROOT / "include", ROOT / "python")  # kernelformer/… headers, package
    return any(exists(p, base) for base in bases)


def main():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    scanned = [f for f in files if f.endswith(SUFFIXES) and not f.startswith(("models/",
                                                                              "docs/results/"))
               and "fixtures" not in f and f != "scripts/check_paths.py"]
    basenames = {Path(f).name for f in files}
    missing = []
    for f in scanned:
        text = (ROOT / f).read_text(errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            for p in candidates(line):
                if "/" not in p.rstrip("/") or p.endswith("/"):
                    continue
                if not re.search(r"\.\w+$|\*", p) and not (ROOT / p).is_dir():
                    continue  # a folder-like word without a file name: only checked if a folder
                if not named_from(f, p):
                    missing.append(f"{f}:{lineno}: {p}")
            if not is_prose(f, line):
                continue
            for m in BARE.finditer(line):  # a file named without its folder: somewhere
                name = m.group(1)
                if name in EXTERNAL or line[m.start() - 1:m.start()] == "*":
                    continue
                if name not in basenames and not line[m.end():].startswith(("/", ".")):
                    missing.append(f"{f}:{lineno}: {name} (no file of that name)")
    for m in missing:
        print(m)
    print(f"check_paths: {len(scanned)} files scanned, {len(missing)} paths that do not exist",
          file=sys.stderr)
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
