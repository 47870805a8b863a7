"""Modules kept in the instance dictionary (issue 20, blind27's audiocraft misses).

A conditioner that stashes a frozen encoder in `self.__dict__` (or through `object.__setattr__`) keeps it out of the
module tree: under `zero.Init` it was partitioned when loaded, and no hook of the engine gathers it, so running it, in
`forward` or a helper, or handing it to a function that runs it, computes with placeholders (ZG302). Look-alikes: a
tokenizer stashed the same way, the encoder only moved to a device, and the encoder registered as an attribute.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

CONDITIONER = """
import torch
from torch import nn
from .hub import EncoderModel, TextTokenizer

from .separation import apply_model, get_model


class TextConditioner(nn.Module):
    def __init__(self, name, dim, device="cpu"):
        super().__init__()
        self.__dict__["tokenizer"] = TextTokenizer.from_pretrained(name)
        t5 = EncoderModel.from_pretrained(name).eval()
        {keep}
        object.__setattr__(self, "separator", get_model("htdemucs").to(device))
        self.proj = nn.Linear(768, dim)

    def to_device(self, device):
        self.t5.to(device)

    def stems(self, wav):
        return apply_model(self.separator, wav)

    def forward(self, texts):
        inputs = self.tokenizer(texts, return_tensors="pt")
        return self.proj(self.t5(**inputs).last_hidden_state)
"""


def _zg302(keep: str) -> list[int]:
    source = textwrap.dedent(CONDITIONER).replace("{keep}", keep)
    return [f.line for f in check_source("conditioners.py", source) if f.code == "ZG302"]


def test_running_a_module_kept_in_the_instance_dictionary_skips_every_gather():
    assert _zg302('self.__dict__["t5"] = t5.to("cpu")') == [22, 26]


def test_a_registered_encoder_is_run_through_its_hooks():
    assert _zg302("self.t5 = t5") == [22]
