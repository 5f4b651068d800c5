"""Local polynomial regression of degree 0-3 and its derivatives, as a scikit-learn regressor.

The C++ library's kf::local_poly_fit_data (what `kf smooth --degree P --derivative V` runs): at
each x the kernel-weighted least-squares polynomial of degree P in (x_j - x); the V-th derivative
of the regression function is V! times its V-th coefficient (KernSmooth's locpoly(drv=V),
np's gradients), with pointwise standard errors sigma * sqrt(sum_j l_j(x)^2).
"""
from __future__ import annotations

import numbers
import warnings
from typing import Tuple, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from . import _kernelformer as _kf
from ._sklearn import (criterion_name, curve_dict, distance_kernel, need_samples,
                       parse_bandwidth, validate, warn_boundary)

__all__ = ["LocalPolynomialRegressor"]


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


class LocalPolynomialRegressor(RegressorMixin, BaseEstimator):
    """Local polynomial regression on one feature, of degree 0-3, reporting the regression
    function or one of its derivatives (with a standard error).

    Parameters
    ----------
    degree : int, default=2
        0 (Nadaraya-Watson), 1 (local linear), 2 (local quadratic) or 3 (local cubic). For a
        derivative, degree = derivative + 1 is the usual choice (odd degree - derivative has
        no extra boundary bias).
    derivative : int, default=0
        0: predict the regression function; V in 1..degree: predict its V-th derivative.
    kernel : str, default="gaussian"
        A distance kernel (gaussian, epanechnikov, biweight, tricube, ...).
    bandwidth : str or float, default="cv"
        'cv' (leave-one-out), 'gcv', 'aic', 'silverman', 'scott', or a number. A criterion is
        minimized for the degree-p fit of the function itself: a derivative is then read at
        that bandwidth (the one best for a derivative is larger).
    exact : bool, default=False
        Exact sums (all pairs, or sorted windows for compact kernels) at any n, instead of the
        binned route from 5,000 points.

    Attributes
    ----------
    bandwidth_ : float
    criterion_, criterion_name_, criterion_curve_, at_search_boundary_, search_evaluations_
        As NadarayaWatsonRegressor's, for the function's degree-p fit.
    df_, rss_, r2_, sigma_, loo_cv_, gcv_, aicc_ : float
        The function's fit: effective degrees of freedom, residual sum of squares, R^2, residual
        scale sqrt(RSS / (n - df)) and the three criteria.
    route_, route_why_ : str
    n_features_in_ : int (always 1)

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> x = np.linspace(0, 2, 200); y = x ** 3
    >>> d = kf.LocalPolynomialRegressor(degree=3, derivative=1, bandwidth=0.3).fit(x[:, None], y)
    >>> round(float(d.predict([[1.0]])[0]), 6)   # 3 x^2: a cubic is reproduced exactly
    3.0
    """

    def __init__(self, degree=2, derivative=0, kernel="gaussian", bandwidth="cv", exact=False):
        self.degree = degree
        self.derivative = derivative
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.exact = exact

    def fit(self, X: ArrayLike, y: ArrayLike) -> "LocalPolynomialRegressor":
        """Fit on X (n_samples, 1) and y (n_samples,): choose the bandwidth, compute the
        function fit's diagnostics. Returns self."""
        X, y = validate(self, X, y, y_numeric=True, dtype=np.float64, order="C")
        if X.shape[1] != 1:
            raise ValueError(f"LocalPolynomialRegressor fits on one feature; X has {X.shape[1]} "
                             "(for several, use LocalLinearRegressor)")
        if not _is_int(self.degree) or not 0 <= self.degree <= 3:
            raise ValueError(f"degree={self.degree!r} must be an integer in 0..3")
        if not _is_int(self.derivative) or not 0 <= self.derivative <= self.degree:
            raise ValueError(f"derivative={self.derivative!r} must be an integer in "
                             f"0..degree ({self.degree})")
        if not isinstance(self.exact, (bool, np.bool_)):
            raise TypeError(f"exact must be True or False, not {self.exact!r}")
        kernel = distance_kernel(self.kernel, "LocalPolynomialRegressor")
        criterion, fixed = parse_bandwidth(self.bandwidth, 1, density=False)
        C = _kf.BandwidthCriterion
        if criterion == C.dpi:
            raise ValueError("bandwidth='dpi' is for local linear fits: use LocalLinearRegressor")
        need_samples(X.shape[0], self.degree + 2, f"degree={self.degree}")
        res = _kf.local_poly_fit_data(kernel, int(self.degree), int(self.derivative),
                                      float(fixed[0]) if fixed else 0.0, criterion,
                                      bool(self.exact), np.ascontiguousarray(X[:, 0]), y)
        self.bandwidth_ = float(res["bandwidth"])
        self.criterion_name_ = criterion_name(res["criterion"])
        self.criterion_ = float(res["criterion_value"])
        self.criterion_curve_ = curve_dict(res["curve"], "bandwidth")
        self.at_search_boundary_ = bool(res["at_search_boundary"])
        self.search_evaluations_ = int(res["search_evaluations"])
        for name in ("df", "rss", "r2", "loo_cv", "gcv", "aicc"):
            setattr(self, name + "_", float(res[name]))
        self.sigma_ = float(np.sqrt(res["sigma2"]))
        self.route_, self.route_why_ = res["route"], res["route_why"]
        self._fit = res["fit"]
        self._fit_X, self._fit_y = X, y
        if self.at_search_boundary_:
            warn_boundary("LocalPolynomialRegressor: the best bandwidth is at the edge of the "
                          "searched range; the criterion may keep falling beyond it")
        return self

    def __getstate__(self):  # the C++ fit is rebuilt from the data after unpickling
        state = super().__getstate__()
        state.pop("_fit", None)
        return state

    def _fitted(self):
        if getattr(self, "_fit", None) is None:
            kernel = distance_kernel(self.kernel, "LocalPolynomialRegressor")
            self._fit = _kf.local_poly_fit_data(
                kernel, int(self.degree), int(self.derivative), self.bandwidth_,
                _kf.BandwidthCriterion.fixed, bool(self.exact),
                np.ascontiguousarray(self._fit_X[:, 0]), self._fit_y)["fit"]
        return self._fit

    def predict(self, X: ArrayLike,
                return_std: bool = False) -> Union[NDArray, Tuple[NDArray, NDArray]]:
        """The regression function (derivative=0) or its derivative at X (n_queries, 1);
        return_std=True also returns its standard error. NaN where the local fit is undefined
        (too few points within a compact kernel's reach, far extrapolation)."""
        check_is_fitted(self, "df_")
        X = validate(self, X, reset=False, dtype=np.float64, order="C")
        fit, se, defined, undefined = _kf.local_poly_predict(self._fitted(),
                                                             np.ascontiguousarray(X[:, 0]))
        if undefined:
            warnings.warn(f"{undefined} of {X.shape[0]} points have too few training points "
                          "within the kernel's reach; their prediction is NaN", RuntimeWarning,
                          stacklevel=2)
            fit[~defined] = np.nan
            se[~defined] = np.nan
        return (fit, se) if return_std else fit
