"""The scikit-learn estimators: scikit-learn's own check_estimator, use in Pipeline, GridSearchCV
and cross_val_score, and agreement with independent references (numpy formulas, scikit-learn's
KNeighborsRegressor and KernelDensity, statsmodels' KernelReg and KDEUnivariate)."""
import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import kernelformer as kf
from _reference import kernel_matrix, smooth_dense


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 6, 300)
    y = 2 * np.sin(x) + 0.4 * rng.standard_normal(300)
    return x[:, None], y


@pytest.mark.parametrize("estimator", [kf.NadarayaWatsonRegressor(), kf.KNNRegressor(),
                                       kf.KernelDensity(),
                                       kf.LocalLinearRegressor(bandwidth="silverman")],
                         ids=lambda e: repr(e))
def test_check_estimator(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(estimator)


@pytest.mark.slow
def test_check_estimator_local_linear_cv():
    # 10-feature data with a per-feature CV bandwidth search: about 20 s. Every check but
    # check_regressor_multioutput, whose data (11 points, 10 features) leave no point's local
    # linear design (11 parameters) solvable without it: leave-one-out is undefined there for a
    # single output just the same, and the fit says so (asserted below).
    from sklearn.datasets import make_regression
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est, check in check_estimator(kf.LocalLinearRegressor(), generate_only=True):
            if getattr(check, "func", check).__name__ != "check_regressor_multioutput":
                check(est)
    X, y = make_regression(random_state=42, n_targets=5, n_samples=11, n_features=10)
    with pytest.raises(ValueError, match="infinite or undefined for every bandwidth"):
        kf.LocalLinearRegressor().fit(X, y[:, 0])
    with pytest.raises(ValueError, match="infinite or undefined for every bandwidth"):
        kf.LocalLinearRegressor().fit(X, y)


def test_nadaraya_watson_against_the_formula(data):
    x, y = data
    xq = np.linspace(-0.5, 6.5, 50)[:, None]
    m = kf.NadarayaWatsonRegressor(bandwidth=0.3).fit(x, y)
    fit, se = m.predict(xq, return_std=True)
    K = kernel_matrix("gaussian", xq, x, h=0.3)
    ref, w, _ = smooth_dense(K, y[:, None])
    np.testing.assert_allclose(fit, ref[:, 0], rtol=1e-10, atol=1e-12)
    # standard error of the fit: sigma * sqrt(sum_j l_j(x)^2), sigma^2 = RSS / (n - df)
    L = smooth_dense(kernel_matrix("gaussian", x, x, h=0.3), np.eye(len(y)))[1]
    df = np.trace(L)
    rss = np.sum((L @ y - y) ** 2)
    np.testing.assert_allclose(m.df_, df, rtol=1e-10)
    np.testing.assert_allclose(m.sigma_, np.sqrt(rss / (len(y) - df)), rtol=1e-10)
    np.testing.assert_allclose(se, m.sigma_ * np.sqrt((w ** 2).sum(1)), rtol=1e-10)
    np.testing.assert_allclose(m.fitted_values_, L @ y, rtol=1e-10)
    np.testing.assert_allclose(m.hat_diag_, np.diag(L), rtol=1e-10)
    # leave-one-out residuals against n refits without the point
    loo = [y[i] - smooth_dense(kernel_matrix("gaussian", x[i:i + 1], np.delete(x, i, 0), h=0.3),
                               np.delete(y, i)[:, None])[0][0, 0] for i in range(0, 300, 37)]
    np.testing.assert_allclose(m.loo_residuals_[::37], loo, rtol=1e-8)
    np.testing.assert_allclose(m.r2_, 1 - rss / np.sum((y - y.mean()) ** 2), rtol=1e-10)
    np.testing.assert_allclose(m.criterion_, np.mean(m.loo_residuals_ ** 2), rtol=1e-10)
    assert m.criterion_name_ == "fixed" and m.bandwidth_.tolist() == [0.3]


def test_per_feature_bandwidths():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (200, 2)) * [1.0, 10.0]
    y = np.sin(4 * x[:, 0]) + 0.1 * x[:, 1] + 0.1 * rng.standard_normal(200)
    xq = rng.uniform(0, 1, (20, 2)) * [1.0, 10.0]
    h = np.array([0.1, 2.0])
    m = kf.NadarayaWatsonRegressor(bandwidth=h).fit(x, y)
    ref = smooth_dense(kernel_matrix("gaussian", xq / h, x / h, h=1.0), y[:, None])[0][:, 0]
    np.testing.assert_allclose(m.predict(xq), ref, rtol=1e-10)
    cv = kf.NadarayaWatsonRegressor(bandwidth="cv").fit(x, y)
    assert cv.bandwidth_.shape == (2,)
    assert cv.bandwidth_[1] > 5 * cv.bandwidth_[0]  # the slow feature gets the wider bandwidth
    assert cv.criterion_curve_["bandwidth"].shape[1] == 2


def test_against_statsmodels_kernelreg(data):
    sm = pytest.importorskip("statsmodels.nonparametric.kernel_regression")
    x, y = data
    x, y = x[:120], y[:120]
    xq = np.linspace(0.2, 5.8, 25)
    for reg_type, est in (("lc", kf.NadarayaWatsonRegressor), ("ll", kf.LocalLinearRegressor)):
        ref = sm.KernelReg(y, x[:, 0], "c", reg_type=reg_type, bw=[0.35])
        ours = est(bandwidth=0.35, exact=True).fit(x, y)
        np.testing.assert_allclose(ours.predict(xq[:, None]), ref.fit(xq)[0], rtol=1e-8,
                                   atol=1e-10)
    # leave-one-out CV bandwidth (statsmodels' cv_ls), same criterion, two optimizers
    ref = sm.KernelReg(y, x[:, 0], "c", reg_type="lc", bw="cv_ls")
    ours = kf.NadarayaWatsonRegressor(bandwidth="cv", exact=True).fit(x, y)
    np.testing.assert_allclose(ours.bandwidth_[0], ref.bw[0], rtol=2e-3)


@pytest.mark.parametrize("weights", ["uniform", "distance"])
@pytest.mark.parametrize("d", [1, 3])
def test_knn_against_scikit_learn(weights, d):
    from sklearn.neighbors import KNeighborsRegressor
    rng = np.random.default_rng(d)
    x = rng.uniform(0, 6, (500, d))
    y = np.sin(x).sum(1) + 0.3 * rng.standard_normal(500)
    xq = rng.uniform(0, 6, (100, d))
    ref = KNeighborsRegressor(n_neighbors=7, weights=weights).fit(x, y).predict(xq)
    ours = kf.KNNRegressor(n_neighbors=7, weights=weights).fit(x, y)
    np.testing.assert_allclose(ours.predict(xq), ref, rtol=1e-10, atol=1e-12)
    # fitted values at the training points (each point is its own nearest neighbour)
    ref_fit = KNeighborsRegressor(n_neighbors=7, weights=weights).fit(x, y).predict(x)
    np.testing.assert_allclose(ours.fitted_values_, ref_fit, rtol=1e-10, atol=1e-12)


def test_knn_cv_picks_the_leave_one_out_optimum():
    from sklearn.neighbors import NearestNeighbors
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 6, (300, 2))
    y = np.sin(x[:, 0]) * np.cos(x[:, 1]) + 0.3 * rng.standard_normal(300)
    m = kf.KNNRegressor(n_neighbors="cv", max_neighbors=40).fit(x, y)
    idx = NearestNeighbors(n_neighbors=41).fit(x).kneighbors(x, return_distance=False)[:, 1:]
    loo = [np.mean((y - y[idx[:, :k]].mean(1)) ** 2) for k in range(1, 41)]
    assert m.n_neighbors_ == int(np.argmin(loo)) + 1
    np.testing.assert_allclose(m.criterion_, min(loo), rtol=1e-10)
    assert m.criterion_name_ == "cv"


@pytest.mark.parametrize("ours,theirs", [("gaussian", "gaussian"), ("epanechnikov",
                                                                       "epanechnikov"),
                                         ("boxcar", "tophat"), ("laplacian", "exponential"),
                                         ("cosine", "cosine")])
def test_kernel_density_against_scikit_learn(ours, theirs):
    from sklearn.neighbors import KernelDensity as SkKDE
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(0, 1, 300), rng.normal(4, 0.5, 100)][:, None]
    at = np.linspace(-3, 6, 40)[:, None]
    ref = SkKDE(kernel=theirs, bandwidth=0.6).fit(x).score_samples(at)
    got = kf.KernelDensity(kernel=ours, bandwidth=0.6).fit(x).score_samples(at)
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-9, atol=1e-10)


def test_kernel_density_2d_and_binned_route():
    from sklearn.neighbors import KernelDensity as SkKDE
    rng = np.random.default_rng(2)
    x2 = rng.normal(size=(300, 2))
    at2 = rng.normal(size=(30, 2))
    ref = SkKDE(bandwidth=0.5).fit(x2).score_samples(at2)
    got = kf.KernelDensity(bandwidth=0.5).fit(x2)
    np.testing.assert_allclose(got.score_samples(at2), ref, rtol=1e-9)
    np.testing.assert_allclose(got.score(at2), ref.sum(), rtol=1e-9)
    # 1-D from 5,000 points: the binned route, within 1e-4 of the maximum density
    x = rng.normal(size=(20_000, 1))
    at = np.linspace(-3, 3, 50)[:, None]
    binned = kf.KernelDensity(bandwidth=0.2).fit(x)
    exact = kf.KernelDensity(bandwidth=0.2, exact=True).fit(x)
    assert binned.route_.startswith("binned") and exact.route_.startswith("exact")
    d_b, d_e = np.exp(binned.score_samples(at)), np.exp(exact.score_samples(at))
    assert np.max(np.abs(d_b - d_e)) < 1e-4 * d_e.max()


@pytest.mark.parametrize("n,d", [(300, 1), (6000, 1), (300, 2), (6000, 2)])
def test_kernel_density_log_density_far_from_the_data(n, d):
    """Far from the data the density underflows but its log does not: the exact value (a numpy
    log-sum-exp over every point) on the exact and the binned routes, where scikit-learn gives
    -2273.9 and the like (its tree's bounds are off by up to 0.2% there: -15843.0 against the
    exact -15811.4 at (40, 40) for n = 6000, d = 2, so the exact sum is the reference), and
    score() of a set with one outlier stays finite."""
    from scipy.special import logsumexp
    from sklearn.neighbors import KernelDensity as SkKDE
    rng = np.random.default_rng(4)
    x = rng.normal(size=(n, d))
    h = 0.3
    far = np.array([[40.0] * d, [-60.0] * d, [0.3] * d])
    exact = np.array([logsumexp(-0.5 * (((x - q) / h) ** 2).sum(1)) for q in far])
    exact -= np.log(n) + d * np.log(h * np.sqrt(2 * np.pi))
    ref = SkKDE(bandwidth=h).fit(x).score_samples(far)
    ours = kf.KernelDensity(bandwidth=h).fit(x)
    got = ours.score_samples(far)
    assert np.all(np.isfinite(got)), got
    assert exact[0] < -1000
    np.testing.assert_allclose(got[:2], exact[:2], rtol=1e-12)
    np.testing.assert_allclose(got[:2], ref[:2], rtol=3e-3)  # scikit-learn, within its bounds
    np.testing.assert_allclose(got[2], exact[2], rtol=1e-3)  # near the data: the binned accuracy
    assert np.isfinite(ours.score(np.r_[x[:20], far[:1]]))


def test_kernel_density_bandwidth_rules_against_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(4)
    x = rng.standard_gamma(3.0, 500)
    for rule, bw in (("silverman", "silverman"), ("scott", "scott")):
        ref = sm.nonparametric.KDEUnivariate(x)
        ref.fit(bw=bw, fft=False)
        ours = kf.KernelDensity(bandwidth=rule).fit(x[:, None])
        np.testing.assert_allclose(ours.bandwidth_[0], ref.bw, rtol=1e-3)
    cv = kf.KernelDensity(bandwidth="cv-ml").fit(x[:, None])
    assert cv.criterion_name_ == "cv-ml" and cv.criterion_curve_["value"].size > 0
    # the likelihood-CV bandwidth minimizes the criterion over its own search grid
    assert cv.criterion_ <= cv.criterion_curve_["value"].min() + 1e-9


def test_kernel_density_sheather_jones_against_r():
    """bandwidth='sj' / 'sj-dpi' are R's bw.SJ (tests/fixtures/sj_*.npy, from
    python/make_fixture_bandwidth_sj.py), per feature."""
    import os
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                            "fixtures")
    ref = np.load(os.path.join(fixtures, "sj_reference.npy"))
    x = np.load(os.path.join(fixtures, "sj_eruptions.npy"))
    precip = np.load(os.path.join(fixtures, "sj_precip.npy"))
    ste = kf.KernelDensity(bandwidth="sj").fit(x[:, None])
    np.testing.assert_allclose(ste.bandwidth_[0], ref[0, 0], rtol=1e-10)
    assert ste.criterion_name_ in ("cv-ml", "sj")
    dpi = kf.KernelDensity(bandwidth="sj-dpi").fit(x[:, None])
    np.testing.assert_allclose(dpi.bandwidth_[0], ref[0, 2], rtol=1e-10)
    both = kf.KernelDensity(bandwidth="sj").fit(np.c_[x[:70], precip])  # one per feature
    np.testing.assert_allclose(both.bandwidth_[1], ref[1, 0], rtol=1e-10)
    with pytest.raises(ValueError, match="density criterion"):
        kf.NadarayaWatsonRegressor(bandwidth="sj").fit(x[:, None], x)


def test_kernel_density_sample():
    x = np.random.default_rng(6).normal(size=(400, 2)) * [1.0, 3.0]
    m = kf.KernelDensity(bandwidth=[0.1, 0.3]).fit(x)
    s = m.sample(4000, random_state=0)
    assert s.shape == (4000, 2)
    np.testing.assert_allclose(s.std(0), np.sqrt(x.var(0) + [0.01, 0.09]), rtol=0.08)
    e = kf.KernelDensity(kernel="epanechnikov", bandwidth=0.5).fit(x[:, :1])
    s1 = e.sample(3000, random_state=1)
    # every sample lies within h of a training point; the kernel's variance is h^2/5
    dist = np.abs(s1 - x[:, 0][None, :]).min(1)
    assert dist.max() <= 0.5 + 1e-12
    np.testing.assert_allclose(s1.var(), x[:, 0].var() + 0.25 / 5, rtol=0.1)
    np.testing.assert_array_equal(e.sample(5, random_state=3), e.sample(5, random_state=3))


def test_pipeline_grid_search_cross_val(data):
    x, y = data
    pipe = make_pipeline(StandardScaler(), kf.NadarayaWatsonRegressor(bandwidth="silverman"))
    assert pipe.fit(x, y).score(x, y) > 0.8
    grid = GridSearchCV(kf.NadarayaWatsonRegressor(), {"bandwidth": [0.02, 0.3, 3.0]},
                        cv=KFold(5, shuffle=True, random_state=0)).fit(x, y)
    assert grid.best_params_["bandwidth"] == 0.3
    kernels = GridSearchCV(kf.NadarayaWatsonRegressor(bandwidth=0.6),
                           {"kernel": ["gaussian", "epanechnikov", "tricube"]}, cv=3).fit(x, y)
    assert np.all(np.isfinite(kernels.cv_results_["mean_test_score"]))
    scores = cross_val_score(kf.LocalLinearRegressor(), x, y, cv=4)
    assert scores.shape == (4,) and np.all(scores > 0.5)
    knn = cross_val_score(make_pipeline(StandardScaler(), kf.KNNRegressor()), x, y, cv=3)
    assert np.all(knn > 0.5)
    kde_grid = GridSearchCV(kf.KernelDensity(), {"bandwidth": [0.01, 0.3, 5.0]}, cv=3).fit(x)
    assert kde_grid.best_params_["bandwidth"] == 0.3


def test_fitted_estimators_pickle(data):
    x, y = data
    for est in (kf.NadarayaWatsonRegressor(), kf.KNNRegressor(n_neighbors=5),
                kf.KernelDensity(bandwidth="cv-ml")):
        m = est.fit(x, y)
        clone = pickle.loads(pickle.dumps(m))
        method = "score_samples" if isinstance(m, kf.KernelDensity) else "predict"
        np.testing.assert_array_equal(getattr(clone, method)(x[:20]), getattr(m, method)(x[:20]))


def test_search_boundary_warning():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (200, 1))
    y = rng.standard_normal(200)  # pure noise: the widest bandwidth (a constant) wins
    with pytest.warns(kf.SearchBoundaryWarning, match="edge of the searched range"):
        m = kf.NadarayaWatsonRegressor().fit(x, y)
    assert m.at_search_boundary_


def test_undefined_predictions_are_nan(data):
    x, y = data
    m = kf.NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.2).fit(x, y)
    with pytest.warns(RuntimeWarning, match="no training data within the kernel's reach"):
        fit, se = m.predict([[3.0], [50.0]], return_std=True)
    assert np.isfinite(fit[0]) and np.isnan(fit[1]) and np.isnan(se[1])


@pytest.mark.parametrize("make,fit_args,exc,message", [
    (lambda: kf.NadarayaWatsonRegressor(kernel="gausian"), "xy", ValueError, "unknown kernel"),
    (lambda: kf.NadarayaWatsonRegressor(kernel="exp_dot"), "xy", ValueError,
     "needs a distance kernel"),
    (lambda: kf.NadarayaWatsonRegressor(bandwidth="cv-ml"), "xy", ValueError,
     "is a density criterion"),
    (lambda: kf.NadarayaWatsonRegressor(bandwidth="best"), "xy", ValueError,
     "unknown bandwidth selector 'best'"),
    (lambda: kf.NadarayaWatsonRegressor(bandwidth=-1.0), "xy", ValueError, "positive number"),
    (lambda: kf.NadarayaWatsonRegressor(bandwidth=[1.0, 2.0]), "xy", ValueError,
     "2 bandwidths given for 1 features"),
    (lambda: kf.NadarayaWatsonRegressor(bandwidth={"h": 1}), "xy", TypeError, "bandwidth"),
    (lambda: kf.NadarayaWatsonRegressor(), "nan", ValueError, "NaN"),
    (lambda: kf.LocalLinearRegressor(), "inf", ValueError, "infinity"),
    (lambda: kf.KNNRegressor(weights="gaussian"), "xy", ValueError, "'uniform' or 'distance'"),
    (lambda: kf.KNNRegressor(n_neighbors=0), "xy", ValueError, "positive integer or 'cv'"),
    (lambda: kf.KNNRegressor(n_neighbors=1000), "xy", ValueError, "more than the n_samples"),
    (lambda: kf.KernelDensity(bandwidth="gcv"), "x", ValueError, "is a regression criterion"),
    (lambda: kf.KernelDensity(kernel="exp_dot"), "x", ValueError, "distance kernel"),
    (lambda: kf.KernelDensity(bandwidth="silverman"), "one", ValueError, "n_samples = 1"),
])
def test_estimator_errors(data, make, fit_args, exc, message):
    x, y = data
    if fit_args == "nan":
        x = x.copy()
        x[3, 0] = np.nan
    if fit_args == "inf":
        y = y.copy()
        y[0] = np.inf
    with pytest.raises(exc, match=message):
        if fit_args == "one":
            make().fit(x[:1])
        elif fit_args == "x":
            make().fit(x)
        else:
            make().fit(x, y)


def test_unfitted_and_wrong_shapes(data):
    x, y = data
    with pytest.raises(NotFittedError):
        kf.NadarayaWatsonRegressor().predict(x)
    m = kf.NadarayaWatsonRegressor(bandwidth=0.3).fit(x, y)
    with pytest.raises(ValueError, match="features"):
        m.predict(np.ones((3, 2)))
    with pytest.raises(ValueError, match="2D array"):
        m.predict(np.ones(3))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        kf.NadarayaWatsonRegressor().fit(x, y[:-1])


@pytest.mark.parametrize("make", [
    lambda: kf.NadarayaWatsonRegressor(bandwidth=0.2),
    lambda: kf.LocalLinearRegressor(bandwidth=0.3),
    lambda: kf.KNNRegressor(n_neighbors=7),
    lambda: kf.NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.4)],
    ids=["nw_binned", "ll_binned", "knn", "nw_epanechnikov_binned"])
def test_predict_reuses_the_fit_and_matches_the_stateless_path(make):
    """predict reads the fitted C++ smoother (its binned grid, its neighbor search): the same
    numbers as evaluating the smoother afresh, before and after a pickle round trip (which
    rebuilds it), and the route it ran is reported with its reason."""
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 6, (6000, 1))
    y = np.sin(2 * x[:, 0]) + 0.2 * rng.standard_normal(6000)
    xq = np.linspace(-0.5, 6.5, 301)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the compact kernel's far queries
        est = make().fit(x, y)
        fit, se = est.predict(xq, return_std=True)
    assert est.route_why_
    if not isinstance(est, kf.KNNRegressor):
        assert est.route_.startswith("binned"), est.route_
    spec = est._spec_fitted()
    ref, ref_se, defined, _ = kf._kernelformer.regression_predict(spec, x, y, xq,
                                                                  est.sigma_ ** 2)
    ref[~defined], ref_se[~defined] = np.nan, np.nan  # no training point within reach
    np.testing.assert_array_equal(fit, ref)
    np.testing.assert_allclose(se, ref_se, rtol=1e-12)
    again = pickle.loads(pickle.dumps(est))
    assert "_fit_obj" not in again.__dict__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(again.predict(xq), fit)
        np.testing.assert_array_equal(est.predict(xq), fit)  # a second predict, the same


def test_density_route_is_the_one_that_ran():
    """A compact kernel in two columns whose support is a small part of the data's box sums over
    a k-d tree (route_ says so, with its reason); a wide one over all pairs; pickling keeps the
    densities."""
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 4, (800, 2))
    at = rng.uniform(0.5, 3.5, (40, 2))
    tree = kf.KernelDensity(kernel="epanechnikov", bandwidth=0.2).fit(x)
    wide = kf.KernelDensity(kernel="epanechnikov", bandwidth=2.0).fit(x)
    assert tree.route_ == "exact (k-d tree over each support)", tree.route_
    assert wide.route_ == "exact (all pairs)" and "does not pay" in wide.route_why_
    d = tree.score_samples(at)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(tree)).score_samples(at), d)
