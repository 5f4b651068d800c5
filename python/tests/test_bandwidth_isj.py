"""KernelDensity(bandwidth="isj") and `kf kde --bandwidth isj`: the improved Sheather-Jones
bandwidth as KDEpy computes it, against the oracle of python/make_fixture_isj.py."""
import json
import os

import numpy as np
import pytest

import kernelformer as kf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fixtures",
                       "isj_cases.json")


def cases():
    with open(FIXTURE) as f:
        return json.load(f)["cases"]


@pytest.mark.parametrize("case", cases(), ids=lambda c: c["name"])
def test_equals_the_kdepy_oracle(case):
    x = np.array(case["x"])[:, None]
    kde = kf.KernelDensity(bandwidth="isj").fit(x)
    assert kde.bandwidth_[0] == pytest.approx(case["h"], rel=1e-10)


def test_per_feature_and_refusals():
    c = cases()
    a, b = np.array(c[0]["x"]), np.array(c[1]["x"])
    n = min(len(a), len(b))
    kde = kf.KernelDensity(bandwidth="isj").fit(np.c_[a[:n], b[:n]])
    assert kde.bandwidth_.shape == (2,)
    with pytest.raises(ValueError, match="(?i)need more data|root"):
        kf.KernelDensity(bandwidth="isj").fit(np.array([[0.0], [1.0]] * 5))
    with pytest.raises(ValueError, match="density criterion"):
        kf.NadarayaWatsonRegressor(bandwidth="isj").fit(np.c_[a[:20]], a[:20])
