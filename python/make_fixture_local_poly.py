#!/usr/bin/python3
"""Parity fixtures for local polynomial regression of degree p and its derivative nu
(kf::local_poly_exact, kf::local_poly_binned; include/kernelformer/regression/local_poly.hpp):
R's exact weighted least squares at query and training points, and KernSmooth::locpoly's binned
estimates on its grid.

The estimator at x0: the polynomial of degree p in (x_j - x0) fitted by least squares with
weights K((x_j - x0)/h), K the gaussian (R's dnorm; the project's kernel_gaussian with bandwidth h,
exp(-d^2/(2h^2)), differs by the constant 1/sqrt(2 pi), which cancels). m^(nu)(x0) = nu! beta_nu.
It is a linear smoother m^(nu)(x0) = sum_j l_j(x0) y_j with
  l = nu! e_nu' (X'WX)^{-1} X'W.

Writes tests/fixtures/local_poly_cases.json: R and KernSmooth versions, the BLAS R ran on, and one
entry per data set of CASES with
  "x", "y": the inputs as given (unsorted);
  "h": the bandwidth, KernSmooth::dpill(x, y) (the plug-in bandwidth for local linear; the same h
    for every degree: the fixture tests the algebra, not the choice of h);
  "xq": 25 query points, seq(min(x), max(x), length = 25) (the data's ends included);
  "fits": one entry per degree p = 0..3 and derivative nu = 0..min(p, 2) with
    "query": {"fit", "sum_l2", "defined"} at xq and
    "train": {"fit", "sum_l2", "self_weight", "defined"} at the training points x_i, in input order
    (self_weight = l_i(x_i), the hat diagonal for nu = 0, and the same weight of the derivative
    smoother for nu > 0), where sum_l2 = sum_j l_j(x0)^2 (se = sigma * sqrt(sum_l2));
  "locpoly" (mcycle and faithful only): KernSmooth::locpoly(x, y, drv = nu, degree = p,
    bandwidth = h, gridsize = 401, truncate = FALSE) for the same (p, nu): "grid" (its x, the
    401 points seq(min(x), max(x), length = 401)) and per (p, nu) "y" (its estimates; null where
    LINPACK's solve gave a non-finite value).
How R computes the exact values: u = (x - x0)/h, X = [u^0 .. u^p], w = dnorm(u), A = sqrt(w) X,
A = QR (R's qr, LINPACK dqrdc2), l = nu!/h^nu * (row nu of R^{-1} Q') * sqrt(w); fit = sum l y,
sum_l2 = sum l^2. defined = 0 (and fit = sum_l2 = self_weight = 0) where qr's rank < p + 1 (never
happens for these data). Every fit is checked in R against lm.wfit(cbind((x - x0)^k), y, w) in raw
centred units, coefficient nu times nu!, to 1e-7 of the data's scale.
locpoly's truncate = FALSE: at its default truncate = TRUE, KernSmooth's linbin drops every point
whose bin index (x - a)/delta + 1 reaches M, so the largest x (one point of each set here) is left
out of every fit; with truncate = FALSE it goes to the last node, as kf's binning does. locpoly
truncates the gaussian at tau = 4 bandwidths (L = floor(4 h / delta) grid steps) and solves
raw-unit moment systems by LU (dgefa/dgesl) at every node.
Every number is R's double to full precision (printed with %.17g, stored as JSON numbers that
parse back to the same double).
Data: R's cars (speed -> dist, 50 points, ties), faithful (eruptions -> waiting, 272), MASS's
mcycle (times -> accel, 133, ties), and a noisy sine written here with a fixed seed (n = 200).
Run: apt-get install -y r-base-core r-cran-kernsmooth r-cran-mass &&
     /usr/bin/python3 python/make_fixture_local_poly.py
"""
import json
import math
import os
import subprocess
import tempfile

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
JSON_PATH = os.path.join(OUT, "local_poly_cases.json")
R_DATA = {
    "cars": ("cars$speed", "cars$dist", "R datasets::cars, speed -> dist"),
    "mcycle": ("MASS::mcycle$times", "MASS::mcycle$accel", "R MASS::mcycle, times -> accel"),
    "faithful": ("faithful$eruptions", "faithful$waiting",
                 "R datasets::faithful, eruptions -> waiting"),
}
# name -> (seed, n, recipe); x is drawn first, then the noise, from np.random.RandomState(seed).
SYNTHETIC = {"sin200": (11, 200, "x = U(0, 1); y = sin(2 pi x) + 0.3 N(0, 1)")}
CASES = ["cars", "mcycle", "faithful", "sin200"]
LOCPOLY_CASES = {"mcycle", "faithful"}
N_QUERY = 25
GRIDSIZE = 401
PAIRS = [(p, nu) for p in range(4) for nu in range(min(p, 2) + 1)]

R_CODE = r"""
suppressPackageStartupMessages({library(KernSmooth); library(MASS)})
fmt <- function(v) paste(sprintf("%.17g", v), collapse = " ")
put <- function(con, key, v) writeLines(paste0(key, "\t", fmt(v)), con)

# The smoother weights l_j(x0) of the nu-th derivative of the degree-p fit (NULL: rank < p + 1).
lp_weights <- function(x, x0, h, p, nu) {
  u <- (x - x0) / h
  w <- dnorm(u)
  A <- sqrt(w) * outer(u, 0:p, "^")
  qa <- qr(A)
  if (qa$rank < p + 1) return(NULL)
  pinv <- backsolve(qr.R(qa), t(qr.Q(qa)))   # R^{-1} Q', rows in qr's pivot order
  pinv <- pinv[order(qa$pivot), , drop = FALSE]
  factorial(nu) / h^nu * pinv[nu + 1, ] * sqrt(w)
}

# The same fit by lm.wfit in raw centred units (x - x0)^k: the check.
lp_lm <- function(x, y, x0, h, p, nu) {
  d <- x - x0
  X <- outer(d, 0:p, "^")
  factorial(nu) * lm.wfit(X, y, dnorm(d / h))$coefficients[nu + 1]
}

evaluate <- function(x, y, xq, h, p, nu, training) {
  m <- length(xq)
  fit <- sum_l2 <- self <- numeric(m)
  defined <- integer(m)
  scale <- max(abs(y)) / h^nu
  for (i in seq_len(m)) {
    l <- lp_weights(x, xq[i], h, p, nu)
    if (is.null(l)) next
    defined[i] <- 1L
    fit[i] <- sum(l * y)
    sum_l2[i] <- sum(l^2)
    if (training) self[i] <- l[i]
    ref <- lp_lm(x, y, xq[i], h, p, nu)
    if (!(abs(ref - fit[i]) <= 1e-7 * scale))
      stop(sprintf("lm.wfit disagrees: p=%d nu=%d x0=%g: %.17g vs %.17g", p, nu, xq[i], ref,
                   fit[i]))
  }
  list(fit = fit, sum_l2 = sum_l2, self = self, defined = defined)
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
pairs <- read.table(file.path(tmp, "pairs.tsv"), header = FALSE)
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
  with_locpoly <- cases[i, 5L] == "locpoly"
  h <- dpill(x, y)
  xq <- seq(min(x), max(x), length = as.integer(cases[i, 6L]))
  con <- file(file.path(tmp, paste0(name, "_out.txt")), "w")
  put(con, "n", length(x))
  put(con, "h", h)
  put(con, "xq", xq)
  for (k in seq_len(nrow(pairs))) {
    p <- pairs[k, 1L]; nu <- pairs[k, 2L]
    key <- sprintf("p%d_nu%d", p, nu)
    q <- evaluate(x, y, xq, h, p, nu, FALSE)
    t <- evaluate(x, y, x, h, p, nu, TRUE)
    put(con, paste0(key, ".query.fit"), q$fit)
    put(con, paste0(key, ".query.sum_l2"), q$sum_l2)
    put(con, paste0(key, ".query.defined"), q$defined)
    put(con, paste0(key, ".train.fit"), t$fit)
    put(con, paste0(key, ".train.sum_l2"), t$sum_l2)
    put(con, paste0(key, ".train.self_weight"), t$self)
    put(con, paste0(key, ".train.defined"), t$defined)
    if (with_locpoly) {
      lp <- locpoly(x, y, drv = nu, degree = p, bandwidth = h,
                    gridsize = as.integer(cases[i, 7L]), truncate = FALSE)
      if (k == 1L) put(con, "locpoly.grid", lp$x)
      put(con, paste0(key, ".locpoly.y"), lp$y)
    }
  }
  close(con)
}
"""


def synthetic(name):
    seed, n, _ = SYNTHETIC[name]
    rng = np.random.RandomState(seed)
    x = rng.uniform(0.0, 1.0, n)
    y = np.sin(2.0 * np.pi * x) + 0.3 * rng.standard_normal(n)
    return x, y


def parse_out(path):
    rec = {}
    with open(path) as f:
        for line in f:
            key, vals = line.rstrip("\n").split("\t")
            rec[key] = [float(v) for v in vals.split(" ")]
    return rec


def finite_or_none(v):
    return [a if math.isfinite(a) else None for a in v]


def case_entry(name, rec, x, y):
    case = {"name": name}
    if name in R_DATA:
        case["source"] = R_DATA[name][2]
    else:
        seed, n, recipe = SYNTHETIC[name]
        case["source"] = "synthetic, generated by this script"
        case["recipe"] = (f"np.random.RandomState({seed}); {recipe}; n = {n}; x drawn first "
                          "(all n), then the noise (all n)")
        case["seed"] = seed
    case["n"] = int(rec["n"][0])
    case["x"] = x.tolist()
    case["y"] = y.tolist()
    case["h"] = rec["h"][0]
    case["h_source"] = "KernSmooth::dpill(x, y)"
    case["xq"] = rec["xq"]
    fits = []
    for p, nu in PAIRS:
        key = f"p{p}_nu{nu}"
        fits.append({
            "degree": p, "derivative": nu,
            "query": {"fit": rec[key + ".query.fit"], "sum_l2": rec[key + ".query.sum_l2"],
                      "defined": [int(v) for v in rec[key + ".query.defined"]]},
            "train": {"fit": rec[key + ".train.fit"], "sum_l2": rec[key + ".train.sum_l2"],
                      "self_weight": rec[key + ".train.self_weight"],
                      "defined": [int(v) for v in rec[key + ".train.defined"]]},
        })
    case["fits"] = fits
    if name in LOCPOLY_CASES:
        case["locpoly"] = {
            "gridsize": GRIDSIZE, "truncate": False, "tau": 4, "grid": rec["locpoly.grid"],
            "estimates": [{"degree": p, "derivative": nu,
                           "y": finite_or_none(rec[f"p{p}_nu{nu}.locpoly.y"])}
                          for p, nu in PAIRS],
        }
    return case


def main():
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for name in CASES:
            lp = "locpoly" if name in LOCPOLY_CASES else "-"
            if name in R_DATA:
                xs, ys, _ = R_DATA[name]
                rows.append(f"{name}\texpr\t{xs}\t{ys}\t{lp}\t{N_QUERY}\t{GRIDSIZE}")
            else:
                x, y = synthetic(name)
                x.astype("<f8").tofile(os.path.join(tmp, name + "_x.bin"))
                y.astype("<f8").tofile(os.path.join(tmp, name + "_y.bin"))
                rows.append(f"{name}\tbin\t{len(x)}\t-\t{lp}\t{N_QUERY}\t{GRIDSIZE}")
        with open(os.path.join(tmp, "cases.tsv"), "w") as f:
            f.write("\n".join(rows) + "\n")
        with open(os.path.join(tmp, "pairs.tsv"), "w") as f:
            f.write("".join(f"{p} {nu}\n" for p, nu in PAIRS))
        script = os.path.join(tmp, "local_poly.R")
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
            cases.append(case_entry(name, parse_out(os.path.join(tmp, name + "_out.txt")), x, y))
    doc = {
        "generator": "python/make_fixture_local_poly.py",
        "what": "local polynomial regression (degree p, derivative nu) by exact weighted least "
                "squares in R with gaussian weights dnorm((x - x0)/h), and KernSmooth::locpoly",
        "r_version": meta["r_version"],
        "kernsmooth_version": meta["kernsmooth_version"],
        "blas": meta["blas"],
        "kernel": "gaussian: weight dnorm((x_j - x0)/h), proportional to exp(-(x_j - x0)^2/(2h^2))",
        "cases": cases,
    }
    with open(JSON_PATH, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    for c in cases:
        undefined = sum(v == 0 for fit in c["fits"] for part in ("query", "train")
                        for v in fit[part]["defined"])
        nulls = sum(v is None for e in c.get("locpoly", {}).get("estimates", []) for v in e["y"])
        print(f"{c['name']:>9}  n={c['n']:4d}  h={c['h']!r}  undefined={undefined}  "
              f"locpoly non-finite={nulls}")
    print(f"wrote {os.path.relpath(JSON_PATH)} ({os.path.getsize(JSON_PATH)} bytes)")


if __name__ == "__main__":
    main()
