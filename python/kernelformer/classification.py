"""scikit-learn classifiers on the smoothing primitive: the class probabilities are the smoother
with one-hot labels as values, p_c(x) = sum_j K(x, x_j) [y_j = c] / sum_j K(x, x_j) (what
`kf classify` runs, kf::classify_fit_data). The bandwidth (or k) is chosen by leave-one-out
log-loss or accuracy.

    import kernelformer as kf
    clf = kf.KernelClassifier().fit(X, y)       # gaussian kernel, bandwidth by LOO log-loss
    clf.predict_proba(X_new)                    # (n, n_classes), rows sum to 1
    kf.KNNClassifier(n_neighbors="cv").fit(X, y).predict(X_new)
"""
from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import _kernelformer as _kf
from ._primitive import make_kernel
from ._sklearn import curve_dict, distance_kernel, need_samples, validate, warn_boundary

__all__ = ["KernelClassifier", "KNNClassifier"]

_CRITERIA = ("log_loss", "accuracy")


class _SmootherClassifier(ClassifierMixin, BaseEstimator):
    """fit / predict_proba / predict over kf::classify_*; subclasses give _spec()."""

    def _check_criterion(self):
        if self.criterion not in _CRITERIA:
            raise ValueError(f"criterion must be one of {', '.join(_CRITERIA)}, "
                             f"not {self.criterion!r}")

    def fit(self, X: ArrayLike, y: ArrayLike) -> "_SmootherClassifier":
        """Fit on X (n_samples, n_features) and class labels y (n_samples,). Returns self."""
        X, y = validate(self, X, y, dtype=np.float64, order="C")
        check_classification_targets(y)
        self.classes_, labels = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes in y, got 1 class")
        need_samples(X.shape[0], 3, type(self).__name__)
        self._check_criterion()
        method, kernel, bandwidth, k, k_max, dist = self._spec(X)
        res = _kf.classify_fit_data(method, kernel, bandwidth, k, k_max, dist, self.criterion,
                                    X, labels.astype(np.int64).tolist(), len(self.classes_))
        self._fit_X, self._labels = X, labels.astype(np.int64).tolist()
        self._method, self._kernel_obj, self._dist = method, kernel, dist
        self._bandwidth = list(res["bandwidth"])
        self._k = int(res["k"])
        self.loo_log_loss_ = float(res["log_loss"])
        self.loo_accuracy_ = float(res["accuracy"])
        self.at_search_boundary_ = bool(res["at_search_boundary"])
        self.criterion_curve_ = curve_dict(res["curve"], self._curve_key)
        self._fitted_attributes()
        if self.at_search_boundary_:
            warn_boundary(f"{type(self).__name__}: the chosen {self._curve_key} is at the edge of "
                          "the searched range; the criterion may keep falling beyond it")
        return self

    def predict_proba(self, X: ArrayLike) -> NDArray:
        """Class probabilities (n_queries, n_classes) in the order of classes_; rows sum to 1
        (a row no training point reaches gets the training class frequencies)."""
        check_is_fitted(self, "classes_")
        X = validate(self, X, reset=False, dtype=np.float64, order="C")
        return _kf.classify_probabilities(self._method, self._kernel_obj, self._bandwidth,
                                          self._k, self._dist, self._fit_X, self._labels,
                                          len(self.classes_), X)

    def predict(self, X: ArrayLike) -> NDArray:
        """The most probable class of each row of X -> (n_queries,)."""
        proba = self.predict_proba(X)  # checks that the classifier is fitted
        return self.classes_[np.argmax(proba, axis=1)]


class KernelClassifier(_SmootherClassifier):
    """Nadaraya-Watson classification: p_c(x) = sum_j K((x - x_j)/h) [y_j = c] / sum_j K(...).

    Parameters
    ----------
    kernel : str, default="gaussian"
        A distance kernel (gaussian, epanechnikov, tricube, laplacian, ...).
    bandwidth : "cv", float or array-like of shape (n_features,), default="cv"
        "cv": one bandwidth per feature chosen by leave-one-out `criterion`; or fixed values.
    criterion : {"log_loss", "accuracy"}, default="log_loss"

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    bandwidth_ : ndarray of shape (n_features,)
    loo_log_loss_, loo_accuracy_ : float
        Leave-one-out log-loss and accuracy at bandwidth_.
    criterion_curve_ : dict of arrays, at_search_boundary_ : bool
    n_features_in_ : int

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> X = np.r_[np.zeros((20, 1)), np.ones((20, 1))] + 0.1 * np.arange(40)[:, None] % 0.3
    >>> y = np.r_[np.zeros(20), np.ones(20)]
    >>> kf.KernelClassifier().fit(X, y).predict([[0.05], [0.95]]).tolist()
    [0.0, 1.0]
    """

    _curve_key = "bandwidth"

    def __init__(self, kernel="gaussian", bandwidth="cv", criterion="log_loss"):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.criterion = criterion

    def _spec(self, X):
        kern = distance_kernel(self.kernel, "KernelClassifier")
        if isinstance(self.bandwidth, str):
            if self.bandwidth != "cv":
                raise ValueError(f"bandwidth must be 'cv', a positive number or one per feature, "
                                 f"not {self.bandwidth!r}")
            bw = []
        else:
            bw = np.atleast_1d(np.asarray(self.bandwidth, dtype=float)).ravel().tolist()
            if len(bw) not in (1, X.shape[1]) or not all(np.isfinite(h) and h > 0 for h in bw):
                raise ValueError(f"bandwidth {self.bandwidth!r}: one positive number, or one per "
                                 "feature")
            if len(bw) == 1:
                bw = bw * X.shape[1]
        return "nw", kern, bw, 0, 0, False

    def _fitted_attributes(self):
        self.bandwidth_ = np.asarray(self._bandwidth, dtype=float)


class KNNClassifier(_SmootherClassifier):
    """k-nearest-neighbour classification on the primitive (a top-k mask, uniform or
    inverse-distance weights).

    Parameters
    ----------
    n_neighbors : "cv" or int, default="cv"
        "cv": every k in 1..k_max tried by leave-one-out `criterion`.
    weights : {"uniform", "distance"}, default="uniform"
    k_max : int, default=50
    criterion : {"log_loss", "accuracy"}, default="log_loss"

    Attributes
    ----------
    classes_, n_neighbors_ (int), loo_log_loss_, loo_accuracy_, criterion_curve_,
    at_search_boundary_, n_features_in_

    Example
    -------
    >>> import numpy as np, kernelformer as kf
    >>> X = np.arange(20.0)[:, None]; y = (X[:, 0] > 9.5).astype(int)
    >>> kf.KNNClassifier(n_neighbors=3).fit(X, y).predict([[2.0], [17.0]]).tolist()
    [0, 1]
    """

    _curve_key = "k"

    def __init__(self, n_neighbors="cv", weights="uniform", k_max=50, criterion="log_loss"):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.k_max = k_max
        self.criterion = criterion

    def _spec(self, X):
        if self.weights not in ("uniform", "distance"):
            raise ValueError(f"weights must be 'uniform' or 'distance', not {self.weights!r}")
        n = X.shape[0]
        if isinstance(self.n_neighbors, str):
            if self.n_neighbors != "cv":
                raise ValueError(f"n_neighbors must be 'cv' or a positive integer, not "
                                 f"{self.n_neighbors!r}")
            k = 0
        elif isinstance(self.n_neighbors, numbers.Integral) and not isinstance(self.n_neighbors,
                                                                               bool):
            k = int(self.n_neighbors)
            if not 1 <= k <= n - 1:
                raise ValueError(f"n_neighbors={k} must be in 1..n_samples - 1 = {n - 1}")
        else:
            raise TypeError(f"n_neighbors must be 'cv' or an integer, not {self.n_neighbors!r}")
        if not isinstance(self.k_max, numbers.Integral) or self.k_max < 1:
            raise ValueError(f"k_max must be a positive integer, not {self.k_max!r}")
        k_max = int(min(self.k_max, n - 1))
        return "knn", make_kernel("gaussian"), [], k, k_max, self.weights == "distance"

    def _fitted_attributes(self):
        self.n_neighbors_ = self._k
