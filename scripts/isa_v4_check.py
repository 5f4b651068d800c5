#!/usr/bin/env python3
"""The AVX-512 compile check, compiling only what its flags change.

The check exists so that code only an AVX-512 build sees (the `#if defined(__AVX512F__)` branches
of the kernels, Eigen's and the standard library's AVX-512 paths) breaks on any machine, not only
on one with AVX-512. `cmake --preset isa-v4` configures the library with -march=x86-64-v4 and
-Werror; this script then preprocesses each library source twice, with and without
-march=x86-64-v4 (a few seconds in all), and compiles, with warnings as errors, only the sources
whose preprocessed text differs: the others would compile to the very code the dev build already
checked. Every compile goes through ccache like the other builds.

    python3 scripts/isa_v4_check.py [BUILD_DIR]     (default build/isa-v4, configured first)

Prints how many sources the flags change and each compile that fails; exits 1 if one does.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ISA_FLAG = "-march=x86-64-v4"


def preprocess_digest(args, cwd):
    """MD5 of the preprocessed text (no line markers) of the compile ARGS."""
    r = subprocess.run(args + ["-E", "-P", "-o", "-"], cwd=cwd, capture_output=True)
    if r.returncode != 0:
        return None  # the compile below reports the error
    return hashlib.md5(r.stdout).hexdigest()


def split_command(entry):
    """The compiler's arguments of a compile_commands.json entry: (launcher-free compile command,
    the same without -c/-o/dependency outputs)."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    if Path(args[0]).name == "ccache":
        args = args[1:]
    plain, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif a not in ("-c", "-MD", "-MMD"):
            plain.append(a)
    return args, plain


def check(entry):
    """(source, None) when the flags change nothing, (source, error text or '') when compiled."""
    source = os.path.relpath(entry["file"], ROOT)
    full, plain = split_command(entry)
    base = [a for a in plain if a != ISA_FLAG]
    cwd = entry["directory"]
    if preprocess_digest(plain, cwd) == preprocess_digest(base, cwd) is not None:
        return source, None
    launcher = ["ccache"] if subprocess.run(["sh", "-c", "command -v ccache"],
                                            capture_output=True).returncode == 0 else []
    r = subprocess.run(launcher + full, cwd=cwd, capture_output=True, text=True)
    return source, ("" if r.returncode == 0 else r.stderr[-4000:])


def main():
    build = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "isa-v4")
    subprocess.run(["cmake", "--preset", "isa-v4", "-B", str(build)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    entries = [e for e in json.loads((build / "compile_commands.json").read_text())
               if Path(e["file"]).resolve().is_relative_to(ROOT / "src")]
    if not entries or ISA_FLAG not in entries[0].get("command", ""):
        sys.exit(f"isa_v4_check: {build}/compile_commands.json has no {ISA_FLAG} compiles")
    for e in entries:  # the objects' folders (a configure does not make them)
        out = split_command(e)[0]
        if "-o" in out:
            (Path(e["directory"]) / out[out.index("-o") + 1]).parent.mkdir(parents=True,
                                                                            exist_ok=True)
    jobs = int(os.environ.get("KF_BUILD_JOBS", os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = sorted(pool.map(check, entries))
    compiled = [(s, err) for s, err in results if err is not None]
    failed = [(s, err) for s, err in compiled if err]
    print(f"isa_v4_check: {ISA_FLAG} changes {len(compiled)} of {len(entries)} library sources; "
          f"compiled those with -Werror: {len(compiled) - len(failed)} ok, {len(failed)} failed")
    for s, err in failed:
        print(f"--- {s}\n{err}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
