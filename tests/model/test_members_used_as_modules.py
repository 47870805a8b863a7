"""A member built by a call zgen cannot read is a module when the class uses it as one.

`self.encoder = registry["vit_l"](None).image_encoder.to(dtype)` names no class; a class that then puts a layer into
it (`self.encoder.patch_embed.proj = nn.Conv2d(...)`), writes that layer's weight and hands the weight to `F.conv2d`
in its forward is using a model: the write after construction is ZG103 and the forward's read of a grandchild's
weight is ZG301. An optimizer loaded from a checkpoint (its state is no model's), a tokenizer, and a part of the
model the constructor was handed (read as the caller's) are no such members.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

ENCODER = """
import torch
import torch.nn.functional as F
from torch import nn
from segment_anything import sam_model_registry


class Seg(nn.Module):
    def __init__(self, ps=8):
        super().__init__()
        self.encoder = sam_model_registry["vit_l"](None).image_encoder.to(torch.float32)
        w = self.encoder.patch_embed.proj.weight.detach()
        self.encoder.patch_embed.proj = nn.Conv2d(3, 1024, stride=ps, kernel_size=ps)
        self.encoder.patch_embed.proj.weight.data = w[:, :, ::2, ::2]
        self.out = nn.Conv2d(256, 3, kernel_size=1)
        self.ps = ps

    def forward(self, x):
        x = F.conv2d(x, self.encoder.patch_embed.proj.weight.data, stride=self.ps)
        return self.out(self.encoder.neck(x))
"""

LOOK_ALIKES = """
import torch
from torch import nn
from transformers import AutoTokenizer
from mylib import build_optimizer


class Trainer(nn.Module):
    def __init__(self, model, path):
        super().__init__()
        self.net = nn.Linear(512, 512)
        self.optimizer = build_optimizer(self.net)
        self.tok = AutoTokenizer.from_pretrained(path)
        self.embed = model.get_input_embeddings()

    def forward(self, x):
        return self.net(x)

    def load(self, state):
        self.optimizer.load_state_dict(state["optimizer"])
        return self.tok.decode(state["ids"])
"""


def _found(source: str, prefix: str = "ZG") -> list[tuple[str, int]]:
    found = check_source("model.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith(prefix))


def test_a_member_of_an_unread_call_used_as_a_model_is_one():
    found = _found(ENCODER)
    assert ("ZG103", 14) in found  # the new layer's weight written after it was built
    assert ("ZG301", 19) in found  # the grandchild's weight handed to F.conv2d in forward


def test_an_optimizer_a_tokenizer_and_a_handed_part_are_no_members_of_ours():
    assert _found(LOOK_ALIKES, "ZG1") == []
