"""kernelformer: attention is Nadaraya-Watson kernel smoothing.

One primitive, out_i = sum_j K(q_i, k_j) v_j / sum_j K(q_i, k_j) over the keys a mask allows,
computed by the C++ library (kernelformer._kernelformer) on numpy arrays without copying them:

    import numpy as np, kernelformer as kf
    out = kf.smooth(Q, K, V)                                   # softmax attention
    fit = kf.smooth(x_new, x, y, kernel="gaussian", bandwidth=0.3)   # Nadaraya-Watson
    kf.kernels()                                               # every kernel and its formula

scikit-learn estimators (imported on first use): NadarayaWatsonRegressor, LocalLinearRegressor,
KNNRegressor, LowessRegressor, LocalPolynomialRegressor, MixedNadarayaWatsonRegressor,
KernelDensity, MixedKernelDensity, KernelClassifier, KNNClassifier. PyTorch: kernelformer.torch (smooth as an autograd Function,
KernelAttention). docs/python.md has a tour.
"""
from . import _kernelformer
from ._primitive import (Kernel, KernelInfo, Mask, get_num_threads, kernels, make_kernel,
                         make_mask, set_num_threads, smooth)

__version__ = _kernelformer.__version__

try:  # threadpoolctl (scikit-learn's dependency) sees and limits the library's threads
    from ._threadpool import register as _register_threadpool
    _register_threadpool()
except ImportError:
    pass

_LAZY = {
    "NadarayaWatsonRegressor": "regression",
    "LocalLinearRegressor": "regression",
    "KNNRegressor": "regression",
    "LowessRegressor": "regression",
    "LocalPolynomialRegressor": "local_poly",
    "MixedNadarayaWatsonRegressor": "mixed",
    "MixedKernelDensity": "mixed",
    "KernelDensity": "density",
    "KernelClassifier": "classification",
    "KNNClassifier": "classification",
    "SearchBoundaryWarning": "_sklearn",
    "load_model": "saved",
    "save_model": "saved",
}

__all__ = ["smooth", "kernels", "set_num_threads", "get_num_threads", "Kernel", "Mask",
           "KernelInfo", "make_kernel", "make_mask", "__version__", *_LAZY]


def __getattr__(name):
    # The estimators import scikit-learn (about a second): only when first asked for.
    if name in _LAZY:
        import importlib
        module = importlib.import_module("." + _LAZY[name], __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kernelformer' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
