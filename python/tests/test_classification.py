"""The classifiers: scikit-learn's check_estimator (every check, default and main parameter
variants), agreement with the formula p_c(x) = sum_j K [y_j = c] / sum_j K and with
scikit-learn's KNeighborsClassifier, use in a Pipeline with GridSearchCV, pickling."""
import pickle

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import kernelformer as kf


@pytest.mark.parametrize("estimator", [kf.KernelClassifier(), kf.KNNClassifier(),
                                       kf.KernelClassifier(kernel="epanechnikov", bandwidth=2.0),
                                       kf.KNNClassifier(n_neighbors=5, weights="distance"),
                                       kf.KernelClassifier(criterion="accuracy")],
                         ids=lambda e: repr(e))
def test_check_estimator(estimator):
    check_estimator(estimator)


@pytest.fixture
def blobs():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (60, 2)), rng.normal(3, 1, (60, 2)), rng.normal((0, 4), 1, (60, 2))]
    y = np.repeat(np.array(["a", "b", "c"]), 60)
    return X, y


def test_probabilities_against_the_formula(blobs):
    X, y = blobs
    clf = kf.KernelClassifier(bandwidth=[0.7, 0.9]).fit(X, y)
    Xq = np.array([[0.5, 0.5], [2.5, 3.0], [10.0, -3.0]])
    u = (Xq[:, None, :] - X[None, :, :]) / np.array([0.7, 0.9])
    w = np.exp(-0.5 * (u ** 2).sum(-1))
    ref = np.stack([w[:, y == c].sum(1) for c in clf.classes_], 1) / w.sum(1, keepdims=True)
    got = clf.predict_proba(Xq)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.sum(1), 1.0)
    assert list(clf.predict(Xq)) == list(clf.classes_[ref.argmax(1)])
    auto = kf.KernelClassifier().fit(X, y)
    assert auto.bandwidth_.shape == (2,) and auto.loo_accuracy_ > 0.85


def test_knn_against_scikit_learn(blobs):
    X, y = blobs
    Xq = np.random.default_rng(1).normal(1.5, 2, (50, 2))
    ours = kf.KNNClassifier(n_neighbors=7).fit(X, y)
    theirs = KNeighborsClassifier(n_neighbors=7).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(Xq), theirs.predict_proba(Xq), atol=1e-12)
    cv = kf.KNNClassifier().fit(X, y)
    assert 1 <= cv.n_neighbors_ <= 50 and cv.criterion_curve_["value"].size > 0


def test_pipeline_grid_search_and_pickle(blobs):
    X, y = blobs
    pipe = make_pipeline(StandardScaler(), kf.KernelClassifier())
    gs = GridSearchCV(pipe, {"kernelclassifier__kernel": ["gaussian", "epanechnikov"]}, cv=3)
    gs.fit(X, y)
    assert gs.best_score_ > 0.85
    clf = kf.KernelClassifier().fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X[:10]), clf.predict_proba(X[:10]))


def test_errors(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="2 classes"):
        kf.KernelClassifier().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="Unknown label type"):
        kf.KernelClassifier().fit(X, np.linspace(0, 1, len(X)))
    with pytest.raises(ValueError, match="criterion"):
        kf.KernelClassifier(criterion="gini").fit(X, y)
    with pytest.raises(ValueError, match="distance kernel"):
        kf.KernelClassifier(kernel="exp_dot").fit(X, y)
    with pytest.raises(ValueError, match="n_neighbors"):
        kf.KNNClassifier(n_neighbors=1000).fit(X, y)


def test_threadpoolctl_sees_and_limits_the_library():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "kernelformer"]
    assert len(info) == 1 and info[0]["num_threads"] == kf.get_num_threads()
    before = kf.get_num_threads()
    with threadpoolctl.threadpool_limits(1):
        assert kf.get_num_threads() == 1
        X = np.random.default_rng(0).normal(size=(200, 2))
        kf.KernelClassifier().fit(X, (X[:, 0] > 0).astype(int))
    assert kf.get_num_threads() == before
    with threadpoolctl.threadpool_limits(1, user_api="kernelformer"):
        assert kf.get_num_threads() == 1
