"""Shared pieces of the scikit-learn estimators: input validation across scikit-learn versions,
bandwidth and kernel arguments spelled as `kf smooth` / `kf kde` take them."""
import numbers
import warnings

import numpy as np

from . import _kernelformer as _kf
from ._primitive import make_kernel

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data_fn
except ImportError:  # Debian bookworm's 1.2: the estimator's own method
    _validate_data_fn = None


class KeepsCppFit:
    """An estimator that keeps its C++ fit (its route's grid, neighbor search) in `_fit_obj` for
    its predictions. The C++ fit is not pickled: `_fitted_obj()` rebuilds it once after unpickling
    through the subclass's `_refit()` (the data at the fitted parameters: the same numbers)."""

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_fit_obj", None)
        return state

    def _fitted_obj(self):
        obj = getattr(self, "_fit_obj", None)
        if obj is None:
            obj = self._fit_obj = self._refit()
        return obj


class SearchBoundaryWarning(UserWarning):
    """The chosen bandwidth (or k) sits at an end of the searched range: the criterion may keep
    falling beyond it (`kf smooth` prints the same warning)."""


def validate(estimator, X="no_validation", y="no_validation", **kw):
    """scikit-learn's validate_data (sets n_features_in_ / feature_names_in_ when reset=True)."""
    if _validate_data_fn is not None:
        return _validate_data_fn(estimator, X=X, y=y, **kw)
    return estimator._validate_data(X=X, y=y, **kw)


REGRESSION_RULES = ("silverman", "scott", "cv", "gcv", "aic", "dpi")
DENSITY_RULES = ("silverman", "scott", "sj", "sj-dpi", "isj", "cv-ml", "cv-ls", "scott-sklearn",
                 "silverman-sklearn")

# scikit-learn's KernelDensity rules (sklearn/neighbors/_kde.py): one bandwidth for every feature,
# the factor alone, not scaled by the data's spread (they assume standardized data), unlike
# 'scott' and 'silverman' here (statsmodels' per-feature forms, scaled by each feature's spread).
SKLEARN_RULES = {
    "scott-sklearn": lambda n, d: n ** (-1.0 / (d + 4)),
    "silverman-sklearn": lambda n, d: (n * (d + 2) / 4.0) ** (-1.0 / (d + 4)),
}


def parse_bandwidth(bandwidth, n_features, density):
    """(criterion, fixed bandwidths): bandwidth is a rule or criterion name, a positive number,
    or one positive number per feature."""
    C = _kf.BandwidthCriterion
    allowed = DENSITY_RULES if density else REGRESSION_RULES
    if isinstance(bandwidth, str) and bandwidth in SKLEARN_RULES:
        if not density:
            raise ValueError(f"bandwidth={bandwidth!r} is scikit-learn's KernelDensity rule; for "
                             f"regression use {', '.join(allowed)} or a number")
        return C.fixed, None  # the caller computes it from (n, d)
    if isinstance(bandwidth, str):
        crit = _kf.bandwidth_criterion_parse(bandwidth)  # ValueError naming the known ones
        wrong = ((C.cv_ml, C.cv_ls, C.sj, C.sj_dpi, C.isj) if not density else
                 (C.loo_cv, C.gcv, C.aicc, C.dpi))
        if crit in wrong:
            kind = "a density" if not density else "a regression"
            use = "regression" if not density else "density"
            raise ValueError(f"bandwidth={bandwidth!r} is {kind} criterion; for {use} use "
                             f"{', '.join(allowed)} or a number")
        return crit, []
    if isinstance(bandwidth, (bool, np.bool_)) or bandwidth is None:
        raise TypeError(f"bandwidth must be one of {', '.join(allowed)}, a positive number or one "
                        f"number per feature, not {bandwidth!r}")
    if isinstance(bandwidth, numbers.Real):
        values = [float(bandwidth)]
    else:
        try:
            values = np.asarray(bandwidth, dtype=float).ravel().tolist()
        except (TypeError, ValueError):
            raise TypeError(f"bandwidth must be one of {', '.join(allowed)}, a positive number or "
                            f"one number per feature, not {bandwidth!r}") from None
    if len(values) not in (1, n_features):
        raise ValueError(f"{len(values)} bandwidths given for {n_features} features (give one, "
                         "or one per feature)")
    for h in values:
        if not (np.isfinite(h) and h > 0):
            raise ValueError(f"bandwidth {h} must be a positive number")
    return C.fixed, values


def distance_kernel(kernel, what):
    """A single distance kernel from its text ("gaussian", "epanechnikov", "tricube", ...)."""
    k = make_kernel(kernel)
    if k.is_product:
        raise ValueError(f"kernel={kernel!r}: {what} takes a single distance kernel")
    if k.argument != "distance":
        raise ValueError(f"kernel={kernel!r}: {what} needs a distance kernel (gaussian, "
                         "epanechnikov, tricube, ...)")
    return k


_NAMES = {"loo_cv": "cv", "cv_ml": "cv-ml", "cv_ls": "cv-ls", "sj_dpi": "sj-dpi"}


def criterion_name(library_name):
    """The criterion as `kf smooth` / `kf kde` spell it ('cv', 'gcv', 'aicc', 'cv-ml', ...)."""
    return _NAMES.get(library_name, library_name)


def need_samples(n, need, what):
    if n < need:
        raise ValueError(f"{what} needs at least {need} samples, got n_samples = {n}")


def warn_boundary(message):
    warnings.warn(message, SearchBoundaryWarning, stacklevel=4)  # the caller of fit


def curve_dict(curve, key="bandwidth"):
    """The searched grid: {'scale': (g,), key: (g, d), 'value': (g,)}."""
    if not curve:
        return {"scale": np.empty(0), key: np.empty((0, 0)), "value": np.empty(0)}
    return {"scale": np.array([c[0] for c in curve]), key: np.array([c[1] for c in curve]),
            "value": np.array([c[2] for c in curve])}


def cv_folds(estimator, X, y, groups, criterion):
    """The fold id of each row for the estimator's `cv` (None: leave-one-out) and its name.

    An int K is K folds shuffled with seed 0 (the library's, as `kf smooth --cv kfold:K`); a
    scikit-learn splitter (anything with split(X, y, groups)) or an iterable of (train, test)
    index pairs must hold each point out exactly once and train on all the others."""
    cv = getattr(estimator, "cv", None)
    name = type(estimator).__name__
    if cv is None:
        if groups is not None:
            raise ValueError(f"{name}: groups are used by a grouped splitter given as cv "
                             "(GroupKFold, LeaveOneGroupOut); cv is None (leave-one-out)")
        return None, ""
    searched = getattr(estimator, "n_neighbors", None) == "cv" or (
        criterion == _kf.BandwidthCriterion.loo_cv and not hasattr(estimator, "n_neighbors"))
    if not searched:
        raise ValueError(f"{name}: cv={cv!r} chooses the bandwidth (or k) by cross-validation: "
                         "it needs bandwidth='cv' (n_neighbors='cv')")
    n = X.shape[0]
    if isinstance(cv, numbers.Integral) and not isinstance(cv, (bool, np.bool_)):
        return _kf.cv_folds_kfold(n, int(cv), 0), f"{int(cv)}-fold (seed 0)"
    splits = cv.split(X, y, groups) if hasattr(cv, "split") else cv
    try:
        pairs = list(splits)
    except TypeError:
        raise TypeError(f"{name}: cv must be None, an int, a splitter or (train, test) pairs, "
                        f"not {type(cv).__name__}") from None
    folds = np.full(n, -1, dtype=np.int64)
    for f, (train, test) in enumerate(pairs):
        test = np.asarray(test, dtype=np.int64)
        if test.size == 0 or np.any(folds[test] >= 0):
            raise ValueError(f"{name}: cv's test sets must hold each point out exactly once "
                             "(KFold, GroupKFold, LeaveOneGroupOut, ...); fold "
                             f"{f} is empty or overlaps another")
        if len(train) + test.size != n:
            raise ValueError(f"{name}: cv's fold {f} trains on {len(train)} points, not on all "
                             f"{n - test.size} others")
        folds[test] = f
    if np.any(folds < 0):
        raise ValueError(f"{name}: cv never holds out {int(np.sum(folds < 0))} of {n} points")
    return folds, type(cv).__name__ if hasattr(cv, "split") else "given folds"
