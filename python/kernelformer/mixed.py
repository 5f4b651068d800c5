"""Kernel regression and density on mixed data: continuous, unordered and ordered categorical
columns (statsmodels' KernelReg(reg_type='lc') and KDEMultivariate with var_type 'c', 'u', 'o',
to the last digit), as scikit-learn estimators on the C++ library (regression/mixed_kernel.hpp).

Categorical columns hold codes (numbers): unordered ones are compared for equality only, ordered
ones by the codes' distance (cylinders coded 4, 6, 8 are 2 apart per step, as in statsmodels).
Text categories: code them first (pandas.factorize, scikit-learn's OrdinalEncoder), or use
`kf smooth --categorical`, which codes text columns itself.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from . import _kernelformer as _kf
from ._sklearn import validate

__all__ = ["MixedNadarayaWatsonRegressor", "MixedKernelDensity"]


def _how(bandwidth, searched, d, name):
    if isinstance(bandwidth, str):
        if bandwidth == searched:
            return "cv", []
        if bandwidth in ("normal-reference", "normal_reference", "silverman"):
            return "normal_reference", []
        raise ValueError(f"{name}: bandwidth={bandwidth!r} must be {searched!r}, "
                         "'normal-reference' or one number per column")
    h = np.atleast_1d(np.asarray(bandwidth, dtype=float)).tolist()
    if len(h) != d:
        raise ValueError(f"{name}: {len(h)} bandwidths for {d} columns (h or lambda, one each)")
    return "fixed", h


def _check_var_type(var_type, d, name):
    if not isinstance(var_type, str) or len(var_type) != d or set(var_type) - set("cuo"):
        raise ValueError(f"{name}: var_type={var_type!r} must have one letter per column of X "
                         f"({d}): c continuous, u unordered, o ordered")


class MixedNadarayaWatsonRegressor(RegressorMixin, BaseEstimator):
    """Nadaraya-Watson regression with a product kernel over mixed columns: gaussian for
    continuous ones, Aitchison-Aitken for unordered and Wang-van Ryzin for ordered categorical
    ones, each with its own bandwidth (h, or lambda in [0, (c-1)/c] and [0, 1]).

    Parameters
    ----------
    var_type : str
        One letter per column of X: 'c', 'u' or 'o' (statsmodels' var_type).
    bandwidth : "cv", "normal-reference" or array-like of shape (n_features,), default="cv"
        'cv' minimizes the least-squares leave-one-out criterion (statsmodels' cv_ls) inside the
        lambdas' ranges (statsmodels' unbounded fmin can leave them); 'normal-reference' is
        statsmodels' 1.06 sd n^(-1/(4+d)) per column with each lambda kept in its range.

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,)
    criterion_ : float
        cv_ls at bandwidth_: the mean squared leave-one-out residual.
    search_evaluations_ : int

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> rng = np.random.default_rng(0); x = rng.uniform(0, 1, 200); g = rng.integers(0, 3, 200)
    >>> y = np.sin(3 * x) + g + 0.1 * rng.normal(size=200)
    >>> m = kf.MixedNadarayaWatsonRegressor(var_type="cu").fit(np.c_[x, g], y)
    >>> bool(abs(m.predict([[0.5, 2]])[0] - (np.sin(1.5) + 2)) < 0.2)
    True
    """

    def __init__(self, var_type="c", bandwidth="cv"):
        self.var_type = var_type
        self.bandwidth = bandwidth

    def fit(self, X: ArrayLike, y: ArrayLike) -> "MixedNadarayaWatsonRegressor":
        """Fit on X (n_samples, n_features) and y (n_samples,): choose the bandwidths."""
        X, y = validate(self, X, y, y_numeric=True, dtype=np.float64, order="C")
        name = type(self).__name__
        _check_var_type(self.var_type, X.shape[1], name)
        how, h = _how(self.bandwidth, "cv", X.shape[1], name)
        y = np.ascontiguousarray(y, dtype=np.float64)
        bw, value, evals = _kf.mixed_fit(self.var_type, X, y, how, h)
        self.bandwidth_, self.criterion_, self.search_evaluations_ = np.array(bw), value, evals
        self._fit_X, self._fit_y = X, y
        return self

    def predict(self, X: ArrayLike) -> NDArray:
        """The fit at X (n_queries, n_features); NaN where no training point has weight."""
        check_is_fitted(self, "bandwidth_")
        X = validate(self, X, reset=False, dtype=np.float64, order="C")
        return np.asarray(_kf.mixed_predict(self.var_type, self.bandwidth_.tolist(), self._fit_X,
                                            self._fit_y, X))


class MixedKernelDensity(BaseEstimator):
    """Kernel density estimation over mixed columns (statsmodels' KDEMultivariate): the product
    of gaussians (continuous), Aitchison-Aitken (unordered) and Wang-van Ryzin (ordered) kernels,
    a probability mass over the categorical columns times a density over the continuous ones.

    Parameters
    ----------
    var_type : str
        One letter per column: 'c', 'u' or 'o'.
    bandwidth : "cv-ml", "normal-reference" or array-like, default="cv-ml"
        'cv-ml' maximizes the leave-one-out likelihood (statsmodels' cv_ml) inside the lambdas'
        ranges; 'normal-reference' as MixedNadarayaWatsonRegressor's.

    Attributes
    ----------
    bandwidth_ : ndarray of shape (n_features,)
    criterion_ : float
        statsmodels' cv_ml objective at bandwidth_: -sum_i log sum_{j != i} K(x_i, x_j) / prod h.

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> rng = np.random.default_rng(0); X = np.c_[rng.normal(size=300), rng.integers(0, 2, 300)]
    >>> f = kf.MixedKernelDensity(var_type="cu").fit(X)
    >>> bool(0.1 < f.density([[0.0, 1]])[0] < 0.3)   # about 0.4 (normal) x 0.5 (the level)
    True
    """

    def __init__(self, var_type="c", bandwidth="cv-ml"):
        self.var_type = var_type
        self.bandwidth = bandwidth

    def fit(self, X: ArrayLike, y=None) -> "MixedKernelDensity":
        """Fit on X (n_samples, n_features): choose the bandwidths."""
        X = validate(self, X, dtype=np.float64, order="C")
        name = type(self).__name__
        _check_var_type(self.var_type, X.shape[1], name)
        how, h = _how(self.bandwidth, "cv-ml", X.shape[1], name)
        bw, value, evals = _kf.mixed_fit(self.var_type, X, None, how, h)
        self.bandwidth_, self.criterion_, self.search_evaluations_ = np.array(bw), value, evals
        self._fit_X = X
        return self

    def density(self, X: ArrayLike) -> NDArray:
        """The estimate at X (n_queries, n_features)."""
        check_is_fitted(self, "bandwidth_")
        X = validate(self, X, reset=False, dtype=np.float64, order="C")
        return np.asarray(_kf.mixed_predict(self.var_type, self.bandwidth_.tolist(), self._fit_X,
                                            None, X))

    def score_samples(self, X: ArrayLike) -> NDArray:
        """log density at X (-inf where it is 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.density(X))
