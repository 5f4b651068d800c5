"""The periodic model of seed 003 in PyTorch with KernelAttention (python/
periodic_kernel_attention.py): a smoke run here, the protocol's quick configuration when slow
tests run (docs/python.md compares it with `kf train periodic` over several seeds)."""
import importlib.util
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[1] / "periodic_kernel_attention.py"


@pytest.fixture(scope="module")
def demo():
    spec = importlib.util.spec_from_file_location("periodic_kernel_attention", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_model_is_kernel_attention_and_trains(demo):
    m = demo.PeriodicModel(16, 2, 32, 1, "exp_dot")
    assert type(m.layers[0].self_attn).__name__ == "KernelAttention"
    r = demo.run("sin", "quick", "exp_dot", seed=0, epochs=2, threads=1, windows=128)
    assert math.isfinite(r["test_mse_rollout"]) and math.isfinite(r["final_train_loss"])
    g = demo.run("square", "quick", "gaussian:h=4", seed=1, epochs=1, threads=1, windows=64)
    assert math.isfinite(g["test_mse_teacher_forced"])


@pytest.mark.slow
def test_quick_protocol_reaches_kf_train_periodic(demo):
    # kf train periodic --config quick, sin: rollout MSE 0.0034-0.0083 over seeds 0-2
    # (docs/results/periodic_quick_kernels.md); the same model here, one seed.
    r = demo.run("sin", "quick", "exp_dot", seed=0)
    assert r["test_mse_rollout"] < 0.03
    assert r["final_train_loss"] < 0.02
