#!/usr/bin/python3
"""Parity fixtures for the direct plug-in bandwidth of local-linear regression (Ruppert, Sheather
& Wand 1995): R's KernSmooth::dpill (Debian's r-cran-kernsmooth) at its defaults, with every
intermediate value of its computation (docs/notes/dpill_algorithm.md describes the algorithm).

Writes tests/fixtures/dpill_cases.json: R and KernSmooth versions, the BLAS R ran on, dpill's
defaults, and one entry per data set of CASES with
  the inputs x, y as given (unsorted; dpill sorts them itself, stably) — or, for the large case,
  the recipe, the seed and the first 10 values, the full inputs being
  tests/fixtures/dpill_<case>_x.npy and dpill_<case>_y.npy (float64, 1-d);
  "h": dpill(x, y) at the defaults, and "h_truncate_false": dpill(x, y, truncate = FALSE);
  "steps": the scalars of dpill's body, recomputed in R with the package's own internals
    (rlbin, the Fortran cp of cpblock, blkest, locpoly, sdiag, sstdiag) and checked there to
    give dpill's h bit for bit: n after trimming, a, b, delta, Nmax, the Mallows Cp values and
    block residual sums of squares for 1..Nmax blocks, Nval, sigsqQ, th22Q, th24Q, gamseh and its
    kernel half-width L = floor(4 gamseh / delta), th22kn, C3K, lamseh and its L, sum(y^2),
    sigsqn, sigsqd, sigsqkn;
  "vectors": the length-401 grid vectors xcounts, ycounts (linear binning), mddest
    (locpoly drv = 2 at gamseh), mest (local linear fit at lamseh), Sdg and SSTdg (diagonals of
    the binned smoother matrix S and of S S^T).
Every number is R's double to full precision (printed with %.17g, stored as JSON numbers that
parse back to the same double).
Data: R's cars (speed -> dist, 50 points, ties), faithful (eruptions -> waiting, 272),
airquality (Temp -> Ozone, the 116 rows with Ozone present), MASS's mcycle (times -> accel,
133, ties), and written here with fixed seeds: a noisy sine at n = 30 (one block: Nmax = 1),
200 and 2000, a steep tanh step, an exponential (theta_24 > 0: the other branch
of the pilot bandwidth), and a sine over x in 1950..2000 ("ill_conditioned": true — the raw-power
quartic fits lose digits there, so R's value is itself uncertain beyond a few digits).
Run: apt-get install -y r-base-core r-cran-kernsmooth r-cran-mass &&
     /usr/bin/python3 python/make_fixture_dpill.py
"""
import json
import os
import subprocess
import tempfile

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
JSON_PATH = os.path.join(OUT, "dpill_cases.json")
NPY_MIN_N = 50000  # inputs at least this long go to .npy files, the rest into the JSON
R_DATA = {
    "cars": ("cars$speed", "cars$dist", "R datasets::cars, speed -> dist"),
    "faithful": ("faithful$eruptions", "faithful$waiting",
                 "R datasets::faithful, eruptions -> waiting"),
    "airquality": ("airquality$Temp[!is.na(airquality$Ozone)]",
                   "as.numeric(airquality$Ozone[!is.na(airquality$Ozone)])",
                   "R datasets::airquality, Temp -> Ozone, rows with Ozone NA removed"),
    "mcycle": ("MASS::mcycle$times", "MASS::mcycle$accel", "R MASS::mcycle, times -> accel"),
}
# name -> (seed, n, recipe); x is drawn first, then the noise, from np.random.RandomState(seed).
SYNTHETIC = {
    "sin30": (6, 30, "x = U(0, 1); y = sin(2 pi x) + 0.3 N(0, 1)"),
    "sin200": (1, 200, "x = U(0, 1); y = sin(2 pi x) + 0.3 N(0, 1)"),
    "sin2000": (2, 2000, "x = U(0, 1); y = sin(2 pi x) + 0.3 N(0, 1)"),
    "steep_tanh": (4, 500, "x = U(0, 1); y = tanh(25 (x - 0.5)) + 0.1 N(0, 1)"),
    "steep_exp": (5, 300, "x = U(0, 2); y = exp(2 x) + 0.5 N(0, 1)"),
    "offset_years": (7, 400, "x = 1950 + U(0, 50); y = sin(x / 5) + 0.3 N(0, 1)"),
}
# The quartic block fits use raw powers of x: with |x| large against its spread they are badly
# conditioned and R's digits past the first few are rounding noise (see the notes).
ILL_CONDITIONED = {"offset_years"}
CASES = ["cars", "faithful", "airquality", "mcycle", "sin30", "sin200", "sin2000",
         "steep_tanh", "steep_exp", "offset_years"]

# dpill's body (KernSmooth 2.23-20, R/all.R) step by step with the package's internals; the
# Fortran cp routine is called directly (as cpblock does) so that its Cp values are kept too.
R_CODE = r"""
suppressPackageStartupMessages(library(KernSmooth))
ks <- asNamespace("KernSmooth")
fmt <- function(v) paste(sprintf("%.17g", v), collapse = " ")
put <- function(con, key, v) writeLines(paste0(key, "\t", fmt(v)), con)

dpill_steps <- function(x, y, blockmax = 5, divisor = 20, trim = 0.01, proptrun = 0.05,
                        gridsize = 401L) {
  xy <- cbind(x, y)
  xy <- xy[sort.list(xy[, 1L]), ]
  x <- xy[, 1L]; y <- xy[, 2L]
  indlow <- floor(trim * length(x)) + 1
  indupp <- length(x) - floor(trim * length(x))
  x <- x[indlow:indupp]; y <- y[indlow:indupp]
  n <- length(x); M <- gridsize
  a <- min(x); b <- max(x)   # dpill's default range.x = range(x) is forced after the trim
  gpoints <- seq(a, b, length = M)
  bins <- ks$rlbin(x, y, gpoints, TRUE)
  xcounts <- bins$xcounts; ycounts <- bins$ycounts
  Nmax <- max(min(floor(n / divisor), blockmax), 1)
  qq <- 5L
  cpo <- .Fortran(ks$F_cp, as.double(x), as.double(y), as.integer(n), as.integer(qq),
                  as.integer(Nmax), double(Nmax), double(n), double(n), double(qq),
                  double(n * qq), double(n), double(qq), Cpvals = double(Nmax))
  Nval <- order(cpo$Cpvals)[1L]
  stopifnot(Nval == ks$cpblock(x, y, Nmax, 4))
  blk <- ks$blkest(x, y, Nval, 4)
  sigsqQ <- blk$sigsqe; th24Q <- blk$th24e
  gamseh <- (sigsqQ * (b - a) / (abs(th24Q) * n))
  if (th24Q < 0) gamseh <- (3 * gamseh / (8 * sqrt(pi)))^(1/7)
  if (th24Q > 0) gamseh <- (15 * gamseh / (16 * sqrt(pi)))^(1/7)
  mddest <- locpoly(xcounts, ycounts, drv = 2L, bandwidth = gamseh, range.x = c(a, b),
                    binned = TRUE)$y
  llow <- floor(proptrun * M) + 1; lupp <- M - floor(proptrun * M)
  th22kn <- sum((mddest[llow:lupp]^2) * xcounts[llow:lupp]) / n
  C3K <- (1/2) + 2 * sqrt(2) - (4/3) * sqrt(3)
  C3K <- (4 * C3K / (sqrt(2 * pi)))^(1/9)
  lamseh <- C3K * (((sigsqQ^2) * (b - a) / ((th22kn * n)^2))^(1/9))
  mest <- locpoly(xcounts, ycounts, bandwidth = lamseh, range.x = c(a, b), binned = TRUE)$y
  Sdg <- ks$sdiag(xcounts, bandwidth = lamseh, range.x = c(a, b), binned = TRUE)$y
  SSTdg <- ks$sstdiag(xcounts, bandwidth = lamseh, range.x = c(a, b), binned = TRUE)$y
  sigsqn <- sum(y^2) - 2 * sum(mest * ycounts) + sum((mest^2) * xcounts)
  sigsqd <- n - 2 * sum(Sdg * xcounts) + sum(SSTdg * xcounts)
  sigsqkn <- sigsqn / sigsqd
  h <- (sigsqkn * (b - a) / (2 * sqrt(pi) * th22kn * n))^(1/5)
  delta <- (b - a) / (M - 1L)
  list(scalars = list(n = n, indlow = indlow, indupp = indupp, a = a, b = b, delta = delta,
                      Nmax = Nmax, Cpvals = cpo$Cpvals, RSS = cpo[[6L]], Nval = Nval,
                      sigsqQ = sigsqQ, th22Q = blk$th22e, th24Q = th24Q, gamseh = gamseh,
                      L_gamseh = floor(4 * gamseh / delta), llow = llow, lupp = lupp,
                      th22kn = th22kn, C3K = C3K, lamseh = lamseh,
                      L_lamseh = floor(4 * lamseh / delta), sum_y2 = sum(y^2),
                      sigsqn = sigsqn, sigsqd = sigsqd, sigsqkn = sigsqkn, h = h),
       vectors = list(xcounts = xcounts, ycounts = ycounts, mddest = mddest, mest = mest,
                      Sdg = Sdg, SSTdg = SSTdg))
}

args <- commandArgs(trailingOnly = TRUE)
tmp <- args[1L]
con <- file(file.path(tmp, "meta.txt"), "w")
writeLines(paste0("r_version\t", R.version.string), con)
writeLines(paste0("kernsmooth_version\t", as.character(packageVersion("KernSmooth"))), con)
writeLines(paste0("blas\t", extSoftVersion()[["BLAS"]]), con)
close(con)
cases <- read.table(file.path(tmp, "cases.tsv"), sep = "\t", header = FALSE,
                    stringsAsFactors = FALSE, quote = "")
for (i in seq_len(nrow(cases))) {
  name <- cases[i, 1L]
  if (cases[i, 2L] == "bin") {
    n <- as.integer(cases[i, 3L])
    x <- readBin(file.path(tmp, paste0(name, "_x.bin")), "double", n, 8L, endian = "little")
    y <- readBin(file.path(tmp, paste0(name, "_y.bin")), "double", n, 8L, endian = "little")
  } else {
    x <- as.numeric(eval(parse(text = cases[i, 3L])))
    y <- as.numeric(eval(parse(text = cases[i, 4L])))
    writeBin(x, file.path(tmp, paste0(name, "_x.bin")), endian = "little")
    writeBin(y, file.path(tmp, paste0(name, "_y.bin")), endian = "little")
  }
  h <- dpill(x, y)
  st <- dpill_steps(x, y)
  if (!identical(st$scalars$h, h)) stop("step-by-step h differs from dpill's for ", name)
  con <- file(file.path(tmp, paste0(name, "_out.txt")), "w")
  put(con, "n_input", length(x))
  put(con, "h", h)
  put(con, "h_truncate_false", dpill(x, y, truncate = FALSE))
  for (k in names(st$scalars)) put(con, paste0("steps.", k), st$scalars[[k]])
  for (k in names(st$vectors)) put(con, paste0("vectors.", k), st$vectors[[k]])
  close(con)
}
"""

INT_KEYS = {"n_input", "n", "indlow", "indupp", "Nmax", "Nval", "L_gamseh", "L_lamseh",
            "llow", "lupp"}


def synthetic(name):
    seed, n, _ = SYNTHETIC[name]
    rng = np.random.RandomState(seed)
    if name.startswith("sin"):
        x = rng.uniform(0.0, 1.0, n)
        y = np.sin(2.0 * np.pi * x) + 0.3 * rng.standard_normal(n)
    elif name == "steep_tanh":
        x = rng.uniform(0.0, 1.0, n)
        y = np.tanh(25.0 * (x - 0.5)) + 0.1 * rng.standard_normal(n)
    elif name == "steep_exp":
        x = rng.uniform(0.0, 2.0, n)
        y = np.exp(2.0 * x) + 0.5 * rng.standard_normal(n)
    elif name == "offset_years":
        x = 1950.0 + rng.uniform(0.0, 50.0, n)
        y = np.sin(x / 5.0) + 0.3 * rng.standard_normal(n)
    else:
        raise ValueError(name)
    return x, y


def parse_out(path):
    rec = {}
    with open(path) as f:
        for line in f:
            key, vals = line.rstrip("\n").split("\t")
            nums = [float(v) for v in vals.split(" ")]
            base = key.split(".")[-1]
            if base in INT_KEYS:
                nums = [int(v) for v in nums]
            rec[key] = nums
    return rec


def main():
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for name in CASES:
            if name in R_DATA:
                xs, ys, _ = R_DATA[name]
                rows.append(f"{name}\texpr\t{xs}\t{ys}")
            else:
                x, y = synthetic(name)
                x.astype("<f8").tofile(os.path.join(tmp, name + "_x.bin"))
                y.astype("<f8").tofile(os.path.join(tmp, name + "_y.bin"))
                rows.append(f"{name}\tbin\t{len(x)}\t-")
        with open(os.path.join(tmp, "cases.tsv"), "w") as f:
            f.write("\n".join(rows) + "\n")
        script = os.path.join(tmp, "dpill.R")
        with open(script, "w") as f:
            f.write(R_CODE)
        subprocess.run(["Rscript", "--vanilla", script, tmp], check=True)
        meta = {}
        with open(os.path.join(tmp, "meta.txt")) as f:
            for line in f:
                k, v = line.rstrip("\n").split("\t", 1)
                meta[k] = v
        for name in CASES:
            x = np.fromfile(os.path.join(tmp, name + "_x.bin"), dtype="<f8")
            y = np.fromfile(os.path.join(tmp, name + "_y.bin"), dtype="<f8")
            rec = parse_out(os.path.join(tmp, name + "_out.txt"))
            case = {"name": name}
            if name in R_DATA:
                case["source"] = R_DATA[name][2]
            else:
                seed, n, recipe = SYNTHETIC[name]
                case["source"] = "synthetic, generated by this script"
                case["recipe"] = (f"np.random.RandomState({seed}); {recipe}; n = {n}; x drawn "
                                  "first (all n), then the noise (all n)")
                case["seed"] = seed
            case["n_input"] = rec["n_input"][0]
            case["ill_conditioned"] = name in ILL_CONDITIONED
            if case["ill_conditioned"]:
                case["note"] = ("x far from 0 against its spread: the raw-power quartic fits of "
                                "cp/blkest lose most digits, so only a loose match of sigsqQ, "
                                "th24Q and everything after them is meaningful")
            if len(x) >= NPY_MIN_N:
                for tag, v in (("x", x), ("y", y)):
                    fname = f"dpill_{name}_{tag}.npy"
                    np.save(os.path.join(OUT, fname), v.astype(np.float64))
                    case[tag + "_npy"] = fname
                    case[tag + "_head"] = v[:10].tolist()
            else:
                case["x"] = x.tolist()
                case["y"] = y.tolist()
            case["h"] = rec["h"][0]
            case["h_truncate_false"] = rec["h_truncate_false"][0]
            steps, vectors = {}, {}
            for key, vals in rec.items():
                if key.startswith("steps."):
                    k = key[len("steps."):]
                    steps[k] = vals if k in ("Cpvals", "RSS") else vals[0]
                elif key.startswith("vectors."):
                    vectors[key[len("vectors."):]] = vals
            case["steps"] = steps
            case["vectors"] = vectors
            cases.append(case)
    doc = {
        "generator": "python/make_fixture_dpill.py",
        "what": "KernSmooth::dpill(x, y) at its defaults, with the intermediate values of its "
                "body; see docs/notes/dpill_algorithm.md",
        "r_version": meta["r_version"],
        "kernsmooth_version": meta["kernsmooth_version"],
        "blas": meta["blas"],
        "defaults": {"blockmax": 5, "divisor": 20, "trim": 0.01, "proptrun": 0.05,
                     "gridsize": 401, "range.x": "range of the trimmed x", "truncate": True,
                     "q": 4, "tau": 4},
        "cases": cases,
    }
    with open(JSON_PATH, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    for c in cases:
        print(f"{c['name']:>11}  n={c['n_input']:6d}  Nval={c['steps']['Nval']}  "
              f"th24Q={c['steps']['th24Q']:+.3e}  h={c['h']!r}")
    print(f"wrote {os.path.relpath(JSON_PATH)} ({os.path.getsize(JSON_PATH)} bytes)")


if __name__ == "__main__":
    main()
