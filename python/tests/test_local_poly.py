"""LocalPolynomialRegressor against R's weighted least squares (the fixture of
python/make_fixture_local_poly.py: R's lm-equivalent solve at every degree and derivative), its
standard errors, scikit-learn's estimator checks, and the CLI's numbers."""
import json
import os
import pickle

import numpy as np
import pytest

import kernelformer as kf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures",
                       "local_poly_cases.json")


def cases():
    with open(FIXTURE) as f:
        return json.load(f)["cases"]


@pytest.mark.parametrize("case", cases(), ids=lambda c: c["name"])
def test_equals_r_weighted_least_squares(case):
    x, y, h = np.array(case["x"]), np.array(case["y"]), case["h"]
    xq = np.array(case["xq"])
    for f in case["fits"]:
        est = kf.LocalPolynomialRegressor(degree=f["degree"], derivative=f["derivative"],
                                          bandwidth=h, exact=True).fit(x[:, None], y)
        q = f["query"]
        defined = np.array(q["defined"], dtype=bool)
        fit, se = est.predict(xq[defined, None], return_std=True)
        ref = np.array(q["fit"], dtype=float)[defined]
        scale = max(1.0, np.abs(ref).max())
        assert np.abs(fit - ref).max() <= 1e-9 * scale, (f["degree"], f["derivative"])
        ref_se = est.sigma_ * np.sqrt(np.array(q["sum_l2"], dtype=float)[defined])
        assert np.allclose(se, ref_se, rtol=1e-8, atol=1e-12)


def test_degree_one_is_local_linear_and_zero_is_nadaraya_watson():
    r = np.random.default_rng(0)
    x = r.uniform(0, 10, 300)
    y = np.sin(x) + 0.2 * r.normal(size=300)
    X, q = x[:, None], np.linspace(0.5, 9.5, 30)[:, None]
    for degree, other in ((0, kf.NadarayaWatsonRegressor), (1, kf.LocalLinearRegressor)):
        lp = kf.LocalPolynomialRegressor(degree=degree, bandwidth=0.4, exact=True).fit(X, y)
        ref = other(bandwidth=0.4, exact=True).fit(X, y)
        assert np.allclose(lp.predict(q), ref.predict(q), rtol=0, atol=1e-10)
        assert lp.df_ == pytest.approx(ref.df_, rel=1e-10)
        assert lp.loo_cv_ == pytest.approx(ref.loo_cv_, rel=1e-9)


def test_derivative_of_a_sine_and_the_binned_route():
    r = np.random.default_rng(1)
    x = r.uniform(0, 2 * np.pi, 20000)
    y = np.sin(x) + 0.1 * r.normal(size=20000)
    q = np.linspace(0.5, 5.5, 11)[:, None]
    binned = kf.LocalPolynomialRegressor(degree=2, derivative=1).fit(x[:, None], y)
    assert binned.route_.startswith("binned")
    d, se = binned.predict(q, return_std=True)
    assert np.abs(d - np.cos(q[:, 0])).max() < 6 * se.max()
    exact = kf.LocalPolynomialRegressor(degree=2, derivative=1, bandwidth=binned.bandwidth_,
                                        exact=True).fit(x[:, None], y)
    assert np.allclose(exact.predict(q), d, atol=1e-4)
    assert exact.df_ == pytest.approx(binned.df_, rel=1e-3)


def test_pickles_and_clear_errors():
    x = np.linspace(0, 1, 40)
    est = kf.LocalPolynomialRegressor(degree=3, bandwidth=0.2).fit(x[:, None], x ** 2)
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict([[0.3]]), est.predict([[0.3]]))
    with pytest.raises(ValueError, match="0..3"):
        kf.LocalPolynomialRegressor(degree=4).fit(x[:, None], x)
    with pytest.raises(ValueError, match="derivative"):
        kf.LocalPolynomialRegressor(degree=1, derivative=2).fit(x[:, None], x)
    with pytest.raises(ValueError, match="one feature"):
        kf.LocalPolynomialRegressor().fit(np.c_[x, x], x)
    with pytest.warns(RuntimeWarning, match="NaN"):
        far = kf.LocalPolynomialRegressor(degree=2, kernel="epanechnikov", bandwidth=0.1)
        assert np.isnan(far.fit(x[:, None], x).predict([[5.0]])[0])


def test_in_scikit_learns_model_selection():
    """One feature only, so check_estimator's multi-feature checks do not apply (as for
    LowessRegressor); the conventions that do: parameters, clone, GridSearchCV in a Pipeline."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    est = kf.LocalPolynomialRegressor(degree=3, kernel="epanechnikov")
    assert clone(est).get_params() == est.get_params()
    r = np.random.default_rng(2)
    x = r.uniform(-2, 2, 300)
    y = x ** 3 - x + 0.1 * r.normal(size=300)
    search = GridSearchCV(make_pipeline(StandardScaler(), kf.LocalPolynomialRegressor()),
                          {"localpolynomialregressor__degree": [0, 1, 2, 3]},
                          cv=KFold(5, shuffle=True, random_state=0)).fit(x[:, None], y)
    assert search.best_params_["localpolynomialregressor__degree"] in (2, 3)
    assert search.best_score_ > 0.98
