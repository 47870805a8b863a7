"""An optional input filled in where absent (`if not exists(msa): msa = rearrange(seq, ...)`) is present from then
on: a later presence test of it is the same on every rank (ZG205). A presence helper's test (`exists(x)`) carries no
data taint, as `x is not None` carries none (ZG203), even for a value a submodule's method computed."""

from __future__ import annotations

from package_check import found, found_in_package, write_package

MLM = """
import torch
from torch import nn


class MLM(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.to_logits = nn.Linear(d, d)

    def noise(self, seq, mask):
        replaced = torch.rand_like(seq.float()) < 0.15
        return seq.masked_fill(replaced, 0), replaced

    def forward(self, x, orig, mask):
        return self.to_logits(x).sum()
"""

MODEL = """
from torch import nn
from .mlm import MLM


def exists(val):
    return val is not None


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.emb = nn.Embedding(10, d)
        self.mlm = MLM(d)

    def forward(self, seq, msa=None):
        assert not (self.training and not exists(seq))
{fill}
        if self.training and exists(msa):
            original = msa
            noised, replaced = self.mlm.noise(msa, None)
            msa = noised
        m = self.emb(msa)
        loss = None
        if self.training and exists(msa):
            loss = self.mlm(m, original, replaced)
        return m, loss
"""

_FILL = "        if not exists(msa):\n            msa = seq[:, None]"


def test_an_input_filled_in_where_absent_is_present_after(tmp_path):
    files = {"mlm.py": MLM, "model.py": MODEL.replace("{fill}", _FILL)}
    assert found_in_package(tmp_path, files, "model.py", prefix="ZG2") == []
    spelt = MODEL.replace("{fill}", "        if msa is None:\n            msa = seq[:, None]").replace(
        "exists(msa)", "msa is not None")
    assert found_in_package(tmp_path, {"mlm.py": MLM, "model.py": spelt}, "model.py", prefix="ZG2") == []


def test_an_input_never_filled_still_gates(tmp_path):
    files = {"mlm.py": MLM, "model.py": MODEL.replace("{fill}\n", "")}
    assert ("ZG205", 24) in found_in_package(tmp_path, files, "model.py", prefix="ZG2")


def test_a_fill_after_a_gate_or_running_a_submodule_fills_nothing(tmp_path):
    gated_first = MODEL.replace("{fill}", "        h = self.emb(msa) if exists(msa) else None\n" + _FILL)
    assert ("ZG205", 27) in found_in_package(tmp_path, {"mlm.py": MLM, "model.py": gated_first}, "model.py",
                                             prefix="ZG2")
    by_module = MODEL.replace("{fill}", "        if not exists(msa):\n            msa = self.emb(seq)")
    assert found_in_package(tmp_path, {"mlm.py": MLM, "model.py": by_module}, "model.py", prefix="ZG2") == [
        ("ZG205", 18), ("ZG205", 26)]


def test_a_presence_helper_carries_no_data_taint(tmp_path):
    # `msa` is what the child's `noise` returned: a presence test of it says nothing of its values (as `msa is not
    # None` would not), while `replaced.any()` tests them
    source = """
        from torch import nn
        from .mlm import MLM


        def exists(val):
            return val is not None


        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.emb = nn.Embedding(10, d)
                self.mlm = MLM(d)
                self.head = nn.Linear(d, d)

            def forward(self, seq, msa):
                x = self.emb(seq)
                x = x * (x.sum(dim=-1, keepdim=True) > 0)
                if self.training:
                    msa, replaced = self.mlm.noise(msa, None)
                    if replaced.any():
                        x = self.head(x)
                if exists(msa):
                    x = x + self.emb(msa)
                return x
    """
    path = write_package(tmp_path, {"mlm.py": MLM, "model.py": source}) / "model.py"
    assert found(path, "ZG2") == [("ZG203", 22)]
