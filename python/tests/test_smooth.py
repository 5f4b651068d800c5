"""kernelformer.smooth against numpy references: softmax attention, every kernel's formula, masks,
batches, dtypes; zero-copy inputs, the GIL released, threads, and errors that never crash."""
import threading
import time

import numpy as np
import pytest

import kernelformer as kf
from _reference import kernel_matrix, mask_matrix, smooth_dense, softmax_attention

_kf = kf._kernelformer


def close(a, b, rtol, atol=0.0):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(23)


def test_version_and_catalog():
    assert kf.__version__.count(".") == 2
    names = [k.name for k in kf.kernels()]
    for n in ("gaussian", "laplacian", "cauchy", "rational_quadratic", "periodic",
              "locally_periodic", "boxcar", "epanechnikov", "biweight", "triweight", "tricube",
              "cosine", "uniform", "inverse_distance", "exp_dot", "linear", "polynomial"):
        assert n in names
    info = {k.name: k for k in kf.kernels()}
    assert info["gaussian"].formula.startswith("exp(-|q-k|^2 / (2 h^2))")
    assert info["exp_dot"].argument == "dot" and info["epanechnikov"].compact
    assert not info["gaussian"].compact and info["gaussian"].argument == "distance"


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_softmax_attention(rng, dtype, rtol):
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((13, 8), (21, 8), (21, 5)))
    out, w, lse = kf.smooth(q, k, v, return_weights=True, return_lse=True)
    ref_out, ref_w, ref_lse = softmax_attention(q, k, v)
    assert out.dtype == dtype and w.dtype == dtype and lse.dtype == dtype
    assert out.shape == (13, 5) and w.shape == (13, 21) and lse.shape == (13,)
    close(out, ref_out, rtol, atol=rtol)
    close(w, ref_w, rtol, atol=rtol)
    close(lse, ref_lse, rtol, atol=rtol)
    close(w.sum(1), np.ones(13), rtol)


KERNELS = [  # (text, formula name, parameters for the reference)
    ("gaussian:h=0.7", "gaussian", dict(h=0.7)),
    ("laplacian:h=0.9", "laplacian", dict(h=0.9)),
    ("cauchy:h=0.8", "cauchy", dict(h=0.8)),
    ("rational_quadratic:h=0.8,alpha=2", "rational_quadratic", dict(h=0.8, alpha=2.0)),
    ("periodic:h=1.2,period=3", "periodic", dict(h=1.2, period=3.0)),
    ("locally_periodic:h=1.5,period=2.5", "locally_periodic", dict(h=1.5, period=2.5)),
    ("boxcar:h=1.6", "boxcar", dict(h=1.6)),
    ("epanechnikov:h=1.6", "epanechnikov", dict(h=1.6)),
    ("biweight:h=1.7", "biweight", dict(h=1.7)),
    ("triweight:h=1.8", "triweight", dict(h=1.8)),
    ("tricube:h=1.9", "tricube", dict(h=1.9)),
    ("cosine:h=1.6", "cosine", dict(h=1.6)),
    ("uniform", "uniform", {}),
    ("inverse_distance", "inverse_distance", {}),
    ("exp_dot:t=1.5", "exp_dot", dict(t=1.5)),
    ("exp_dot", "exp_dot", {}),
    ("linear:c=0.5", "linear", dict(c=0.5)),
    ("polynomial:degree=3,c=1", "polynomial", dict(degree=3, c=1.0)),
    ("polynomial:degree=2,c=0.5,t=2", "polynomial", dict(degree=2, c=0.5, t=2.0)),
    ("rbf:h=0.7", "gaussian", dict(h=0.7)),
]


@pytest.mark.parametrize("text,name,params", KERNELS, ids=[k[0] for k in KERNELS])
def test_every_kernel_against_its_formula(rng, text, name, params):
    q, k, v = rng.standard_normal((11, 3)), rng.standard_normal((17, 3)), rng.standard_normal((17, 2))
    out, w, lse = kf.smooth(q, k, v, kernel=text, return_weights=True, return_lse=True)
    ref_out, ref_w, ref_lse = smooth_dense(kernel_matrix(name, q, k, **params), v)
    close(out, ref_out, 1e-10, atol=1e-12)
    close(w, ref_w, 1e-10, atol=1e-12)
    close(lse, ref_lse, 1e-10, atol=1e-12)


def test_bandwidth_and_temperature_arguments(rng):
    q, k, v = rng.standard_normal((6, 2)), rng.standard_normal((9, 2)), rng.standard_normal(9)
    close(kf.smooth(q, k, v, kernel="gaussian", bandwidth=0.4),
          kf.smooth(q, k, v, kernel="gaussian:h=0.4"), 0)
    close(kf.smooth(q, k, v, kernel="exp_dot", temperature=0.5),
          smooth_dense(kernel_matrix("exp_dot", q, k, t=0.5), v)[0], 1e-12)
    # one bandwidth per column: q and k divided column by column
    h = np.array([0.5, 2.0])
    close(kf.smooth(q, k, v, kernel="gaussian", bandwidth=h),
          kf.smooth(q / h, k / h, v, kernel="gaussian:h=1"), 1e-12)


def test_regression_on_a_line(rng):
    x = np.sort(rng.uniform(0, 6, 250))
    y = np.sin(x) + 0.1 * rng.standard_normal(250)
    xq = np.linspace(0, 6, 7)
    fit, w = kf.smooth(xq, x, y, kernel="gaussian", bandwidth=0.3, return_weights=True)
    assert fit.shape == (7,) and w.shape == (7, 250)
    ref_fit, ref_w, _ = smooth_dense(kernel_matrix("gaussian", xq[:, None], x[:, None], h=0.3),
                                     y[:, None])
    close(fit, ref_fit[:, 0], 1e-12)
    # many keys for one feature: the weights come from the reference's row loop (below, from
    # the primitive with identity values): both equal the formula
    close(w, ref_w, 1e-12, atol=1e-15)
    close(kf.smooth(xq, x[:100], y[:100], kernel="gaussian", bandwidth=0.3,
                    return_weights=True)[1],
          smooth_dense(kernel_matrix("gaussian", xq[:, None], x[:100, None], h=0.3),
                       y[:100, None])[1], 1e-12, atol=1e-15)


def test_product_kernel(rng):
    q, k, v = rng.standard_normal((7, 5)), rng.standard_normal((10, 5)), rng.standard_normal((10, 3))
    out = kf.smooth(q, k, v, kernel="exp_dot*gaussian:h=2", split=3)
    K = kernel_matrix("exp_dot", q[:, :3], k[:, :3]) * kernel_matrix("gaussian", q[:, 3:],
                                                                       k[:, 3:], h=2.0)
    close(out, smooth_dense(K, v)[0], 1e-11)
    spec = kf.make_kernel("exp_dot*gaussian:h=2", split=3)
    close(kf.smooth(q, k, v, kernel=spec), out, 0)


@pytest.mark.parametrize("text", ["causal", "causal:2", "window:3", "window:1,4",
                                  "causal&window:3", "padding:6"])
def test_masks(rng, text):
    q, k, v = rng.standard_normal((12, 4)), rng.standard_normal((12, 4)), rng.standard_normal((12, 3))
    allowed = mask_matrix(text, 12, 12)
    out, w = kf.smooth(q, k, v, mask=text, return_weights=True)
    ref_out, ref_w, _ = softmax_attention(q, k, v, allowed)
    close(out, ref_out, 1e-12, atol=1e-14)
    close(w, ref_w, 1e-12, atol=1e-14)
    # the same mask as a boolean matrix, and as a Mask object
    close(kf.smooth(q, k, v, mask=allowed), out, 1e-14, atol=1e-15)
    close(kf.smooth(q, k, v, mask=kf.Mask.parse(text)), out, 0)


def test_knn_mask_is_knn_regression(rng):
    x, y = rng.uniform(0, 1, (50, 2)), rng.standard_normal((50, 1))
    xq = rng.uniform(0, 1, (8, 2))
    out = kf.smooth(xq, x, y, kernel="uniform", mask="knn:5")
    r2 = ((xq[:, None] - x[None]) ** 2).sum(-1)
    close(out, smooth_dense(np.ones_like(r2), y, mask_matrix("knn:5", 8, 50, r2))[0], 1e-12)


def test_batched_leading_dimensions(rng):
    q = rng.standard_normal((2, 3, 9, 4))
    k, v = rng.standard_normal((2, 3, 11, 4)), rng.standard_normal((2, 3, 11, 6))
    out, w, lse = kf.smooth(q, k, v, mask="causal:1", return_weights=True, return_lse=True)
    assert out.shape == (2, 3, 9, 6) and w.shape == (2, 3, 9, 11) and lse.shape == (2, 3, 9)
    ref_out, ref_w, ref_lse = softmax_attention(q, k, v, mask_matrix("causal:1", 9, 11))
    close(out, ref_out, 1e-12, atol=1e-14)
    close(w, ref_w, 1e-12, atol=1e-14)
    close(lse, ref_lse, 1e-12)
    # a boolean mask per batch item
    allowed = rng.uniform(size=(2, 3, 9, 11)) < 0.6
    allowed[..., 0] = True
    close(kf.smooth(q, k, v, mask=allowed), softmax_attention(q, k, v, allowed)[0], 1e-12,
          atol=1e-14)


def test_thread_count_does_not_change_results(rng):
    q, k, v = (rng.standard_normal((4, 600, 16)).astype(np.float32) for _ in range(3))
    one = kf.smooth(q, k, v, threads=1)
    two = kf.smooth(q, k, v, threads=2)
    np.testing.assert_array_equal(one, two)
    single = kf.smooth(q[0], k[0], v[0], threads=2)
    np.testing.assert_array_equal(single, one[0])
    before = kf.get_num_threads()
    try:
        kf.set_num_threads(1)
        assert kf.get_num_threads() == 1
        np.testing.assert_array_equal(kf.smooth(q, k, v), one)
    finally:
        kf.set_num_threads(0)
    assert kf.get_num_threads() == before


def test_dtypes():
    q = np.arange(12, dtype=np.int64).reshape(4, 3) * 0.1
    k32 = np.ones((5, 3), np.float32)
    assert kf.smooth(q.astype(np.float32), k32, k32).dtype == np.float32
    assert kf.smooth(q, k32, k32).dtype == np.float64  # mixed: float64, as kf attend
    assert kf.smooth(np.arange(12).reshape(4, 3), np.arange(15).reshape(5, 3),
                     np.ones((5, 2), np.int32)).dtype == np.float64
    assert kf.smooth(q.astype(np.float16), k32, k32).dtype == np.float64
    assert kf.smooth(q.tolist(), k32.tolist(), k32.tolist()).shape == (4, 3)


def test_zero_copy_for_c_contiguous_inputs(rng):
    q, k, v = rng.standard_normal((30, 4)), rng.standard_normal((40, 4)), rng.standard_normal((40, 2))
    for arrays in ((q, k, v), tuple(a.astype(np.float32) for a in (q, k, v))):
        lines = [np.ascontiguousarray(a[:, 0]) for a in arrays]
        before = _kf.input_copies()
        kf.smooth(*arrays)
        kf.smooth(*lines, kernel="gaussian")  # 1-D: a (n, 1) view, no copy
        kf.smooth(*(a[None] for a in arrays))  # batched views
        assert _kf.input_copies() == before  # used in place
    ro = k.copy()
    ro.flags.writeable = False
    before = _kf.input_copies()
    kf.smooth(q, ro, v)
    assert _kf.input_copies() == before  # read-only is fine
    # other layouts and dtypes are converted once each
    before = _kf.input_copies()
    kf.smooth(np.asfortranarray(q), k[::1], v)
    assert _kf.input_copies() == before + 1
    kf.smooth(q, k.astype(np.float32), v)  # mixed: the float32 one is converted
    assert _kf.input_copies() == before + 2
    kf.smooth(q[:, ::2], k[:, ::2], v)  # strided views
    assert _kf.input_copies() == before + 4
    big_endian = q.astype(">f8")
    out_be = kf.smooth(big_endian, k, v)
    assert _kf.input_copies() == before + 5
    close(out_be, kf.smooth(q, k, v), 0)


def test_gil_is_released(rng):
    """A long call in one thread leaves the interpreter free: the main thread keeps running."""
    x = rng.uniform(0, 6, 200_000)
    xq = rng.uniform(0, 6, 1500)
    y = np.sin(x)
    span = {}

    def work():
        span["start"] = time.perf_counter()
        kf.smooth(xq, x, y, kernel="gaussian", bandwidth=0.3, threads=1)
        span["end"] = time.perf_counter()

    t = threading.Thread(target=work)
    ticks = []
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
    t.join()
    duration = span["end"] - span["start"]
    assert duration > 0.05, "the call is too short to tell"
    inside = [s for s in ticks if span["start"] + 0.2 * duration < s < span["end"] - 0.2 * duration]
    # Holding the GIL, the C++ call would leave no tick in the middle 60% of its duration.
    assert len(inside) > 100


def test_empty_rows_give_zero_and_minus_infinite_lse():
    q = np.array([[0.0], [100.0]])
    k = np.array([[0.0], [1.0]])
    v = np.array([[1.0], [3.0]])
    out, lse = kf.smooth(q, k, v, kernel="epanechnikov:h=2", return_lse=True)
    close(out[:, 0], [(1 * 1 + 3 * 0.75) / 1.75, 0.0], 1e-14)
    assert lse[1] == -np.inf


@pytest.mark.parametrize("call,exc,message", [
    (lambda q, k, v: kf.smooth(q, k[:, :2], v), ValueError, "queries have d = 3 columns"),
    (lambda q, k, v: kf.smooth(q, k, v[:-1]), ValueError, "values have 4 rows but there are 5 keys"),
    (lambda q, k, v: kf.smooth(q, k[:0], v[:0]), ValueError, "at least one key"),
    (lambda q, k, v: kf.smooth(q * np.nan, k, v), ValueError, "non-finite value at row 0"),
    (lambda q, k, v: kf.smooth(q, k, v * np.inf), ValueError, "values has a non-finite"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gausian"), ValueError, "unknown kernel 'gausian'"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gaussian:h=-1"), ValueError, "gaussian"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gaussian:x=1"), ValueError, "x"),
    (lambda q, k, v: kf.smooth(q, k, v, mask="causal&bogus"), ValueError, "unknown mask 'bogus'"),
    (lambda q, k, v: kf.smooth(q, k, v, mask="window"), ValueError, "needs a value"),
    (lambda q, k, v: kf.smooth(q, k, v, mask="padding:9"), ValueError, "outside 0..5"),
    (lambda q, k, v: kf.smooth(q, k, v, mask=np.ones((2, 2), bool)), ValueError, "mask matrix"),
    (lambda q, k, v: kf.smooth(q, k, v, mask=np.ones((4, 5))), TypeError, "boolean"),
    (lambda q, k, v: kf.smooth(q, k, v, bandwidth=0.5), ValueError, "exp_dot takes temperature"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gaussian", temperature=2), ValueError,
     "temperature applies to dot kernels"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gaussian", bandwidth=-1), ValueError, "positive"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gaussian", bandwidth=[1, 2]), ValueError,
     "bandwidth_per_dim has 2 entries but d = 3"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gaussian", bandwidth="cv"), TypeError,
     "estimators"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="exp_dot*gaussian"), ValueError, "give split="),
    (lambda q, k, v: kf.smooth(q, k, v, kernel="gaussian", split=1), ValueError, "product"),
    (lambda q, k, v: kf.smooth(q, k, v, kernel=3), TypeError, "kernel must be a string"),
    (lambda q, k, v: kf.smooth(q.astype(complex), k, v), TypeError, "complex128"),
    (lambda q, k, v: kf.smooth(q > 0, k, v), TypeError, "bool"),
    (lambda q, k, v: kf.smooth(q.astype(object), k, v), TypeError, "object"),
    (lambda q, k, v: kf.smooth(np.array([["a", "b", "c"]] * 4), k, v), TypeError, "dtype"),
    (lambda q, k, v: kf.smooth(q[None], k, v), ValueError, "leading dimensions must match"),
    (lambda q, k, v: kf.smooth(np.float64(1.0), k, v), ValueError, "at least 2 dimensions"),
    (lambda q, k, v: kf.smooth(q * 1e300, k * 1e300, v), ValueError, "overflow"),
])
def test_errors_are_exceptions_with_clear_messages(rng, call, exc, message):
    q, k, v = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    with pytest.raises(exc, match=message):
        call(q, k, v)


def test_kernel_and_mask_objects_round_trip():
    import pickle
    k = kf.make_kernel("periodic", bandwidth=0.5)
    assert k.format().startswith("periodic:h=0.5") and k.param == 0.5
    assert pickle.loads(pickle.dumps(k)).format() == k.format()
    m = kf.Mask.causal() & kf.Mask.window(3, 3)
    assert m.describe() == kf.Mask.parse("causal&window:3").describe()
    assert "causal" in repr(m)


def test_public_api_is_documented():
    import inspect
    for name in kf.__all__:
        obj = getattr(kf, name)
        if name == "__version__":
            continue
        assert inspect.getdoc(obj), name
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member):
                    assert inspect.getdoc(getattr(obj, attr)), f"{name}.{attr}"
    assert "(n, d)" in kf.smooth.__doc__ and "(m, dv)" in kf.smooth.__doc__
    for est in ("NadarayaWatsonRegressor", "LocalLinearRegressor", "KNNRegressor",
                "KernelDensity"):
        doc = getattr(kf, est).__doc__
        assert "Shapes" in doc and "n_features" in doc, est


def test_mask_pickles_as_its_text_and_refuses_what_has_none():
    """A Mask pickles (and deep-copies) as the text Mask.parse reads, exactly (a radius to the last
    digit); per-row padding and user matrices have no text form and are refused with the way to
    rebuild them, never turned into another mask."""
    import copy
    import pickle
    for m in [kf.Mask.causal() & kf.Mask.window(3, 3), kf.Mask.radius(0.1234567890123),
              kf.Mask.parse("causal:2|window:1,4"), kf.Mask.parse("radius:2.5&topk:3"),
              kf.Mask.none(), kf.Mask.key_padding([5])]:
        back = pickle.loads(pickle.dumps(m))
        assert back.describe() == m.describe()
        assert copy.deepcopy(m).describe() == m.describe()
    q = np.random.default_rng(0).normal(size=(6, 2))
    v = np.arange(6.0)[:, None]
    r = kf.Mask.radius(0.9876543210987)
    np.testing.assert_array_equal(kf.smooth(q, q, v, mask=pickle.loads(pickle.dumps(r))),
                                  kf.smooth(q, q, v, mask=r))
    for m in [kf.Mask.key_padding([3, 4, 5]), kf.Mask.matrix(np.eye(3, dtype=bool))]:
        with pytest.raises(TypeError, match="no text form"):
            pickle.dumps(m)
