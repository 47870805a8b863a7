"""ZG205 through a child the constructor is handed with its class in the annotation (`autoencoder: MeshAutoencoder`).

`self.autoencoder = autoencoder` from an argument annotated with a module class of this file or another is a child of
that class: a method of it called under a presence test (`if not exists(codes): codes = self.autoencoder.tokenize(x)`)
runs what that method runs, and a rank whose call carries the codes skips the child's gathers (meshgpt). Look-alike:
a method of the same child that only stores a value (`set_scale`) runs no submodule, and gating it skips nothing.

torch's own stacks (`nn.TransformerEncoder`) are towers too (torchrl's ACT runs its CVAE encoder only when given an
action chunk); a single torch layer (`nn.GRU`) run on a value other than the optional input stays left alone.
"""

from __future__ import annotations

from package_check import found_in_package

NETS = """
from torch import nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.scale = None

    def tokenize(self, x):
        return self.b(self.a(x))

    def set_scale(self, s):
        self.scale = s
        return s
"""


def _found(tmp_path, text: str) -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"nets.py": NETS, "model.py": text}, "model.py")


HANDED = """
import torch
from torch import nn
from .nets import Encoder

def exists(v):
    return v is not None

class Transformer(nn.Module):
    def __init__(self, encoder: Encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(4, 4)

    def forward(self, *, x, codes=None):
        if not exists(codes):
            codes = self.encoder.tokenize(x)
        return self.head(codes)
"""


def test_a_method_of_an_annotated_handed_child_gated_on_an_optional_input(tmp_path):
    assert ("ZG205", 16) in _found(tmp_path, HANDED)


HANDED_SAFE = """
from torch import nn
from .nets import Encoder

class Transformer(nn.Module):
    def __init__(self, encoder: Encoder):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(4, 4)

    def forward(self, x, scale=None):
        if scale is not None:
            self.encoder.set_scale(scale)
        return self.head(self.encoder.tokenize(x))
"""


def test_a_method_of_the_child_that_only_stores_a_value_is_clean(tmp_path):
    assert [f for f in _found(tmp_path, HANDED_SAFE) if f[0] == "ZG205"] == []


TORCH_TOWER = """
import torch
from torch import nn

class Act(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.obs_proj = nn.Linear(d, d)
        self.action_proj = nn.Linear(d, d)
        self.cvae_encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4), 2)
        self.head = nn.Linear(d, d)

    def forward(self, obs, actions=None):
        h = self.obs_proj(obs)
        if actions is not None:
            tokens = torch.cat([h, actions], dim=1)
            h = h + self.cvae_encoder(tokens)[:, 0]
        return self.head(h)
"""


def test_a_torch_transformer_encoder_gated_on_an_optional_input(tmp_path):
    # `nn.TransformerEncoder` is a stack of attention and feed-forward layers: a tower, not a single layer
    assert ("ZG205", 15) in _found(tmp_path, TORCH_TOWER)


TORCH_LAYER = """
import torch
from torch import nn

class Act(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.obs_proj = nn.Linear(d, d)
        self.gru = nn.GRU(d, d)
        self.head = nn.Linear(d, d)

    def forward(self, obs, actions=None):
        h = self.obs_proj(obs)
        if actions is not None:
            h = h + self.gru(h)[0] * actions
        return self.head(h)
"""


def test_a_single_torch_layer_gated_on_an_optional_input_run_on_another_value_is_left_alone(tmp_path):
    assert [f for f in _found(tmp_path, TORCH_LAYER) if f[0] == "ZG205"] == []


PARTIAL_SAFE = """
from functools import partial
from torch import nn

def frozen_text_encoder(texts, name):
    return texts

class Maskgit(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(4, 4)
        self.out = nn.Linear(4, 4)
        self.encode_text = partial(frozen_text_encoder, name="t5")

class Muse(nn.Module):
    def __init__(self, transformer: Maskgit):
        super().__init__()
        self.transformer = transformer
        self.head = nn.Linear(4, 4)

    def forward(self, x, texts=None):
        if texts is not None:
            x = x + self.transformer.encode_text(texts)
        return self.head(x)
"""


def test_a_function_the_annotated_class_stores_under_a_method_name_is_no_method(tmp_path):
    # `encode_text` is a partial of a free function (a frozen encoder outside the model), not a method running layers
    assert [f for f in _found(tmp_path, PARTIAL_SAFE) if f[0] == "ZG205"] == []
