"""python/periodic_full_runs.py: the runs `kf report --full` keeps in DIR/trained/, read from
their safetensors headers, beside the documented per-seed values and medians."""
import json
import struct
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "periodic_full_runs.py"


def write_run(path, mse, command):
    meta = {"__metadata__": {"test_mse_rollout": repr(mse), "train_seconds": "1.0",
                             "trained_by": command}}
    head = json.dumps(meta).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head)


def test_medians_beside_the_documented_ones(tmp_path):
    (tmp_path / "trained").mkdir()
    for fn in ("sin", "sin-exp", "square"):
        for setting in ("improved", "faithful"):
            for seed in range(3):
                if (fn, setting, seed) == ("square", "faithful", 2):
                    continue  # an interrupted --full: one run missing
                write_run(tmp_path / "trained" / f"periodic_{fn}_{setting}_s{seed}.safetensors",
                          (seed + 1) * 1e-3, f"kf train periodic --function {fn} --seed {seed}")
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "--out",
                          str(tmp_path / "t.md")], capture_output=True, text=True, check=True)
    text = out.stdout
    assert text == (tmp_path / "t.md").read_text()
    # Every run with the documented value of the same seed (sin, improved, seed 0: 5.23e-05).
    assert "| sin | improved | 0 | 0.001 | 5.23e-05 | 1.0 |" in text
    assert "| square | faithful | 2 | (not trained yet) | 0.016 | | |" in text
    # Medians: now against the documented (docs/results/periodic_code_improved_dropout005.csv).
    assert "| sin-exp | improved | 0.002 (0.001–0.003) | 0.000892 (0.000876–0.0013) |" in text
    assert "| square | faithful | 2 of 3 runs | 0.0167 (0.016–0.0321) |" in text
