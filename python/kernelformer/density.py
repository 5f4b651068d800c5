"""Kernel density estimation with scikit-learn's KernelDensity interface, on the primitive.

f_hat(x) = 1/(n prod_c h_c) sum_j K((x - x_j)/h) / Z_K: the primitive's normalizer, so a density
costs one streaming pass (the C++ kf::kde_fit_data / kde_evaluate, what `kf kde` runs).
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _kernelformer as _kf
from ._sklearn import (SKLEARN_RULES, KeepsCppFit, criterion_name, curve_dict, distance_kernel, need_samples,
                       parse_bandwidth, validate, warn_boundary)

__all__ = ["KernelDensity"]

_COMPACT = ("boxcar", "epanechnikov", "biweight", "triweight", "tricube", "cosine")


class KernelDensity(KeepsCppFit, BaseEstimator):
    """Kernel density estimation (scikit-learn's KernelDensity interface: fit, score_samples,
    score, sample).

    Parameters
    ----------
    kernel : str, default="gaussian"
        A distance kernel as `kf kde --kernel` takes it: gaussian, epanechnikov, biweight,
        triweight, tricube, cosine, boxcar, laplacian, cauchy, ... Each is normalized to
        integrate to 1. Multivariate X: the gaussian (a product of per-feature gaussians).
    bandwidth : str, float or array-like of shape (n_features,), default="silverman"
        'silverman' or 'scott' (rules of thumb per feature, statsmodels' forms:
        0.9 min(sd, IQR/1.349) n^(-1/5) and 1.059 min(sd, IQR/1.349) n^(-1/5) in 1-D, scaled by
        each feature's spread), 'scott-sklearn' or 'silverman-sklearn' (scikit-learn's
        KernelDensity rules, n^(-1/(d+4)) and (n (d+2) / 4)^(-1/(d+4)): one number for every
        feature, not scaled by the spread, so meant for standardized data), 'sj' or 'sj-dpi'
        (Sheather-Jones plug-in per feature: R's bw.SJ and bw.SJ(method="dpi")), 'isj' (the
        improved Sheather-Jones of Botev et al. per feature, as KDEpy's ISJ), 'cv-ml'
        (likelihood cross-validation) or 'cv-ls' (least-squares cross-validation), a number, or
        one number per feature. (scikit-learn's own KernelDensity takes one number.)
    exact : bool, default=False
        Exact sums over all pairs instead of the binned route (1-D or 2-D from 5,000 points).

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,)
        The bandwidth per feature.
    criterion_ : float
        -mean leave-one-out log density (cv-ml, and for rules and fixed values) or the LSCV
        score (cv-ls) at bandwidth_.
    criterion_name_ : str
    criterion_curve_ : dict of arrays
        The searched grid ('scale', 'bandwidth', 'value'); empty for rules and fixed values.
    at_search_boundary_ : bool
    search_evaluations_ : int
        The criterion evaluations the bandwidth search made (0 for a rule or a fixed value): a
        41-point grid, then each bandwidth refined until it moves by less than 0.1% (the
        criterion is flat there), so a flat or monotone criterion (noise-free data) stops early.
    route_ : str
        The route the fit ran on (and evaluations take): "binned (linear binning + FFT)",
        "binned 2-D (...)", "exact (k-d tree over each support)" or "exact (all pairs)".
    route_why_ : str
        Why that route.
    n_features_in_ : int

    Shapes: X (n_samples, n_features); score_samples(X) -> (n_queries,) log-densities.

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> X = np.random.default_rng(0).normal(size=(2000, 1))
    >>> kde = kf.KernelDensity(bandwidth="sj").fit(X)
    >>> float(np.exp(kde.score_samples([[0.0]]))[0]).__round__(1)   # 1/sqrt(2 pi) = 0.399
    0.4
    """

    def __init__(self, kernel="gaussian", bandwidth="silverman", exact=False):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.exact = exact

    def _kernel(self):
        return distance_kernel(self.kernel, "KernelDensity")

    def fit(self, X: ArrayLike, y: None = None) -> "KernelDensity":
        """Fit on X (n_samples, n_features): choose the bandwidth. y is ignored. Returns self."""
        X = validate(self, X, dtype=np.float64, order="C")
        kern = self._kernel()
        criterion, fixed = parse_bandwidth(self.bandwidth, X.shape[1], density=True)
        if fixed is None:  # scikit-learn's rule: its factor, the same for every feature
            fixed = [SKLEARN_RULES[self.bandwidth](X.shape[0], X.shape[1])]
        C = _kf.BandwidthCriterion
        need = {C.fixed: 1, C.silverman: 2, C.scott: 2, C.sj: 2, C.sj_dpi: 2, C.isj: 2, C.cv_ml: 3,
                C.cv_ls: 3}[criterion]
        need_samples(X.shape[0], need, f"bandwidth={self.bandwidth!r}")
        if not isinstance(self.exact, (bool, np.bool_)):
            raise TypeError(f"exact must be True or False, not {self.exact!r}")
        res = _kf.kde_fit_data(kern, X, criterion, fixed, bool(self.exact))
        self._fit_X = X
        self._fit_obj = res["fit"]  # the C++ fit (its 1-D grid reused by every evaluation)
        self.bandwidth_ = np.asarray(res["bandwidth"], dtype=float)
        self.criterion_ = float(res["criterion_value"])
        self.criterion_name_ = (self.bandwidth if isinstance(self.bandwidth, str) and
                                self.bandwidth in SKLEARN_RULES else
                                criterion_name(res["criterion"]))
        self.criterion_curve_ = curve_dict(res["curve"], "bandwidth")
        self.at_search_boundary_ = bool(res["at_search_boundary"])
        self.route_ = res["route"]
        self.route_why_ = res["route_why"]
        self.search_evaluations_ = int(res["search_evaluations"])
        if self.at_search_boundary_:
            warn_boundary("KernelDensity: the best bandwidth is at the edge of the searched range "
                          "(0.01-10 x Silverman); the criterion may keep falling beyond it")
        return self

    def _density(self, X, log=False):
        check_is_fitted(self, "bandwidth_")
        X = validate(self, X, reset=False, dtype=np.float64, order="C")
        return _kf.kde_evaluate_fit(self._fitted_obj(), X, log=log)

    def _refit(self):  # KeepsCppFit: the fit at the fitted bandwidth
        return _kf.kde_fit_data(self._kernel(), self._fit_X, _kf.BandwidthCriterion.fixed,
                                self.bandwidth_.tolist(), bool(self.exact))["fit"]

    def score_samples(self, X: ArrayLike) -> NDArray:
        """Log-density at each row of X (n_queries, n_features) -> (n_queries,). Computed in log
        space where the density underflows, so a point far from the data gets its finite log
        density (as scikit-learn); -inf only beyond a compact kernel's reach."""
        return self._density(X, log=True)

    def score(self, X: ArrayLike, y: None = None) -> float:
        """Total log-likelihood of X (n_queries, n_features) under the model (a float)."""
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples: int = 1,
               random_state: Union[None, int, np.random.RandomState] = None) -> NDArray:
        """Draw n_samples points from the fitted density -> (n_samples, n_features).

        Gaussian in any dimension; in 1-D also the compact kernels (by rejection from the
        uniform), laplacian and cauchy.
        """
        check_is_fitted(self, "bandwidth_")
        rng = check_random_state(random_state)
        X = self._fit_X
        name = self._kernel().name
        d = X.shape[1]
        centers = X[rng.randint(0, X.shape[0], size=n_samples)]
        if name == "gaussian":
            return centers + rng.standard_normal((n_samples, d)) * self.bandwidth_
        if d != 1:
            raise NotImplementedError(f"sample: the {name} kernel is sampled in 1-D only")
        kern = self._kernel().with_param(1.0)
        if name in _COMPACT:
            u = np.empty(0)
            while u.size < n_samples:  # K <= 1 = K(0): accept u ~ U(-1, 1) with probability K(u)
                cand = rng.uniform(-1.0, 1.0, size=2 * (n_samples - u.size) + 16)
                w = np.exp([kern.log_weight(c * c) for c in cand])
                u = np.concatenate([u, cand[rng.uniform(size=cand.size) < w]])
            u = u[:n_samples]
        elif name == "laplacian":
            u = rng.laplace(0.0, 1.0, size=n_samples)
        elif name == "cauchy":
            u = rng.standard_cauchy(size=n_samples)
        else:
            raise NotImplementedError(f"sample: not offered for the {name} kernel")
        return centers + u[:, None] * self.bandwidth_
