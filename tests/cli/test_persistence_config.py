"""The persistence threshold of a config checked together with the model decides what stays gathered."""

from __future__ import annotations

import json

MODEL = """
from torch import nn

class Decoder(nn.Module):
    def __init__(self, nq=300, hd=256):
        super().__init__()
        self.query = nn.Embedding(nq, hd)
        self.proj = nn.Linear(hd, hd)

    def forward(self, x):
        return self.proj(x + self.query.weight)

    def lookup(self, ids):
        return self.query(ids)  # (the table runs here too: its hook has gathered it once)
"""


def _config(threshold=None):
    zero = {"stage": 3}
    if threshold is not None:
        zero["stage3_param_persistence_threshold"] = threshold
    return json.dumps({"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero})


def test_small_table_is_gathered_under_the_default(zgen, tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "ds.json").write_text(_config())
    code, out, _ = zgen("check", "model.py", "ds.json", "--select", "ZG3", "--output-format", "concise", cwd=tmp_path)
    assert " ZG301 " not in out, out


def test_a_lower_config_threshold_makes_it_a_read(zgen, tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "ds.json").write_text(_config(10_000))  # 300 x 256 = 76800 elements are now partitioned
    code, out, _ = zgen("check", "model.py", "ds.json", "--select", "ZG3", "--output-format", "concise", cwd=tmp_path)
    assert code == 1 and "model.py:11:" in out and " ZG301 " in out
    # The threshold is part of the cache key: the same model with the default config is clean again.
    (tmp_path / "ds.json").write_text(_config())
    code, out, _ = zgen("check", "model.py", "ds.json", "--select", "ZG3", "--output-format", "concise", cwd=tmp_path)
    assert " ZG301 " not in out, out
