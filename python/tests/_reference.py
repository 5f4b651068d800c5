"""Independent numpy references for the tests: every kernel's formula written out again from its
documentation (not from the library), dense weights, masks as boolean matrices."""
import numpy as np


def kernel_matrix(name, q, k, **p):
    """K(q_i, k_j) for q (n, d), k (m, d), in float64."""
    q, k = np.asarray(q, float), np.asarray(k, float)
    d = q.shape[1]
    if name in ("exp_dot", "linear", "polynomial"):
        t = p.get("t", np.sqrt(d))
        s = q @ k.T / t
        if name == "exp_dot":
            return np.exp(s)
        if name == "linear":
            return np.maximum(s + p.get("c", 0.0), 0.0)
        deg, c = p.get("degree", 2), p.get("c", 1.0)
        b = s + c
        return np.maximum(b, 0.0) ** deg if deg % 2 == 1 else b ** deg
    r2 = ((q[:, None, :] - k[None, :, :]) ** 2).sum(-1)
    r = np.sqrt(r2)
    h = p.get("h", 1.0)
    u = r / h
    inside = u <= 1
    if name == "gaussian":
        return np.exp(-r2 / (2 * h * h))
    if name == "laplacian":
        return np.exp(-r / h)
    if name == "cauchy":
        return 1.0 / (1.0 + r2 / h ** 2)
    if name == "rational_quadratic":
        a = p.get("alpha", 1.0)
        return (1.0 + r2 / (2 * a * h * h)) ** (-a)
    if name == "periodic":
        per = p.get("period", 2 * np.pi)
        return np.exp(-2 * np.sin(np.pi * r / per) ** 2 / h ** 2)
    if name == "locally_periodic":
        per = p.get("period", 2 * np.pi)
        return np.exp(-2 * np.sin(np.pi * r / per) ** 2 / h ** 2) * np.exp(-r2 / (2 * h * h))
    if name == "boxcar":
        return inside * 1.0
    if name == "epanechnikov":
        return np.where(inside, 1 - u ** 2, 0.0)
    if name == "biweight":
        return np.where(inside, (1 - u ** 2) ** 2, 0.0)
    if name == "triweight":
        return np.where(inside, (1 - u ** 2) ** 3, 0.0)
    if name == "tricube":
        return np.where(inside, (1 - u ** 3) ** 3, 0.0)
    if name == "cosine":
        return np.where(inside, np.cos(np.pi * u / 2), 0.0)
    if name == "uniform":
        return np.ones_like(r2)
    if name == "inverse_distance":
        return 1.0 / np.maximum(r, 1e-150)
    raise KeyError(name)


def smooth_dense(K, v, allowed=None):
    """(out, weights, lse) from a kernel matrix (n, m) and values (m, dv); empty rows -> 0."""
    K = K.copy()
    if allowed is not None:
        K[~allowed] = 0.0
    s = K.sum(1, keepdims=True)
    w = np.divide(K, s, out=np.zeros_like(K), where=s > 0)
    with np.errstate(divide="ignore"):
        return w @ v, w, np.log(s[:, 0])


def softmax_attention(q, k, v, allowed=None):
    """softmax(q k^T / sqrt(d)) v in float64, stable, with -inf outside `allowed`."""
    q, k, v = (np.asarray(a, float) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    mx = s.max(-1, keepdims=True)
    e = np.exp(s - mx)
    w = e / e.sum(-1, keepdims=True)
    return w @ v, w, (mx + np.log(e.sum(-1, keepdims=True)))[..., 0]


def mask_matrix(text, n, m, r2=None):
    """A mask text as a boolean (n, m) matrix (causal, window, knn only)."""
    i, j = np.arange(n)[:, None], np.arange(m)[None, :]
    allowed = np.ones((n, m), bool)
    for term in text.split("&"):
        name, _, arg = term.partition(":")
        if name == "causal":
            allowed &= j <= i + (int(arg) if arg else 0)
        elif name == "window":
            a, _, b = arg.partition(",")
            lo, hi = int(a), int(b or a)
            allowed &= (j >= i - lo) & (j <= i + hi)
        elif name == "padding":
            allowed &= j < int(arg)
        elif name == "knn":
            kk = int(arg)
            order = np.argsort(np.where(allowed, r2, np.inf), axis=1, kind="stable")[:, :kk]
            sel = np.zeros_like(allowed)
            np.put_along_axis(sel, order, True, axis=1)
            allowed &= sel
        else:
            raise KeyError(name)
    return allowed
