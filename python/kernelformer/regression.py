"""scikit-learn regressors on the smoothing primitive: Nadaraya-Watson, local linear, KNN.

Each is a linear smoother y_hat(x) = sum_j l_j(x) y_j fitted by the C++ library
(kf::regression_fit_data, what `kf smooth` runs): the bandwidth (or k) chosen by a rule or a
criterion, the effective degrees of freedom tr(L), closed-form leave-one-out residuals, R^2 and
the residual scale, and predictions with pointwise standard errors sigma * sqrt(sum_j l_j(x)^2).
"""
from __future__ import annotations

import numbers
import warnings
from typing import Tuple, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from . import _kernelformer as _kf
from ._sklearn import (KeepsCppFit, SearchBoundaryWarning, criterion_name, curve_dict, cv_folds,
                       distance_kernel, need_samples, parse_bandwidth, validate, warn_boundary)

__all__ = ["NadarayaWatsonRegressor", "LocalLinearRegressor", "KNNRegressor", "LowessRegressor",
           "SearchBoundaryWarning"]

_FITTED_DOC = """
    Attributes
    ----------
    criterion_ : float
        The criterion at the chosen parameter: what was minimized for 'cv' (mean squared
        leave-one-out residual), 'gcv' and 'aic' (AICc); the LOO-CV value for rules and fixed
        values.
    criterion_name_ : str
        'cv', 'gcv', 'aicc', 'silverman', 'scott' or 'fixed'.
    criterion_curve_ : dict of arrays
        The searched grid: 'scale' (g,), {param} (g, ...), 'value' (g,); empty when nothing was
        searched.
    at_search_boundary_ : bool
        The optimum sat at an end of the searched range (a SearchBoundaryWarning was issued).
    search_evaluations_ : int
        The criterion evaluations the bandwidth search made (0 for a rule or a fixed value): a
        41-point grid, then each bandwidth refined until it moves by less than 0.1% (the
        criterion is flat there), so a flat or monotone criterion (noise-free data) stops early.
    df_ : float
        Effective degrees of freedom, the trace of the smoother matrix.
    r2_ : float
        R^2 of the fitted values on the training data.
    sigma_ : float
        Residual scale, sqrt(RSS / (n - df_)).
    rss_, loo_cv_, gcv_, aicc_ : float
        Residual sum of squares and the three criteria at the chosen parameter.
    fitted_values_, loo_residuals_, hat_diag_ : ndarray of shape (n_samples,)
        Fitted values, leave-one-out residuals (y_i - y_hat_{{-i}}(x_i), closed form) and the
        smoother matrix's diagonal L_ii.
    route_ : str
        The route the fit ran on (and predictions take): "binned (linear binning + FFT)",
        "exact (sorted windows, ...)", "neighbors (...)", "exact (all pairs)", ...
    route_why_ : str
        Why that route ("1 column, 20000 >= 5000 points, gaussian").
        How the library computed it (binned, sorted windows, k-d tree, all pairs).
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X had column names
"""
_BANDWIDTH_ATTR = """    bandwidth_ : ndarray of shape (n_features,)
        The bandwidth per feature.
"""
_K_ATTR = """    n_neighbors_ : int
        The k used.
"""


def _document(cls, param, extra):
    cls.__doc__ += _FITTED_DOC.format(param=param) + extra


class _Smoother(KeepsCppFit, RegressorMixin, BaseEstimator):
    """The common fit/predict of the three regressors (subclasses set _method)."""

    _method = "nw"

    # -- subclasses: the spec and the criterion from the parameters --
    def _make_spec(self, n_samples, n_features):
        raise NotImplementedError

    def _spec_fitted(self):
        raise NotImplementedError

    def fit(self, X: ArrayLike, y: ArrayLike, groups: ArrayLike = None) -> "_Smoother":
        """Fit on X (n_samples, n_features) and y (n_samples,) or (n_samples, n_outputs): choose
        the bandwidth (or k) and compute the diagnostics. Returns self.

        A 2-D y is n_outputs regressions on the same X, each with its own bandwidth (or k)
        chosen on its own column, as scikit-learn's MultiOutputRegressor would fit them; the
        fitted attributes gain a leading n_outputs axis and predict returns (n_queries,
        n_outputs). The single smoothers are in `estimators_`.

        groups (n_samples,): group labels for a grouped splitter given as `cv`
        (GroupKFold, LeaveOneGroupOut), as scikit-learn's cross_validate takes them."""
        X, y = validate(self, X, y, y_numeric=True, dtype=np.float64, order="C",
                        multi_output=True)
        if y.ndim == 2:
            return self._fit_outputs(X, y, groups)
        self.__dict__.pop("estimators_", None)
        self.__dict__.pop("n_outputs_", None)
        y = np.ascontiguousarray(y, dtype=np.float64)
        spec, criterion = self._make_spec(X.shape[0], X.shape[1])
        folds, folds_name = cv_folds(self, X, y, groups, criterion)
        res = _kf.regression_fit_data(spec, X, y, criterion, folds=folds, folds_name=folds_name)
        self.cv_name_ = folds_name if folds is not None else "leave-one-out"
        self._fit_X, self._fit_y = X, y
        self.criterion_name_ = criterion_name(res["criterion"])
        self.criterion_ = float(res["criterion_value"])
        self.at_search_boundary_ = bool(res["at_search_boundary"])
        self.df_ = float(res["df"])
        self.rss_ = float(res["rss"])
        self.r2_ = float(res["r2"])
        self.sigma_ = float(np.sqrt(res["sigma2"]))
        self.loo_cv_, self.gcv_, self.aicc_ = (float(res[c]) for c in ("loo_cv", "gcv", "aicc"))
        self.fitted_values_ = res["fitted"]
        self.loo_residuals_ = res["loo_residuals"]
        self.hat_diag_ = res["hat_diag"]
        self.route_ = res["route"]
        self.route_why_ = res["route_why"]
        self.search_evaluations_ = int(res["search_evaluations"])
        self._fit_obj = res["fit"]  # the C++ fit: its neighbor search and binned grid, reused
        self._set_fitted(res, X.shape[1])
        return self

    # Per-output attributes of a 2-D y, stacked: scalars become (n_outputs,), arrays gain an
    # axis (the per-sample ones (n_samples, n_outputs), as y).
    _STACKED = ("criterion_", "at_search_boundary_", "df_", "rss_", "r2_", "sigma_", "loo_cv_",
                "gcv_", "aicc_", "search_evaluations_", "bandwidth_", "n_neighbors_")
    _PER_SAMPLE = ("fitted_values_", "loo_residuals_", "hat_diag_")

    def _fit_outputs(self, X, y, groups):
        self.n_outputs_ = y.shape[1]
        self.estimators_ = [clone(self).fit(X, np.ascontiguousarray(y[:, t]), groups)
                            for t in range(y.shape[1])]
        first = self.estimators_[0]
        for name in self._STACKED:
            if hasattr(first, name):
                setattr(self, name, np.array([getattr(e, name) for e in self.estimators_]))
        for name in self._PER_SAMPLE:
            setattr(self, name, np.column_stack([getattr(e, name) for e in self.estimators_]))
        for name in ("criterion_name_", "route_", "route_why_", "cv_name_"):
            setattr(self, name, getattr(first, name))
        self.criterion_curve_ = [e.criterion_curve_ for e in self.estimators_]
        return self

    def _refit(self):  # KeepsCppFit: the same smoother at the fitted bandwidth (or k)
        spec = self._spec_fitted()
        spec.per_point = False
        return _kf.regression_fit_data(spec, self._fit_X, self._fit_y,
                                       _kf.BandwidthCriterion.fixed)["fit"]

    def predict(self, X: ArrayLike,
                return_std: bool = False) -> Union[NDArray, Tuple[NDArray, NDArray]]:
        """Predict at X (n_queries, n_features) -> y_hat (n_queries,), or (n_queries, n_outputs)
        after a fit on a 2-D y.

        return_std=True also returns the standard error of y_hat (n_queries,),
        sigma_ * sqrt(sum_j l_j(x)^2): the band y_hat +- 1.96 se is a pointwise 95% confidence
        band for the regression function (not a prediction interval for new observations).
        Where no training point has weight (a compact kernel far from the data) both are NaN.
        """
        check_is_fitted(self, "df_")
        X = validate(self, X, reset=False, dtype=np.float64, order="C")
        if getattr(self, "estimators_", None) is not None:
            out = [e.predict(X, return_std=True) for e in self.estimators_]
            fit = np.column_stack([f for f, _ in out])
            return (fit, np.column_stack([se for _, se in out])) if return_std else fit
        fit, se, defined, undefined = _kf.regression_predict_fit(self._fitted_obj(), X,
                                                                 self.sigma_ ** 2)
        if undefined:
            warnings.warn(f"{undefined} of {X.shape[0]} points have no training data within the "
                          "kernel's reach; their prediction is NaN", RuntimeWarning,
                          stacklevel=2)
            fit[~defined] = np.nan
            se[~defined] = np.nan
        return (fit, se) if return_std else fit

    def _more_tags(self):  # scikit-learn < 1.6
        return {"multioutput": True}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class _BandwidthSmoother(_Smoother):
    def _make_spec(self, n_samples, n_features):
        spec = _kf.RegressionSpec()
        spec.method = getattr(_kf.RegressionMethod, self._method)
        spec.kernel = distance_kernel(self.kernel, type(self).__name__)
        if not isinstance(self.exact, (bool, np.bool_)):
            raise TypeError(f"exact must be True or False, not {self.exact!r}")
        spec.exact = bool(self.exact)
        criterion, fixed = parse_bandwidth(self.bandwidth, n_features, density=False)
        spec.bandwidth = fixed
        C = _kf.BandwidthCriterion
        need = {C.fixed: 1, C.silverman: 2, C.scott: 2, C.loo_cv: 3, C.gcv: 3, C.aicc: 5,
                C.dpi: 10}[criterion]
        need_samples(n_samples, need, f"bandwidth={self.bandwidth!r}")
        return spec, criterion

    def _set_fitted(self, res, n_features):
        h = np.asarray(res["bandwidth"], dtype=float)
        self.bandwidth_ = np.broadcast_to(h, (n_features,)).copy()
        self.criterion_curve_ = curve_dict(res["curve"], "bandwidth")
        if res["at_search_boundary"]:
            warn_boundary(f"{type(self).__name__}: the best bandwidth is at the edge of the "
                          "searched range (0.01-10 x Silverman); the criterion may keep falling "
                          "beyond it")

    def _spec_fitted(self):
        spec = _kf.RegressionSpec()
        spec.method = getattr(_kf.RegressionMethod, self._method)
        spec.kernel = distance_kernel(self.kernel, type(self).__name__)
        spec.exact = bool(self.exact)
        spec.bandwidth = self.bandwidth_.tolist()
        return spec


class NadarayaWatsonRegressor(_BandwidthSmoother):
    """Nadaraya-Watson kernel regression, y_hat(x) = sum_j K(x, x_j) y_j / sum_j K(x, x_j):
    attention with a distance kernel over the training points.

    Parameters
    ----------
    kernel : str, default="gaussian"
        A distance kernel as `kf smooth --kernel` takes it: gaussian, epanechnikov, biweight,
        triweight, tricube, cosine, boxcar, laplacian, cauchy, ... (kernelformer.kernels()).
    bandwidth : str, float or array-like of shape (n_features,), default="cv"
        'cv' (leave-one-out), 'gcv', 'aic' (AICc) choose it by minimizing a criterion (per
        feature for multivariate X, by coordinate sweeps); 'silverman' and 'scott' are rules of
        thumb per feature; a number, or one number per feature, fixes it.
    exact : bool, default=False
        Exact sums instead of the binned fast path (1-D from 5,000 points; 2-D nw).
    cv : None, int, or a scikit-learn splitter, default=None
        How bandwidth='cv' holds points out: None, leave-one-out (closed form, no refits); K,
        K folds shuffled with seed 0 (as `kf smooth --cv kfold:K`); a splitter whose test sets
        partition the data (KFold, GroupKFold or LeaveOneGroupOut with fit(..., groups=g)) or
        a list of its (train, test) pairs: the mean squared held-out residual over all points,
        each fold refitted on the route it takes.

    Shapes: X (n_samples, n_features), y (n_samples,) or (n_samples, n_outputs); predict(X) ->
    (n_queries,) or (n_queries, n_outputs).

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> x = np.linspace(0, 1, 50)[:, None]; y = np.sin(3 * x[:, 0])
    >>> nw = kf.NadarayaWatsonRegressor(bandwidth=0.05).fit(x, y)
    >>> float(abs(nw.predict([[0.5]])[0] - np.sin(1.5))) < 0.02
    True
    """

    _method = "nw"

    def __init__(self, kernel="gaussian", bandwidth="cv", exact=False, cv=None):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.exact = exact
        self.cv = cv


_document(NadarayaWatsonRegressor, "'bandwidth'", _BANDWIDTH_ATTR)


class LocalLinearRegressor(_BandwidthSmoother):
    """Local linear regression: at each x the kernel-weighted least-squares line (no boundary
    bias), from the primitive's weighted means of [1, y, x, x x^T, x y]. Where the local design
    is singular the fit falls back to Nadaraya-Watson.

    Parameters
    ----------
    kernel : str, default="gaussian"
        A distance kernel (see NadarayaWatsonRegressor).
    bandwidth : str, float or array-like of shape (n_features,), default="cv"
        'cv', 'gcv', 'aic', 'silverman', 'scott', 'dpi' (the direct plug-in of KernSmooth's
        dpill: gaussian kernel, one feature), a number or one per feature.
    exact : bool, default=False
        Exact sums instead of the binned fast path.
    cv : None, int, or a scikit-learn splitter, default=None
        How bandwidth='cv' holds points out: None, leave-one-out (closed form, no refits); K,
        K folds shuffled with seed 0 (as `kf smooth --cv kfold:K`); a splitter whose test sets
        partition the data (KFold, GroupKFold or LeaveOneGroupOut with fit(..., groups=g)) or
        a list of its (train, test) pairs: the mean squared held-out residual over all points,
        each fold refitted on the route it takes.

    Shapes: X (n_samples, n_features), y (n_samples,) or (n_samples, n_outputs); predict(X) ->
    (n_queries,) or (n_queries, n_outputs).

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> x = np.linspace(0, 1, 50)[:, None]; y = 2 * x[:, 0] + 1
    >>> ll = kf.LocalLinearRegressor(bandwidth=0.2).fit(x, y)   # a line: reproduced exactly
    >>> ll.predict([[0.0], [1.0]]).round(6).tolist()
    [1.0, 3.0]
    """

    _method = "local_linear"

    def __init__(self, kernel="gaussian", bandwidth="cv", exact=False, cv=None):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.exact = exact
        self.cv = cv


_document(LocalLinearRegressor, "'bandwidth'", _BANDWIDTH_ATTR)


class KNNRegressor(_Smoother):
    """k-nearest-neighbour regression: the uniform (or inverse-distance) kernel under a top-k
    mask, on a k-d tree (sorted neighbours in 1-D).

    Parameters
    ----------
    n_neighbors : int or "cv", default="cv"
        k, or 'cv': the k in 1..max_neighbors with the smallest leave-one-out error (each point
        left out of its own neighbourhood).
    weights : {"uniform", "distance"}, default="uniform"
        Equal weights, or 1/|x - x_j| (exact matches take all the weight, as in scikit-learn).
    max_neighbors : int, default=100
        The largest k that n_neighbors='cv' tries.
    cv : None, int, or a scikit-learn splitter, default=None
        How n_neighbors='cv' holds points out: None, leave-one-out; otherwise as
        NadarayaWatsonRegressor's cv (K folds, or a splitter's partition).

    Shapes: X (n_samples, n_features), y (n_samples,) or (n_samples, n_outputs); predict(X) ->
    (n_queries,) or (n_queries, n_outputs).

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> x = np.arange(10.0)[:, None]; y = x[:, 0] ** 2
    >>> kf.KNNRegressor(n_neighbors=3).fit(x, y).predict([[4.0]]).tolist()   # (9 + 16 + 25) / 3
    [16.666666666666668]
    """

    _method = "knn"

    def __init__(self, n_neighbors="cv", weights="uniform", max_neighbors=100, cv=None):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.max_neighbors = max_neighbors
        self.cv = cv

    def _make_spec(self, n_samples, n_features):
        spec = _kf.RegressionSpec()
        spec.method = _kf.RegressionMethod.knn
        if self.weights not in ("uniform", "distance"):
            raise ValueError(f"weights={self.weights!r}: expected 'uniform' or 'distance'")
        spec.knn_distance_weights = self.weights == "distance"
        if not _is_int(self.max_neighbors) or self.max_neighbors < 1:
            raise ValueError(f"max_neighbors={self.max_neighbors!r} must be a positive integer")
        spec.k_max = int(self.max_neighbors)
        if isinstance(self.n_neighbors, str) and self.n_neighbors == "cv":
            need_samples(n_samples, 3, "n_neighbors='cv'")
            spec.k = 0
        elif _is_int(self.n_neighbors) and self.n_neighbors >= 1:
            if self.n_neighbors > n_samples:
                raise ValueError(f"n_neighbors={self.n_neighbors} is more than the "
                                 f"n_samples = {n_samples} training points")
            spec.k = int(self.n_neighbors)
        else:
            raise ValueError(f"n_neighbors={self.n_neighbors!r}: expected a positive integer or "
                             "'cv'")
        return spec, _kf.BandwidthCriterion.fixed

    def _set_fitted(self, res, n_features):
        self.n_neighbors_ = int(res["k"])
        self.criterion_name_ = "cv" if isinstance(self.n_neighbors, str) else "fixed"
        self.criterion_curve_ = curve_dict(res["curve"], "k")
        if res["at_search_boundary"]:
            warn_boundary(f"KNNRegressor: the best k is the largest tried ({self.n_neighbors_}); "
                          "raise max_neighbors")

    def _spec_fitted(self):
        spec = _kf.RegressionSpec()
        spec.method = _kf.RegressionMethod.knn
        spec.knn_distance_weights = self.weights == "distance"
        spec.k = self.n_neighbors_
        return spec


_document(KNNRegressor, "'k'", _K_ATTR)


class LowessRegressor(RegressorMixin, BaseEstimator):
    """LOWESS, Cleveland's robust locally weighted regression, as R's `lowess` (equal to it to
    1e-12; statsmodels' `lowess` differs from R by ~1e-9): at each x a local-linear fit with
    tricube weights over the span's nearest points, then robustness passes that weight each
    point by the bisquare of its residual, so outliers stop pulling the curve. One feature.

    Parameters
    ----------
    span : float, default=2/3
        The fraction of the points in each local fit, in (0, 1] (R's f, statsmodels' frac).
    iterations : int, default=3
        Robustness passes after the first fit (R's iter, statsmodels' it); 0: plain local fits.
    delta : float or None, default=None
        Fit only at points more than delta beyond the last fitted one and interpolate between
        (None: 1% of the x range, R's default; 0: fit at every point, O(n^2 span)).

    Attributes
    ----------
    x_, fitted_ : ndarray of shape (n_samples,)
        The training x sorted (ties in their order) and the smooth there.
    fitted_values_ : ndarray of shape (n_samples,)
        The smooth at each training point, in the input's order.
    weights_ : ndarray of shape (n_samples,)
        The last robustness weights, in the input's order (0: set aside as an outlier).
    neighbours_, local_fits_, passes_ : int
        Points in each local fit, local fits made in the last pass, passes made.
    delta_ : float
        The delta used.
    n_features_in_ : int (always 1)

    predict(X) is the local fit at each new point (with the last robustness weights), as
    statsmodels' `xvals`: at a training x fitted without delta skipping it is fitted_ there;
    beyond the data it extends the end's local line. Shapes: X (n_samples, 1), y (n_samples,).

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> x = np.linspace(0, 1, 100); y = 3 * x + 0.01 * np.sin(37 * x); y[50] = 40.0  # an outlier
    >>> lo = kf.LowessRegressor(span=0.3).fit(x[:, None], y)
    >>> bool(abs(lo.predict([[0.5]])[0] - 1.5) < 0.01), float(lo.weights_[50])
    (True, 0.0)
    """

    def __init__(self, span=2.0 / 3.0, iterations=3, delta=None):
        self.span = span
        self.iterations = iterations
        self.delta = delta

    def fit(self, X: ArrayLike, y: ArrayLike) -> "LowessRegressor":
        """Fit on X (n_samples, 1) and y (n_samples,). Returns self."""
        X, y = validate(self, X, y, y_numeric=True, dtype=np.float64, order="C")
        if X.shape[1] != 1:
            raise ValueError(f"LowessRegressor smooths on one feature; X has {X.shape[1]} "
                             "(for several, use LocalLinearRegressor)")
        if not isinstance(self.span, numbers.Real) or not 0 < self.span <= 1:
            raise ValueError(f"span={self.span!r} must be a fraction in (0, 1]")
        if not _is_int(self.iterations) or not 0 <= self.iterations <= 100:
            raise ValueError(f"iterations={self.iterations!r} must be an integer in 0..100")
        if self.delta is not None and not (isinstance(self.delta, numbers.Real) and
                                           np.isfinite(self.delta) and self.delta >= 0):
            raise ValueError(f"delta={self.delta!r} must be None or a distance >= 0")
        need_samples(X.shape[0], 2, "LowessRegressor")
        res = _kf.lowess(np.ascontiguousarray(X[:, 0]), np.ascontiguousarray(y, np.float64),
                         float(self.span), int(self.iterations),
                         -1.0 if self.delta is None else float(self.delta))
        order = res["order"]
        self.x_, self.fitted_ = res["x"], res["fitted"]
        self._y_sorted, self._weights_sorted = y[order], res["weights"]
        self.fitted_values_ = np.empty_like(self.fitted_)
        self.fitted_values_[order] = self.fitted_
        self.weights_ = np.empty_like(res["weights"])
        self.weights_[order] = res["weights"]
        self.neighbours_ = int(res["neighbours"])
        self.local_fits_ = int(res["local_fits"])
        self.passes_ = int(res["passes"])
        self.delta_ = float(res["delta"])
        return self

    def predict(self, X: ArrayLike) -> NDArray:
        """The smooth at X (n_queries, 1) -> (n_queries,): the local fit at each point itself
        (its span's nearest training points, the last robustness weights), as statsmodels'
        `xvals`; beyond the training range it extends the end's local line."""
        check_is_fitted(self, "fitted_")
        X = validate(self, X, reset=False, dtype=np.float64, order="C")
        return _kf.lowess_predict(self.x_, self._y_sorted, self._weights_sorted,
                                  self.neighbours_, self.passes_, np.ascontiguousarray(X[:, 0]))


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
