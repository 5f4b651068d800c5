"""Saved smoothers and densities: the files `kf smooth --save` and `kf kde --save` write, read
into fitted scikit-learn estimators, and the same files written from fitted estimators, so a
model moves between the command line and Python both ways (`kf predict --model` reads either).

The format is safetensors (an 8-byte little-endian header length, a JSON header whose
__metadata__ holds the fit's settings, then the tensors' bytes): tensor "x" (float64, n x d) and,
for a smoother, "y" (float64, n); metadata as kernelformer/model/saved_smoother.hpp and
saved_density.hpp describe. The safetensors library is not packaged for Debian bookworm; the
header is read first and bounded, then exactly the bytes it describes.

    >>> import numpy as np, os, tempfile, kernelformer as kf
    >>> x = np.linspace(0, 1, 50)[:, None]; y = np.sin(3 * x[:, 0])
    >>> path = os.path.join(tempfile.mkdtemp(), "fit.safetensors")
    >>> kf.save_model(kf.NadarayaWatsonRegressor(bandwidth=0.1).fit(x, y), path)
    >>> again = kf.load_model(path)
    >>> bool(np.allclose(again.predict([[0.5]]), np.sin(1.5), atol=0.05))
    True
"""
from __future__ import annotations

import json
import os
import struct
import tempfile
from typing import Sequence

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["load_model", "save_model"]

_MAX_HEADER = 1 << 20  # bytes: a saved smoother's header is well under 4 KiB


def _fail(path, what):
    raise ValueError(f"{path}: {what}")


def _read(path):
    """(metadata, {name: float64 array}) with every header field checked against the file."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            _fail(path, "not a safetensors file (shorter than its 8-byte header length)")
        (n,) = struct.unpack("<Q", head)
        if n > _MAX_HEADER or 8 + n > size:
            _fail(path, f"header length {n} is beyond the file or above {_MAX_HEADER} bytes")
        try:
            header = json.loads(f.read(n))
        except ValueError:
            _fail(path, "the header is not JSON")
        meta = header.pop("__metadata__", {})
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            _fail(path, "__metadata__ must map names to strings")
        tensors = {}
        for name, e in header.items():
            try:
                dtype, shape, (b0, b1) = e["dtype"], [int(s) for s in e["shape"]], e["data_offsets"]
            except (KeyError, TypeError, ValueError):
                _fail(path, f"tensor '{name}' has no dtype, shape or data_offsets")
            count = int(np.prod(shape, dtype=np.int64))
            if dtype != "F64" or min(shape, default=1) < 0 or b1 - b0 != 8 * count or \
                    not 0 <= b0 <= b1 <= size - 8 - n:
                _fail(path, f"tensor '{name}' is not F64 with bytes matching its shape {shape}")
            f.seek(8 + n + b0)
            tensors[name] = np.frombuffer(f.read(b1 - b0), dtype="<f8").reshape(shape).copy()
    return meta, tensors


def _field(path, meta, key):
    if key not in meta:
        _fail(path, f"metadata '{key}' is missing")
    return meta[key]


def _bandwidths(path, text):
    try:
        h = [float(v) for v in text.split(",")]
    except ValueError:
        _fail(path, f"metadata 'bandwidth' is '{text[:60]}' (expected numbers)")
    if not h or not all(np.isfinite(v) and v > 0 for v in h):
        _fail(path, f"metadata 'bandwidth' is '{text[:60]}' (expected positive numbers)")
    return h


def load_model(path: str) -> BaseEstimator:
    """A fitted estimator from a file of `kf smooth --save` (NadarayaWatsonRegressor,
    LocalLinearRegressor or KNNRegressor) or `kf kde --save` (KernelDensity), refitted on its
    data at the saved bandwidth (or k): its predictions are what `kf predict --model` gives.
    `model_info_` holds the file's column names, criterion, route and command.

    >>> import numpy as np, os, tempfile, kernelformer as kf
    >>> path = os.path.join(tempfile.mkdtemp(), "kde.safetensors")
    >>> kf.save_model(kf.KernelDensity(bandwidth=0.5).fit(np.c_[[0.0, 1.0, 2.0]]), path)
    >>> kf.load_model(path).bandwidth_.tolist()
    [0.5]
    """
    from .density import KernelDensity
    from .regression import KNNRegressor, LocalLinearRegressor, NadarayaWatsonRegressor
    path = os.fspath(path)
    meta, t = _read(path)
    kind = meta.get("kind", "?")
    x = t.get("x")
    if x is None or x.ndim != 2 or x.shape[0] < 1:
        _fail(path, "tensor 'x' (n x d) is missing")
    exact = _field(path, meta, "exact") == "true"
    kernel = _field(path, meta, "kernel")
    if kind == "smoother":
        y = t.get("y")
        if y is None or y.shape != (x.shape[0],):
            _fail(path, "tensor 'y' (n) is missing or does not match 'x'")
        method = _field(path, meta, "method")
        if kernel.startswith("rff"):
            _fail(path, "a smoother with random Fourier features (kernel rff): the Python "
                  "regressors take distance kernels; use kf predict --model")
        if method == "knn":
            est = KNNRegressor(n_neighbors=int(_field(path, meta, "k")),
                               weights=_field(path, meta, "knn_weights"))
        elif method in ("nw", "local_linear"):
            cls = NadarayaWatsonRegressor if method == "nw" else LocalLinearRegressor
            est = cls(kernel=kernel, bandwidth=_bandwidths(path, _field(path, meta, "bandwidth")),
                      exact=exact)
        else:
            _fail(path, f"metadata 'method' is '{method[:40]}' (nw, local_linear or knn)")
        est.fit(x, y)
    elif kind == "density":
        est = KernelDensity(kernel=kernel, exact=exact,
                            bandwidth=_bandwidths(path, _field(path, meta, "bandwidth")))
        est.fit(x)
    else:
        _fail(path, f"model kind '{kind[:40]}' is not a smoother or a density (kf smooth --save, "
              "kf kde --save)")
    est.model_info_ = {k: meta[k] for k in ("x_names", "y_name", "criterion", "route",
                                            "trained_by") if k in meta}
    if "x_names" in est.model_info_:
        est.model_info_["x_names"] = json.loads(est.model_info_["x_names"])
    return est


def _kernel_text(est):
    from ._primitive import make_kernel
    return make_kernel(est.kernel).format()


def save_model(est, path: str, x_names: Sequence[str] = None, y_name: str = "y") -> None:
    """Writes a fitted NadarayaWatsonRegressor, LocalLinearRegressor, KNNRegressor (one output)
    or KernelDensity as `kf smooth --save` / `kf kde --save` would: `kf predict --model PATH`
    and load_model read it. Written to a temporary file beside PATH, then renamed.

    >>> import numpy as np, os, tempfile, kernelformer as kf
    >>> x = np.linspace(0, 1, 20)[:, None]
    >>> path = os.path.join(tempfile.mkdtemp(), "nw.safetensors")
    >>> kf.save_model(kf.NadarayaWatsonRegressor(bandwidth=0.2).fit(x, x[:, 0]), path, ["t"])
    >>> kf.load_model(path).model_info_["x_names"]
    ['t']
    """
    from .density import KernelDensity
    from .regression import KNNRegressor, LocalLinearRegressor, NadarayaWatsonRegressor
    if getattr(est, "estimators_", None) is not None:
        raise ValueError("save_model: one output at a time (save each of estimators_)")
    X = getattr(est, "_fit_X", None)
    if X is None:
        raise ValueError(f"save_model: {type(est).__name__} is not fitted")
    d = X.shape[1]
    names = list(x_names) if x_names is not None else [f"x{j}" if d > 1 else "x"
                                                       for j in range(d)]
    if len(names) != d:
        raise ValueError(f"save_model: {len(names)} x_names for {d} features")
    meta = {"x_names": json.dumps(names, separators=(",", ":")), "trained_by": "kernelformer "
            f"{type(est).__name__} (Python)", "criterion": getattr(est, "criterion_name_", "")}
    tensors = {"x": np.ascontiguousarray(X, dtype="<f8")}
    if isinstance(est, KernelDensity):
        meta.update(kind="density", kernel=_kernel_text(est), exact=str(bool(est.exact)).lower(),
                    bandwidth=",".join(repr(float(v)) for v in est.bandwidth_))
    elif isinstance(est, (NadarayaWatsonRegressor, LocalLinearRegressor, KNNRegressor)):
        knn = isinstance(est, KNNRegressor)
        meta.update(kind="smoother", y_name=y_name,
                    method="knn" if knn else est._method,
                    kernel="uniform" if knn else _kernel_text(est),
                    exact="false" if knn else str(bool(est.exact)).lower(),
                    bandwidth="1" if knn else ",".join(repr(float(v)) for v in est.bandwidth_),
                    k=str(int(est.n_neighbors_)) if knn else "10",
                    knn_weights=est.weights if knn else "uniform")
        tensors["y"] = np.ascontiguousarray(est._fit_y, dtype="<f8")
    else:
        raise ValueError(f"save_model: {type(est).__name__} is not a smoother or a density")
    header, offset = {"__metadata__": meta}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F64", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the tensors start 8-byte aligned
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            for a in tensors.values():
                f.write(a.tobytes())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
