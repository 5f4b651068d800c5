#!/usr/bin/python3
"""Parity fixtures for kernels on mixed data (regression/mixed_kernel.hpp): statsmodels'
KernelReg(var_type=..., reg_type='lc') and KDEMultivariate(var_type=...), whose generalized
product kernel multiplies a gaussian per continuous column ('c'), Aitchison-Aitken per unordered
column ('u') and Wang-van Ryzin per ordered column ('o'), at statsmodels' default kernels.

Writes tests/fixtures/mixed_cases.json: the statsmodels, scipy and numpy versions, and one entry
per data set of CASES with
  x (rows, categorical columns as the integer codes statsmodels saw), y, var_type, the query rows
  xq (the first 8 training rows, then 6 drawn from the data's range and levels with a fixed seed,
  plus rows at codes the data lacks: singleton_level, synthetic_cuo);
  "normal_reference": KDEMultivariate(x, var_type, bw='normal_reference').bw (the same numbers as
    KernelReg's starting point h0 for bw='cv_ls');
  "given": at three bandwidth vectors, KernelReg(bw=given).fit(xq)[0] ("nw"), the objective its
    bw='cv_ls' minimizes, KernelReg.cv_loo(bw, _est_loc_constant) ("cv_ls"),
    KDEMultivariate(bw=given).pdf(xq) ("pdf") and the objective bw='cv_ml' minimizes,
    KDEMultivariate.loo_likelihood(bw, np.log) ("cv_ml"); null where statsmodels answers nan or
    inf (a leave-one-out sum with no weight at all: 0/0 in the fit, log 0 in the likelihood);
  "sm_cv_ls": KernelReg(bw='cv_ls').bw (scipy fmin from h0, unbounded, returned as is) and
    cv_ls there; "sm_cv_ml": the raw fmin result of bw='cv_ml' and its objective, and
    KDEMultivariate(bw='cv_ml').bw (after statsmodels' _set_bw_bounds: negative -> 1e-10,
    categorical min(., 1)) and its objective; each with "admissible": inside the box
    kernelformer searches (h > 0, unordered lambda in [0, (c-1)/c], ordered in [0, 1]); for the
    regression a negative h of a continuous column is admissible as |h| (NW is even in h);
  "box_cv_ls", "box_cv_ml": scipy.optimize.minimize(Nelder-Mead, with those bounds) of the same
    statsmodels objectives from the clipped normal reference: the reference where statsmodels'
    unbounded optimum leaves the box.
Data: R's mtcars (mpg ~ hp [c] + cyl [o: codes 4, 6, 8] + am [u]), MASS's birthwt (bwt ~ age
[c] + lwt [c] + race [u: 1, 2, 3] + ftv [o: 0..6, the code 6 once]), and written here with
fixed seeds: "synthetic_cuo" (n = 160, a 3-level unordered and a 4-level ordered column) and
"singleton_level" (n = 60, one level of the unordered column held by one point: statsmodels counts
the levels among the n - 1 points of a leave-one-out sum, 3 instead of 4 there).
Run: apt-get install -y r-base-core r-cran-mass python3-statsmodels &&
     /usr/bin/python3 python/make_fixture_mixed.py
"""
import io
import json
import os
import subprocess
import time

import numpy as np
import scipy
import statsmodels
from scipy import optimize
from statsmodels.nonparametric.kernel_density import KDEMultivariate
from statsmodels.nonparametric.kernel_regression import KernelReg

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
JSON_PATH = os.path.join(OUT, "mixed_cases.json")


def r_frame(expr, columns):
    """Columns of an R data frame, as float64, via Rscript and write.csv."""
    code = f"d <- {expr}; write.csv(d[, c({', '.join(repr(c) for c in columns)})], " \
           "stdout(), row.names = FALSE)"
    out = subprocess.run(["Rscript", "--vanilla", "-e", code], check=True, capture_output=True,
                         text=True).stdout
    return np.loadtxt(io.StringIO(out), delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)


def data(name):
    if name == "mtcars":
        d = r_frame("mtcars", ["mpg", "hp", "cyl", "am"])
        return d[:, 1:], d[:, 0], "cou", "R datasets::mtcars: mpg ~ hp [c] + cyl [o] + am [u]"
    if name == "birthwt":
        d = r_frame("MASS::birthwt", ["bwt", "age", "lwt", "race", "ftv"])
        return (d[:, 1:], d[:, 0], "ccuo",
                "R MASS::birthwt: bwt ~ age [c] + lwt [c] + race [u] + ftv [o]")
    if name == "synthetic_cuo":
        rng = np.random.RandomState(11)
        n = 160
        x1 = rng.uniform(0.0, 3.0, n)
        u = rng.choice(3, n, p=[0.5, 0.3, 0.2]).astype(float)
        o = rng.choice(4, n, p=[0.2, 0.3, 0.3, 0.2]).astype(float)
        y = np.sin(2.0 * x1) + np.array([0.0, 0.8, -0.5])[u.astype(int)] + 0.25 * o \
            + 0.4 * rng.standard_normal(n)
        return (np.column_stack([x1, u, o]), y, "cuo",
                "np.random.RandomState(11); n = 160; x1 = U(0, 3); u = choice(3, p = .5 .3 .2); "
                "o = choice(4, p = .2 .3 .3 .2); y = sin(2 x1) + (0, .8, -.5)[u] + .25 o "
                "+ .4 N(0, 1), drawn in that order")
    if name == "singleton_level":
        rng = np.random.RandomState(12)
        n = 60
        x1 = rng.standard_normal(n)
        u = rng.choice(3, n).astype(float)
        u[17] = 3.0
        y = x1 ** 2 + 0.5 * u + 0.3 * rng.standard_normal(n)
        return (np.column_stack([x1, u]), y, "cu",
                "np.random.RandomState(12); n = 60; x1 = N(0, 1); u = choice(3); u[17] = 3 (the "
                "only point of level 3); y = x1^2 + .5 u + .3 N(0, 1)")
    raise ValueError(name)


CASES = ["mtcars", "birthwt", "synthetic_cuo", "singleton_level"]


def search_box(x, vt):
    """The box kernelformer searches: (lower, upper) per column."""
    box = []
    for k, t in enumerate(vt):
        if t == "c":
            box.append((1e-10, None))
        elif t == "u":
            c = np.unique(x[:, k]).size
            box.append((0.0, (c - 1.0) / c))
        else:
            box.append((0.0, 1.0))
    return box


def admissible(bw, box, vt, even_in_h):
    for b, (lo, hi), t in zip(bw, box, vt):
        if t == "c":
            if not (b > 0 or (even_in_h and b < 0)):
                return False
        elif not (lo <= b <= hi):
            return False
    return True


def queries(x, vt, seed, extra):
    rng = np.random.RandomState(seed)
    q = [x[i].copy() for i in range(8)]
    for _ in range(6):
        row = []
        for k, t in enumerate(vt):
            if t == "c":
                row.append(rng.uniform(x[:, k].min(), x[:, k].max()))
            else:
                row.append(float(rng.choice(np.unique(x[:, k]))))
        q.append(np.array(row))
    q.extend(np.array(r, dtype=float) for r in extra)
    return np.array(q)


def finite_or_none(v):
    v = float(np.asarray(v).reshape(-1)[0]) if np.ndim(v) else float(v)
    return v if np.isfinite(v) else None


def given_bandwidths(nr, box, vt):
    g1, g2, g3 = [], [], []
    for h, (lo, hi), t in zip(nr, box, vt):
        if t == "c":
            row = (h, 0.5 * h, 2.0 * h)
        elif t == "u":
            row = (0.3 * hi, hi, 0.0)  # hi = (c - 1)/c: the uniform kernel
        else:
            row = (0.4, 0.9, 0.0)
        for g, v in zip((g1, g2, g3), row):
            g.append(v)
    return [g1, g2, g3]


def run_case(name):
    x, y, vt, source = data(name)
    extra = {"singleton_level": [[0.3, 7.0], [-0.5, 3.0]],
             "synthetic_cuo": [[1.0, 5.0, 4.0]]}.get(name, [])
    xq = queries(x, vt, 100 + CASES.index(name), extra)
    box = search_box(x, vt)
    nr = KDEMultivariate(x, vt, bw="normal_reference").bw
    h0 = 1.06 * np.std(x, axis=0) * x.shape[0] ** (-1.0 / (4 + x.shape[1]))
    assert np.array_equal(nr, h0), "KernelReg's h0 differs from the normal reference"
    case = {"name": name, "source": source, "var_type": vt, "n": int(x.shape[0]),
            "x": x.tolist(), "y": y.tolist(), "xq": xq.tolist(), "normal_reference": nr.tolist(),
            "levels": [int(np.unique(x[:, k]).size) if t == "u" else 0
                       for k, t in enumerate(vt)]}
    given = []
    for bw in given_bandwidths(nr, box, vt):
        bw = np.array(bw)
        kr = KernelReg(y, x, vt, reg_type="lc", bw=bw)
        kd = KDEMultivariate(x, vt, bw=bw)
        with np.errstate(all="ignore"):
            nw = kr.fit(xq)[0]
            cvls = kr.cv_loo(bw, kr._est_loc_constant)
            pdf = kd.pdf(xq)
            cvml = kd.loo_likelihood(bw, np.log)
        given.append({"bw": bw.tolist(), "nw": [finite_or_none(v) for v in nw],
                      "cv_ls": finite_or_none(cvls), "pdf": [finite_or_none(v) for v in pdf],
                      "cv_ml": finite_or_none(cvml)})
    case["given"] = given

    t0 = time.time()
    with np.errstate(all="ignore"):
        kr = KernelReg(y, x, vt, reg_type="lc", bw="cv_ls")
        f_ls = lambda b: float(kr.cv_loo(b, kr._est_loc_constant)[0])
        case["sm_cv_ls"] = {"bw": kr.bw.tolist(), "objective": finite_or_none(f_ls(kr.bw)),
                            "admissible": admissible(kr.bw, box, vt, True),
                            "seconds": time.time() - t0}
        kd0 = KDEMultivariate(x, vt, bw=nr)
        f_ml = lambda b: float(kd0.loo_likelihood(b, np.log))
        raw, fopt = optimize.fmin(kd0.loo_likelihood, x0=nr, args=(np.log,), maxiter=1e3,
                                  maxfun=1e3, disp=0, xtol=1e-3, full_output=True)[:2]
        kd = KDEMultivariate(x, vt, bw="cv_ml")
        case["sm_cv_ml"] = {"bw_raw": raw.tolist(), "objective_raw": finite_or_none(fopt),
                            "admissible_raw": admissible(raw, box, vt, False),
                            "bw": kd.bw.tolist(), "objective": finite_or_none(f_ml(kd.bw)),
                            "admissible": admissible(kd.bw, box, vt, False)}
        start = np.array([min(max(h, lo + 0.02 * (hi - lo)), hi - 0.02 * (hi - lo))
                          if hi is not None else h for h, (lo, hi) in zip(nr, box)])
        for key, f in (("box_cv_ls", f_ls), ("box_cv_ml", f_ml)):
            g = lambda b: (lambda v: v if np.isfinite(v) else 1e300)(f(b))
            r = optimize.minimize(g, start, method="Nelder-Mead", bounds=box,
                                  options={"xatol": 1e-7, "fatol": 1e-10, "maxfev": 3000})
            case[key] = {"bw": r.x.tolist(), "objective": float(r.fun), "evaluations": r.nfev}
    return case


def main():
    cases = []
    for name in CASES:
        t0 = time.time()
        c = run_case(name)
        cases.append(c)
        print(f"{name:>16} n={c['n']:4d} {c['var_type']:>5}"
              f"  sm cv_ls {c['sm_cv_ls']['objective']!r}"
              f" (adm {c['sm_cv_ls']['admissible']}) box {c['box_cv_ls']['objective']!r};"
              f"  sm cv_ml {c['sm_cv_ml']['objective']!r} raw {c['sm_cv_ml']['objective_raw']!r}"
              f" box {c['box_cv_ml']['objective']!r}  [{time.time() - t0:.0f} s]", flush=True)
    doc = {
        "generator": "python/make_fixture_mixed.py",
        "what": "statsmodels KernelReg (reg_type='lc') and KDEMultivariate on mixed data: fits, "
                "pdfs and the cv_ls / cv_ml objectives at given bandwidths, and statsmodels' own "
                "optimized bandwidths; see the generator's docstring",
        "statsmodels_version": statsmodels.__version__,
        "scipy_version": scipy.__version__,
        "numpy_version": np.__version__,
        "conventions": {
            "cv_ls": "KernelReg.cv_loo: sum_i (y_i - g_{-i}(x_i))^2 / n",
            "cv_ml": "KDEMultivariate.loo_likelihood(bw, log): -sum_i log(sum_{j != i} "
                     "prod_k K_k / prod_{continuous} h) (no 1/(n-1))",
            "normal_reference": "1.06 std(x_k, ddof=0) n^(-1/(4+q)) for every column, "
                                "categorical codes included",
            "null": "statsmodels answers nan or inf (no weight in a sum)",
        },
        "cases": cases,
    }
    with open(JSON_PATH, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"wrote {os.path.relpath(JSON_PATH)} ({os.path.getsize(JSON_PATH)} bytes)")


if __name__ == "__main__":
    main()
