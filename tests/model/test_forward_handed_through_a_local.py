"""A model's bound `forward` kept in a local and handed to a sampler (`sample_fn = model.forward` ...
`diffusion.p_sample_loop(sample_fn, z)`) runs without the model's hooks; the model may be one the function built
(DiT's `sample_ddp.py`)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SAMPLE = """
import torch
from torch import nn


class DiT(nn.Module):
    def __init__(self, hidden=64, tokens=16):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, hidden))
        self.block = nn.Linear(hidden, hidden)

    def forward(self, x):
        return self.block(x + self.pos_embed)


def main(args, diffusion, z):
    model = DiT(hidden=args.hidden)
    if args.cfg_scale > 1:
        sample_fn = model
    else:
        sample_fn = model.forward
    return diffusion.p_sample_loop(sample_fn, z.shape, z)
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("sample.py", textwrap.dedent(source))]


def test_a_built_models_forward_kept_in_a_local_and_handed_on_skips_its_hooks():
    assert ("ZG302", 21) in found(SAMPLE)


def test_a_forward_kept_in_a_local_to_be_put_back_is_not_handed_on():
    source = SAMPLE.replace("    return diffusion.p_sample_loop(sample_fn, z.shape, z)",
                            "    out = diffusion.p_sample_loop(model, z.shape, z)\n    model.forward = sample_fn\n    return out")
    assert ("ZG302", 21) not in found(source)


WRAPPER = """
from torch import nn


def add_hook_in(mlp: nn.Module, hook):
    original_forward = mlp.forward
    mlp.forward = lambda x: original_forward(hook(x))
"""


def test_a_forward_kept_to_be_wrapped_and_set_back_is_no_bypass():
    # (sae_lens, pytorch-nlp's weight drop: the module's call runs its hooks, then the wrapper, then the original)
    assert [code for code, _ in found(WRAPPER) if code == "ZG302"] == []
