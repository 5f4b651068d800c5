"""Mixed-data estimators against statsmodels itself (KernelReg reg_type='lc' and
KDEMultivariate with var_type 'c', 'u', 'o'): fits, densities and criteria at given bandwidths to
1e-12, and our bounded CV searches at least as good as statsmodels' own optimum."""
import numpy as np
import pytest
from statsmodels.nonparametric.kernel_density import KDEMultivariate
from statsmodels.nonparametric.kernel_regression import KernelReg

import kernelformer as kf


def data(n=120, seed=0):
    r = np.random.default_rng(seed)
    x = r.uniform(0, 4, n)
    u = r.integers(0, 3, n)
    o = r.integers(0, 4, n)
    y = np.sin(x) + 0.5 * u - 0.3 * o + 0.2 * r.normal(size=n)
    return np.c_[x, u, o].astype(float), y


def test_regression_equals_statsmodels_at_given_bandwidths():
    X, y = data()
    q = X[::7]
    for bw in ([0.4, 0.2, 0.5], [1.0, 0.05, 0.9]):
        sm = KernelReg(y, X, var_type="cuo", reg_type="lc", bw=bw)
        ours = kf.MixedNadarayaWatsonRegressor(var_type="cuo", bandwidth=bw).fit(X, y)
        assert np.allclose(ours.predict(q), sm.fit(q)[0], rtol=1e-12, atol=1e-12)
        assert ours.criterion_ == pytest.approx(sm.cv_loo(np.array(bw), sm.est[sm.reg_type]) /
                                                1.0, rel=1e-12)


def test_density_equals_statsmodels_at_given_bandwidths():
    X, _ = data()
    q = X[::5]
    bw = [0.5, 0.3, 0.4]
    sm = KDEMultivariate(X, var_type="cuo", bw=bw)
    ours = kf.MixedKernelDensity(var_type="cuo", bandwidth=bw).fit(X)
    assert np.allclose(ours.density(q), sm.pdf(q), rtol=1e-12, atol=0)


def test_cv_searches_reach_statsmodels_optimum():
    X, y = data(n=80, seed=1)
    sm = KernelReg(y, X, var_type="cuo", reg_type="lc", bw="cv_ls")
    ours = kf.MixedNadarayaWatsonRegressor(var_type="cuo").fit(X, y)
    at_sm = kf.MixedNadarayaWatsonRegressor(var_type="cuo", bandwidth=sm.bw).fit(X, y)
    inside = sm.bw[1] <= 2 / 3 and 0 <= sm.bw[2] <= 1 and min(sm.bw) >= 0
    if inside:  # statsmodels' unbounded fmin may leave the lambdas' ranges
        assert ours.criterion_ <= at_sm.criterion_ * (1 + 1e-9)
    assert np.all(ours.bandwidth_[1:] >= 0) and ours.bandwidth_[1] <= 2 / 3
    assert ours.bandwidth_[2] <= 1
    dens = kf.MixedKernelDensity(var_type="cuo").fit(X)
    assert np.isfinite(dens.criterion_) and dens.search_evaluations_ > 0


def test_refusals_and_normal_reference():
    X, y = data(n=40)
    with pytest.raises(ValueError, match="var_type"):
        kf.MixedNadarayaWatsonRegressor(var_type="cu").fit(X, y)
    with pytest.raises(ValueError, match="var_type"):
        kf.MixedKernelDensity(var_type="cux").fit(X)
    with pytest.raises(ValueError, match="bandwidth"):
        kf.MixedNadarayaWatsonRegressor(var_type="cuo", bandwidth="gcv").fit(X, y)
    ref = kf.MixedNadarayaWatsonRegressor(var_type="cuo", bandwidth="normal-reference").fit(X, y)
    assert ref.bandwidth_[1] <= 2 / 3 and ref.bandwidth_[2] <= 1 and ref.search_evaluations_ == 0
