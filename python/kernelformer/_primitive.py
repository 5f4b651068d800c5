"""The smoothing primitive for numpy arrays: kernelformer.smooth, kernels(), threads.

Kernels and masks are the text `kf attend` takes ("gaussian:h=0.5", "causal&window:8"), parsed
once by the C++ library and cached here.
"""
from __future__ import annotations

import functools
import numbers
from collections import namedtuple
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _kernelformer as _kf

Kernel = _kf.Kernel
Mask = _kf.Mask

KernelInfo = namedtuple("KernelInfo", "name formula argument compact")
KernelInfo.__doc__ = """One kernel of kernelformer.kernels().

name: what kernel="..." takes; formula: K(q, k) with its parameters and defaults; argument:
"distance" (K depends on |q - k|, parameter h = bandwidth) or "dot" (on q.k, parameter
t = temperature, sqrt(d) by default) or "features" (elu1, rff, favor: K = phi(q).phi(k) by an
explicit feature map, computed in linear time); compact: zero beyond |q - k| > h."""


def kernels() -> List[KernelInfo]:
    """Every kernel the primitive knows, with its formula.

    Returns a list of KernelInfo(name, formula, argument, compact), e.g.
    KernelInfo("gaussian", "exp(-|q-k|^2 / (2 h^2)); alias rbf (gamma = 1/(2h^2))", "distance",
    False). Parameters ride along in the text: "gaussian:h=0.5", "periodic:h=1,period=6.28",
    "polynomial:degree=3,c=1", "exp_dot:t=2"; a product "exp_dot*gaussian:h=2" applies the first
    kernel to the first `split` columns and the second to the rest.

    >>> import kernelformer as kf
    >>> [k.name for k in kf.kernels()][:3]
    ['gaussian', 'laplacian', 'cauchy']
    """
    return [KernelInfo(*row) for row in _kf.kernel_catalog()]


def set_num_threads(n: int) -> None:
    """Threads for every later call of the library (0: OpenMP's default, OMP_NUM_THREADS or the
    core count). A call's own threads= argument wins.

    >>> import kernelformer as kf
    >>> kf.set_num_threads(1); kf.get_num_threads()
    1
    >>> kf.set_num_threads(0)
    """
    _kf.set_num_threads(int(n))


def get_num_threads() -> int:
    """Threads a call uses when it is not given any.

    >>> import kernelformer as kf
    >>> kf.get_num_threads() >= 1
    True
    """
    return _kf.get_num_threads()


def _real(x):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return False
    return True


@functools.lru_cache(maxsize=256)
def _kernel_cached(text, bandwidth, temperature, split):
    k = Kernel.parse(text, split or 0)
    if k.is_product and not split:
        raise ValueError(f"kernel {text!r} is a product kernel: give split=S (the first S columns "
                         "go to the first factor)")
    if not k.is_product and split:
        raise ValueError("split applies to product kernels (A*B) only")
    if bandwidth is not None:
        if k.is_product or k.argument != "distance" or k.name in ("uniform", "inverse_distance"):
            raise ValueError(f"bandwidth applies to distance kernels; {k.name} takes temperature= "
                             "(or NAME:h=... / :t=... in the kernel text)")
        if not bandwidth > 0 or not np.isfinite(bandwidth):
            raise ValueError(f"bandwidth {bandwidth} must be positive and finite")
        k = k.with_param(bandwidth)
    if temperature is not None:
        if k.is_product or k.argument != "dot":
            raise ValueError(f"temperature applies to dot kernels (exp_dot, linear, polynomial); "
                             f"{k.name} takes bandwidth=")
        if not temperature > 0 or not np.isfinite(temperature):
            raise ValueError(f"temperature {temperature} must be positive and finite")
        k = k.with_param(temperature)
    return k


def make_kernel(kernel: Union[str, Kernel] = "exp_dot", bandwidth: Optional[float] = None,
                temperature: Optional[float] = None, split: Optional[int] = None) -> Kernel:
    """A Kernel from its text (or a Kernel), with a bandwidth (distance kernels) or temperature
    (dot kernels) set as `kf attend --bandwidth/--temperature` set them. Raises ValueError with
    the library's message for an unknown name or a bad parameter.

    >>> import kernelformer as kf
    >>> kf.make_kernel("gaussian", bandwidth=0.5).describe()
    'gaussian(h=0.5)'
    """
    if isinstance(kernel, Kernel):
        if bandwidth is None and temperature is None and split is None:
            return kernel
        if split is None and kernel.is_product:
            split = kernel.split
        kernel = kernel.format()
    if not isinstance(kernel, str):
        raise TypeError(f"kernel must be a string such as 'gaussian:h=0.5' or a Kernel, not "
                        f"{type(kernel).__name__}")
    for name, value in (("bandwidth", bandwidth), ("temperature", temperature)):
        if value is not None and not _real(value):
            raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if split is not None and (isinstance(split, bool) or not isinstance(split, numbers.Integral)):
        raise TypeError(f"split must be an integer, not {type(split).__name__}")
    return _kernel_cached(kernel, None if bandwidth is None else float(bandwidth),
                          None if temperature is None else float(temperature),
                          None if split is None else int(split))


@functools.lru_cache(maxsize=256)
def _mask_cached(text):
    return Mask.parse(text)


def make_mask(mask: Union[None, str, Mask, Sequence[Mask], ArrayLike],
              batch_shape: Tuple[int, ...] = ()) -> Union[Mask, List[Mask]]:
    """A Mask, or a list of one Mask per batch item, from None, text ("causal&window:8"), a Mask,
    a list of Masks (one per batch item), or a boolean array (n, m) / (*batch_shape, n, m) that
    is True where query i may see key j.

    >>> import kernelformer as kf
    >>> kf.make_mask("causal&window:8")
    Mask('causal&window:8')
    """
    if mask is None:
        return _mask_cached("none")
    if isinstance(mask, Mask):
        return mask
    if isinstance(mask, str):
        return _mask_cached(mask)
    if isinstance(mask, (list, tuple)) and mask and all(isinstance(m, Mask) for m in mask):
        return list(mask)  # one per batch item
    a = np.asarray(mask)
    if a.dtype != np.bool_:
        raise TypeError(f"a mask array must be boolean (True: query i may see key j), not {a.dtype}")
    if a.ndim == 2:
        return Mask.matrix(a)
    if a.ndim < 2 or a.shape[:-2] != tuple(batch_shape):
        raise ValueError(f"a mask array must be (n, m) or (*batch, n, m) with batch "
                         f"{tuple(batch_shape)}, got shape {a.shape}")
    return [Mask.matrix(m) for m in a.reshape((-1,) + a.shape[-2:])]


def _array(x, name):
    if isinstance(x, np.ndarray):
        return x
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: cannot be read as an array ({e})") from None
    return a


def _bandwidth_args(bandwidth):
    """(scalar bandwidth or None, per-dimension list)."""
    if bandwidth is None or _real(bandwidth):
        return bandwidth, []
    if isinstance(bandwidth, str):
        raise TypeError("smooth: bandwidth must be a number or one number per column; bandwidth "
                        "rules and criteria ('silverman', 'cv', ...) belong to the estimators "
                        "(NadarayaWatsonRegressor, KernelDensity)")
    per_dim = np.asarray(bandwidth, dtype=float).ravel().tolist()
    return None, per_dim


def smooth(q: ArrayLike, k: ArrayLike, v: ArrayLike, kernel: Union[str, Kernel] = "exp_dot",
           bandwidth: Union[None, float, ArrayLike] = None,
           mask: Union[None, str, Mask, Sequence[Mask], ArrayLike] = None,
           return_weights: bool = False, *, temperature: Optional[float] = None,
           split: Optional[int] = None, return_lse: bool = False,
           threads: Optional[int] = None) -> Union[NDArray, Tuple[NDArray, ...]]:
    """Kernel smoothing, the one primitive: out_i = sum_j K(q_i, k_j) v_j / sum_j K(q_i, k_j)
    over the keys j that mask M(i) allows.

    Shapes: q (n, d), k (m, d), v (m, dv) -> out (n, dv); or batched over any leading
    dimensions, q (..., n, d), k (..., m, d), v (..., m, dv) -> out (..., n, dv) (attention heads:
    (B, H, T, D)). 1-D q and k are one feature (n,) and (m,); a 1-D v (m,) gives out (n,).
    Softmax attention is the default kernel: smooth(Q, K, V) = softmax(Q K^T / sqrt(d)) V.

    kernel: text as `kf attend --kernel` takes it ("gaussian:h=0.5", "epanechnikov",
        "periodic:h=1,period=6.28", "exp_dot*gaussian:h=2" with split=...), or a Kernel;
        kernelformer.kernels() lists them with their formulas.
    bandwidth: h of a distance kernel (a number), or one number per column (d,) — q and k are
        then divided column by column.
    temperature: T of a dot kernel, exp(q.k / T); sqrt(d) by default.
    mask: None, text as `kf attend --mask` takes it ("causal", "causal&window:8", "knn:10",
        "radius:0.5"), a Mask, or a boolean array (n, m) / (..., n, m), True where query i may
        see key j.
    return_weights: also return the normalized weights p_ij, (..., n, m).
    return_lse: also return lse_i = log sum_j K(q_i, k_j), (..., n) (what a backward pass needs).
    threads: threads for this call (default: kernelformer.set_num_threads, else all cores).

    Returns out, or a tuple (out, weights) / (out, lse) / (out, weights, lse) as asked. float32
    when q, k and v all are float32, float64 otherwise. C-contiguous float32/float64 arrays are
    used in place (no copy); other layouts and dtypes are converted once. The GIL is released
    while computing. Rows whose mask or compact kernel leaves no key get out = 0 (lse = -inf).
    Raises ValueError (shapes, NaN/inf, unknown kernel or mask, bad parameters) or TypeError
    (non-numeric dtypes).

    >>> import numpy as np, kernelformer as kf
    >>> x = np.linspace(0, 1, 5); y = 2 * x
    >>> kf.smooth(x, x, y, kernel="boxcar", bandwidth=0.3).round(3).tolist()
    [0.25, 0.5, 1.0, 1.5, 1.75]
    """
    q, k, v = _array(q, "q"), _array(k, "k"), _array(v, "v")
    squeeze = False
    if q.ndim == 1:
        q = q[:, None]
    if k.ndim == 1:
        k = k[:, None]
    if v.ndim == 1 and q.ndim == 2:
        v = v[:, None]
        squeeze = True
    h, per_dim = _bandwidth_args(bandwidth)
    kern = make_kernel(kernel, h, temperature, split)
    batch = q.shape[:-2] if q.ndim >= 2 else ()
    msk = make_mask(mask, batch)
    t = 0 if threads is None else int(threads)
    out, lse, _ = _kf.smooth_forward(q, k, v, kern, msk, return_lse, t, per_dim)
    if squeeze:
        out = out[:, 0]
    if not return_weights and not return_lse:
        return out
    result = [out]
    if return_weights:
        result.append(_kf.smooth_weights(q, k, kern, msk, [], t, per_dim,
                                         out.dtype == np.float64))
    if return_lse:
        result.append(lse)
    return tuple(result)
