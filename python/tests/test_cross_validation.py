"""k-fold and grouped cross-validation of the regressors' bandwidth and k (cv=...), against
scikit-learn's own cross-validation of the same estimator at the chosen parameter."""
import numpy as np
import pytest
from sklearn.model_selection import (GroupKFold, KFold, LeaveOneGroupOut, LeaveOneOut,
                                     cross_val_score)

import kernelformer as kf
from kernelformer import _kernelformer as _kfc


def data(n=400, seed=1):
    r = np.random.default_rng(seed)
    x = r.uniform(0, 10, n)
    y = np.sin(x) + 0.3 * r.normal(size=n)
    return x[:, None], y, (x // 2).astype(int)


def sklearn_cv(est, X, y, cv, groups=None):
    """Mean squared held-out residual over all points: scikit-learn's per-fold scores weighted
    by the folds' sizes (its mean of fold means is this for equal folds only)."""
    scores = cross_val_score(est, X, y, cv=cv, groups=groups, scoring="neg_mean_squared_error")
    sizes = [len(test) for _, test in cv.split(X, y, groups)]
    return -np.average(scores, weights=sizes)


@pytest.mark.parametrize("make", [
    lambda **kw: kf.NadarayaWatsonRegressor(**kw),
    lambda **kw: kf.LocalLinearRegressor(**kw),
    lambda **kw: kf.NadarayaWatsonRegressor(kernel="epanechnikov", **kw),
])
def test_kfold_criterion_is_sklearns_cross_validation_at_the_chosen_bandwidth(make):
    X, y, _ = data()
    splitter = KFold(5, shuffle=True, random_state=3)
    est = make(cv=splitter).fit(X, y)
    assert est.cv_name_ == "KFold"
    fixed = make(bandwidth=float(est.bandwidth_[0]))
    assert est.criterion_ == pytest.approx(sklearn_cv(fixed, X, y, splitter), rel=1e-10)
    # the chosen bandwidth is at least as good as the searched grid's points
    assert est.criterion_ <= est.criterion_curve_["value"].min() * (1 + 1e-12)


def test_an_int_is_the_libraries_seeded_folds():
    X, y, _ = data()
    est = kf.NadarayaWatsonRegressor(cv=5).fit(X, y)
    folds = _kfc.cv_folds_kfold(len(y), 5, 0)
    assert sorted(np.bincount(folds)) == [80] * 5
    pairs = [(np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(5)]
    again = kf.NadarayaWatsonRegressor(cv=pairs).fit(X, y)
    assert est.bandwidth_[0] == again.bandwidth_[0] and est.criterion_ == again.criterion_
    assert est.cv_name_ == "5-fold (seed 0)"


def test_grouped_cv_holds_whole_groups_out():
    X, y, g = data()
    est = kf.NadarayaWatsonRegressor(cv=LeaveOneGroupOut()).fit(X, y, groups=g)
    fixed = kf.NadarayaWatsonRegressor(bandwidth=float(est.bandwidth_[0]))
    assert est.criterion_ == pytest.approx(
        sklearn_cv(fixed, X, y, LeaveOneGroupOut(), groups=g), rel=1e-10)
    gk = kf.NadarayaWatsonRegressor(cv=GroupKFold(5)).fit(X, y, groups=g)
    fixed = kf.NadarayaWatsonRegressor(bandwidth=float(gk.bandwidth_[0]))
    assert gk.cv_name_ == "GroupKFold"
    assert gk.criterion_ == pytest.approx(sklearn_cv(fixed, X, y, GroupKFold(5), groups=g),
                                          rel=1e-10)


def test_leave_one_out_splitter_equals_the_closed_form():
    X, y, _ = data(n=120)
    loo = kf.NadarayaWatsonRegressor(bandwidth=0.4).fit(X, y).loo_cv_
    folds = [(np.delete(np.arange(120), i), np.array([i])) for i in range(120)]
    est = kf.NadarayaWatsonRegressor(cv=folds).fit(X, y)
    at = kf.NadarayaWatsonRegressor(bandwidth=float(est.bandwidth_[0]), cv=None).fit(X, y)
    assert est.criterion_ == pytest.approx(at.loo_cv_, rel=1e-10)
    assert sklearn_cv(kf.NadarayaWatsonRegressor(bandwidth=0.4), X, y, LeaveOneOut()) == \
        pytest.approx(loo, rel=1e-10)


def test_knn_k_by_kfold():
    X, y, _ = data()
    splitter = KFold(4, shuffle=True, random_state=0)
    est = kf.KNNRegressor(cv=splitter, max_neighbors=40).fit(X, y)
    scores = {k: sklearn_cv(kf.KNNRegressor(n_neighbors=k), X, y, splitter) for k in range(1, 41)}
    best = min(scores, key=scores.get)
    assert est.n_neighbors_ == best
    assert est.criterion_ == pytest.approx(scores[best], rel=1e-10)


def test_binned_route_folds_match_exact():
    """Each fold's smoother on the binned route (5,000 training points) gives the criterion of
    the exact sums at the same bandwidth, to the binned route's accuracy."""
    r = np.random.default_rng(0)
    x = r.uniform(0, 1, 6000)
    y = np.cos(6 * x) + 0.2 * r.normal(size=6000)
    X = x[:, None]
    folds = _kfc.cv_folds_kfold(6000, 6, 0)
    values = {}
    for exact in (False, True):
        spec = _kfc.RegressionSpec()
        spec.bandwidth = [0.02]
        spec.exact = exact
        values[exact] = _kfc.cv_criterion(spec, X, y, folds)
    assert values[False] == pytest.approx(values[True], rel=1e-6)
    pairs = [(np.flatnonzero(folds != f), np.flatnonzero(folds == f)) for f in range(6)]
    oracle = kf.NadarayaWatsonRegressor(bandwidth=0.02, exact=True)
    assert values[True] == pytest.approx(
        sklearn_cv(oracle, X, y, _Pairs(pairs)), rel=1e-12)


class _Pairs:
    """A splitter from fixed (train, test) pairs."""

    def __init__(self, pairs):
        self.pairs = pairs

    def split(self, X, y=None, groups=None):
        return iter(self.pairs)

    def get_n_splits(self, X=None, y=None, groups=None):
        return len(self.pairs)


def test_bad_cv_is_a_clear_error():
    X, y, g = data(n=50)
    with pytest.raises(ValueError, match="bandwidth='cv'"):
        kf.NadarayaWatsonRegressor(bandwidth="gcv", cv=5).fit(X, y)
    with pytest.raises(ValueError, match="exactly once"):
        kf.NadarayaWatsonRegressor(cv=[(np.arange(25), np.arange(25, 50)),
                                       (np.arange(20), np.arange(20, 50))]).fit(X, y)
    with pytest.raises(ValueError, match="never holds out"):
        kf.NadarayaWatsonRegressor(cv=[(np.arange(25, 50), np.arange(25))]).fit(X, y)
    with pytest.raises(ValueError, match="groups"):
        kf.NadarayaWatsonRegressor().fit(X, y, groups=g)
    with pytest.raises(ValueError, match="2..50"):
        kf.NadarayaWatsonRegressor(cv=51).fit(X, y)
