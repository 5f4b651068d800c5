"""The ecosystem's conventions: runnable docstring examples and type hints on every public
function, the package marked typed (PEP 561), multi-output y for the regressors (as
MultiOutputRegressor), scikit-learn's own KernelDensity bandwidth rules by name, and what dtype
comes out for float32 input."""
import doctest
import importlib
import pickle
import typing
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernelformer as kf

_MODULES = ("kernelformer._primitive", "kernelformer.regression", "kernelformer.density",
            "kernelformer.classification", "kernelformer.torch", "kernelformer.local_poly",
            "kernelformer.mixed", "kernelformer.saved")


def _public_objects():
    import kernelformer.torch as kft
    names = [n for n in kf.__all__ if n not in ("__version__", "Kernel", "Mask", "KernelInfo",
                                                 "SearchBoundaryWarning")]
    out = [(n, getattr(kf, n)) for n in names]
    out += [(f"torch.{n}", getattr(kft, n)) for n in ("smooth", "smooth_weights",
                                                       "KernelAttention")]
    return out


@pytest.mark.parametrize("module", _MODULES)
def test_docstring_examples_run(module):
    m = importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name,obj", _public_objects(), ids=lambda v: v if isinstance(v, str)
                         else "")
def test_every_public_function_has_an_example_and_hints(name, obj):
    assert ">>>" in (obj.__doc__ or ""), f"{name}: no runnable example in its docstring"
    if isinstance(obj, type):
        funcs = [getattr(obj, m) for m in ("fit", "predict", "predict_proba", "score_samples",
                                           "score", "sample") if hasattr(obj, m)]
    else:
        funcs = [obj]
    for f in funcs:
        if getattr(f, "__module__", "").startswith("kernelformer"):
            hints = typing.get_type_hints(f)  # resolves every annotation
            assert "return" in hints, f"{name}.{f.__name__}: no return annotation"


def test_package_is_marked_typed():
    root = Path(kf.__file__).parent
    assert (root / "py.typed").exists()
    assert (root / "_kernelformer.pyi").exists()


@pytest.fixture
def two_outputs():
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(300, 1))
    Y = np.column_stack([np.sin(2 * X[:, 0]), X[:, 0] ** 2]) + 0.1 * rng.normal(size=(300, 2))
    return X, Y


@pytest.mark.parametrize("make", [lambda: kf.NadarayaWatsonRegressor(),
                                  lambda: kf.LocalLinearRegressor(bandwidth="gcv"),
                                  lambda: kf.KNNRegressor()])
def test_multi_output_is_one_smoother_per_column(two_outputs, make):
    X, Y = two_outputs
    both = make().fit(X, Y)
    assert both.n_outputs_ == 2 and len(both.estimators_) == 2
    Xq = np.linspace(-1.5, 1.5, 9)[:, None]
    pred, se = both.predict(Xq, return_std=True)
    assert pred.shape == se.shape == (9, 2)
    assert both.fitted_values_.shape == (300, 2) and both.df_.shape == (2,)
    for t in range(2):
        one = make().fit(X, Y[:, t])
        np.testing.assert_allclose(pred[:, t], one.predict(Xq), rtol=0, atol=1e-12)
        assert both.df_[t] == pytest.approx(one.df_, abs=1e-12)
    again = pickle.loads(pickle.dumps(both))
    np.testing.assert_allclose(again.predict(Xq), pred, rtol=0, atol=1e-12)
    # The columns' own bandwidths: the smooth sine and the parabola need different ones.
    if hasattr(both, "bandwidth_"):
        assert both.bandwidth_.shape == (2, 1)


def test_multi_output_with_a_fixed_bandwidth_is_the_smoother_applied_to_each_column(two_outputs):
    X, Y = two_outputs
    Xq = np.linspace(-1.5, 1.5, 7)[:, None]
    pred = kf.NadarayaWatsonRegressor(bandwidth=0.2).fit(X, Y).predict(Xq)
    direct = kf.smooth(Xq, X, Y, kernel="gaussian", bandwidth=0.2)
    np.testing.assert_allclose(pred, direct, rtol=1e-12, atol=1e-12)
    one_column = kf.NadarayaWatsonRegressor(bandwidth=0.2).fit(X, Y[:, :1]).predict(Xq)
    assert one_column.shape == (7, 1)  # a 2-D y of one column stays 2-D, as in scikit-learn


@pytest.mark.parametrize("rule,theirs", [("scott-sklearn", "scott"),
                                         ("silverman-sklearn", "silverman")])
@pytest.mark.parametrize("d", [1, 2])
def test_kernel_density_takes_scikit_learns_rules_by_name(rule, theirs, d):
    from sklearn.neighbors import KernelDensity as SkKDE
    X = np.random.default_rng(d).normal(size=(400, d))
    ours = kf.KernelDensity(bandwidth=rule).fit(X)
    ref = SkKDE(bandwidth=theirs).fit(X)
    np.testing.assert_allclose(ours.bandwidth_, np.full(d, ref.bandwidth_), rtol=1e-14)
    Xq = np.random.default_rng(9).normal(size=(20, d))
    np.testing.assert_allclose(ours.score_samples(Xq), ref.score_samples(Xq), rtol=1e-10)
    assert ours.criterion_name_ == rule
    # statsmodels' scott (ours by default) scales by the spread; scikit-learn's does not.
    scaled = kf.KernelDensity(bandwidth="scott").fit(3 * X).bandwidth_
    assert np.all(scaled > 2 * kf.KernelDensity(bandwidth=rule).fit(3 * X).bandwidth_)


def test_scikit_learn_rules_are_for_density_only():
    X = np.random.default_rng(0).normal(size=(50, 1))
    with pytest.raises(ValueError, match="scikit-learn's KernelDensity rule"):
        kf.NadarayaWatsonRegressor(bandwidth="scott-sklearn").fit(X, X[:, 0])


def test_float32_input():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = X[:, 0] - X[:, 1]
    # The primitive computes in float32 when all of q, k, v are float32, and says so in its dtype.
    out = kf.smooth(X.astype(np.float32), X.astype(np.float32), y.astype(np.float32)[:, None],
                    kernel="gaussian", bandwidth=0.5)
    assert out.dtype == np.float32
    # The estimators compute in float64 (their criteria and hat diagonals need it): float32 input
    # is converted once and the results are float64, as scikit-learn's own regressors and
    # KernelDensity return; the numbers are those of the float64 input.
    for make in (lambda: kf.NadarayaWatsonRegressor(bandwidth=0.5), lambda: kf.KNNRegressor(5)):
        p32 = make().fit(X.astype(np.float32), y.astype(np.float32)).predict(
            X[:5].astype(np.float32))
        p64 = make().fit(X.astype(np.float32).astype(np.float64),
                         y.astype(np.float32).astype(np.float64)).predict(
            X[:5].astype(np.float32).astype(np.float64))
        assert p32.dtype == np.float64
        np.testing.assert_array_equal(p32, p64)
    dens = kf.KernelDensity(bandwidth=0.5).fit(X.astype(np.float32)).score_samples(
        X[:3].astype(np.float32))
    assert dens.dtype == np.float64
