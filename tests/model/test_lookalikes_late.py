"""Safe look-alikes (and one hazard) found by reviewing the session's ZG1/ZG2/ZG3 changes.

Each case is a pattern an earlier change flagged by mistake, or stopped finding.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SAFE = {
    # A method named like a container fill on `self`, and `torch.add`: neither fills a local list.
    "fill-on-self-or-module": """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(512, 512)
        self.proj = nn.Linear(512, 512)

    def update(self, v):
        pass

    def forward(self, x, mask):
        self.update(torch.where(mask))
        y = torch.add(x, x)
        if self.training:
            x = self.layer(x)
        if torch.is_grad_enabled():
            x = self.proj(y)
        return x
""",
    # Stochastic depth through a helper: the values are random, the shape is not.
    "shape-after-drop-path": """
import torch
from torch import nn

def drop_path(x, p, training):
    if not training or p == 0:
        return x
    keep = torch.rand(x.shape[0], 1, 1) >= p
    return x * keep / (1 - p)

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.Linear(512, 512)
        self.proj = nn.Linear(512, 512)

    def forward(self, x):
        x = x + drop_path(self.attn(x), 0.1, self.training)
        if x.shape[-1] == 512:  # (not `x.ndim == 4`: the kind of input this call was given, `taint._kind_test`)
            x = self.proj(x)
        return x
""",
    # A child's method that returns a constant runs no submodule; a settings object is not a module.
    "child-constant-and-settings": """
import torch.distributed as dist
from torch import nn

class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(512, 512)

    def num_params(self):
        return 262656

    def forward(self, x):
        return self.fc(x)

class Top(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.encoder = Enc()

    def forward(self, x):
        if dist.get_rank() == 0:
            print(self.encoder.num_params())
        return self.encoder(x) * self.cfg.loss.weight
""",
    # accelerate: a data loader prepared alone is no model; `accelerator.save` is torch.save on one rank.
    "accelerate-loader-and-save": """
def train(accelerator, loader, model, opt):
    loader = accelerator.prepare(loader)
    print(sum(1 for batch in loader))
    if accelerator.is_main_process:
        accelerator.save({"step": 1}, "ckpt.pt")
""",
}

HAZARDS = {
    # The stop flag is drawn inside the loop: the `while` test carries it back.
    "random-while-flag": ("ZG202", """
import torch
from torch import nn

class Loop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(512, 512)

    def forward(self, x):
        go = True
        while go:
            x = self.layer(x)
            go = torch.rand(1).item() < 0.5
        return x
"""),
    # The model is the second argument of `prepare`.
    "accelerate-model-second": ("ZG102", """
def train(accelerator, loader, model, opt):
    loader, model, opt = accelerator.prepare(loader, model, opt)
    print(sum(p.numel() for p in model.parameters()))
"""),
}


def _codes(source: str) -> list[str]:
    return [f.code for f in check_source("case.py", textwrap.dedent(source))]


def test_safe_lookalikes_stay_clean():
    for case, source in SAFE.items():
        assert _codes(source) == [], case


def test_hazards_are_found():
    for case, (code, source) in HAZARDS.items():
        assert code in _codes(source), case


def test_a_stored_lambda_reads_nothing_in_init():
    # The lambda's body runs when forward calls it (a ZG301 read there), not while __init__ runs.
    source = """
from torch import nn

class Lm(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32000, 512)
        self.to_logits = lambda t: t @ self.emb.weight.t()

    def forward(self, ids):
        return self.to_logits(self.emb(ids))
"""
    codes = _codes(source)
    assert not [c for c in codes if c.startswith("ZG1")], codes
    assert "ZG301" in codes
