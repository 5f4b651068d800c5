"""Saved smoothers and densities move both ways: `kf smooth --save` / `kf kde --save` files load
into fitted estimators (kernelformer.load_model) that predict what `kf predict --model` gives, and
kernelformer.save_model writes files `kf predict` reads with the estimator's own numbers."""
import os
import subprocess

import numpy as np
import pytest

import kernelformer as kf

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
KF = os.environ.get("KF_BIN", os.path.join(ROOT, "build", "dev", "kf"))
needs_kf = pytest.mark.skipif(not os.access(KF, os.X_OK),
                              reason=f"the kf program ({KF}; KF_BIN=...) is not built")


def run_kf(*args):
    r = subprocess.run([KF, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture
def data(tmp_path):
    r = np.random.default_rng(3)
    x = r.uniform(0, 10, 300)
    y = np.sin(x) + 0.3 * r.normal(size=300)
    path = tmp_path / "data.csv"
    np.savetxt(path, np.c_[x, y], delimiter=",", header="t,v", comments="", fmt="%.17g")
    return tmp_path, x, y


@needs_kf
@pytest.mark.parametrize("args", [["--method", "nw"], ["--method", "local-linear", "--kernel",
                                  "epanechnikov"], ["--method", "knn", "--k", "cv"]])
def test_kf_smooth_save_loads_as_an_estimator(data, args):
    d, x, y = data
    run_kf("smooth", str(d / "data.csv"), "--x", "t", "--y", "v", *args, "--save",
           str(d / "m.safetensors"), "--quiet")
    est = kf.load_model(d / "m.safetensors")
    run_kf("predict", "--model", str(d / "m.safetensors"), "--input", str(d / "data.csv"),
           "--out", str(d / "p.npy"), "--quiet")
    fit_se = np.load(d / "p.npy")
    fit, se = est.predict(x[:, None], return_std=True)
    assert np.allclose(fit, fit_se[:, 0], rtol=0, atol=1e-12)
    assert np.allclose(se, fit_se[:, 1], rtol=1e-10, atol=1e-14)
    assert est.model_info_["x_names"] == ["t"] and est.model_info_["y_name"] == "v"


@needs_kf
def test_kf_kde_save_loads_as_kernel_density(data):
    d, x, y = data
    np.savetxt(d / "pts.csv", np.c_[x, y], delimiter=",", header="t,v", comments="", fmt="%.17g")
    run_kf("kde", str(d / "pts.csv"), "--x", "t,v", "--bandwidth", "cv-ml", "--save",
           str(d / "k.safetensors"), "--quiet")
    est = kf.load_model(d / "k.safetensors")
    assert type(est).__name__ == "KernelDensity" and est.bandwidth_.shape == (2,)
    run_kf("predict", "--model", str(d / "k.safetensors"), "--input", str(d / "pts.csv"),
           "--out", str(d / "f.csv"), "--quiet")
    ref = np.loadtxt(d / "f.csv", delimiter=",", skiprows=1)[:, 2]
    assert np.allclose(np.exp(est.score_samples(np.c_[x, y])), ref, rtol=1e-12, atol=0)


@needs_kf
@pytest.mark.parametrize("make", [lambda: kf.LocalLinearRegressor(),
                                  lambda: kf.KNNRegressor(weights="distance"),
                                  lambda: kf.KernelDensity(bandwidth="isj")])
def test_save_model_is_read_by_kf_predict(data, make):
    d, x, y = data
    est = make()
    density = type(est).__name__ == "KernelDensity"
    est.fit(x[:, None]) if density else est.fit(x[:, None], y)
    kf.save_model(est, d / "py.safetensors", x_names=["t"])
    run_kf("predict", "--model", str(d / "py.safetensors"), "--input", str(d / "data.csv"),
           "--out", str(d / "p.csv"), "--quiet")
    got = np.loadtxt(d / "p.csv", delimiter=",", skiprows=1)[:, 1]
    want = np.exp(est.score_samples(x[:, None])) if density else est.predict(x[:, None])
    assert np.allclose(got, want, rtol=1e-12, atol=1e-300)
    again = kf.load_model(d / "py.safetensors")
    assert np.array_equal(again.predict(x[:5, None]) if not density else
                          again.score_samples(x[:5, None]),
                          est.predict(x[:5, None]) if not density else
                          est.score_samples(x[:5, None]))


def test_damaged_files_are_one_clear_error(tmp_path):
    x = np.linspace(0, 1, 20)[:, None]
    good = tmp_path / "good.safetensors"
    kf.save_model(kf.NadarayaWatsonRegressor(bandwidth=0.2).fit(x, x[:, 0]), good)
    raw = good.read_bytes()
    cases = {"short": raw[:5], "huge header": (1 << 40).to_bytes(8, "little") + raw[8:],
             "not json": raw[:8] + b"{" * (len(raw) - 8),
             "truncated": raw[:-16]}
    for name, content in cases.items():
        p = tmp_path / f"{name}.safetensors"
        p.write_bytes(content)
        with pytest.raises(ValueError, match=str(p).replace(".", r"\.")):
            kf.load_model(p)
    with pytest.raises(ValueError, match="one output"):
        kf.save_model(kf.NadarayaWatsonRegressor(bandwidth=0.2).fit(x, np.c_[x, x]),
                      tmp_path / "two.safetensors")
    assert not list(tmp_path.glob("*.tmp"))
