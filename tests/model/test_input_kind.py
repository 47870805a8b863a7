"""The number of dimensions of an input (`x.ndim == 5`, `x.dim() == 5`, `len(x.shape) == 3`) or its trailing shape
compared with a tuple (`mel.shape[-2:] != (n_ctx, d)`) says which kind of input this call was given (videos or
images, raw features or encoded ones): a branch on it that runs a submodule one way only is ZG203
(`taint._kind_test`; make_a_video, whisper's decoding, h-optin)."""

from __future__ import annotations

from tests.model.package_check import found, write_package

ATTN = """
from torch import nn


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        return self.out(self.qkv(x)[..., : x.shape[-1]])
"""


def _check(tmp_path, body: str) -> list[tuple[str, int]]:
    path = write_package(tmp_path, {"model.py": ATTN + body}) / "model.py"
    return found(path, "ZG2")


def test_a_video_flag_from_ndim_gates_the_temporal_layers(tmp_path):
    body = """

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.spatial = Attn(d)
        self.temporal = Attn(d)

    def forward(self, x, enable_time=True):
        is_video = x.ndim == 5
        enable_time &= is_video
        x = self.spatial(x)
        if enable_time:
            x = self.temporal(x)
        return x
"""
    assert ("ZG203", 25) in _check(tmp_path, body)


def test_encoded_input_told_by_its_trailing_shape_skips_the_encoder(tmp_path):
    body = """

class Whisper(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = Attn(d)
        self.decoder = Attn(d)
        self.n_ctx, self.n_state = 1500, d

    def forward(self, mel, tokens):
        return self.decoder(tokens + self.encoder(mel))


def detect_language(model: Whisper, mel, tokens):
    if mel.shape[-2:] != (model.n_ctx, model.n_state):
        mel = model.encoder(mel)
    return model.decoder(tokens + mel)
"""
    assert ("ZG203", 27) in _check(tmp_path, body)


def test_ndim_that_only_reshapes_or_runs_the_same_layers_is_fine(tmp_path):
    body = """

class Block(nn.Module):
    def __init__(self, d, pos):
        super().__init__()
        self.spatial = Attn(d)
        self.temporal = Attn(d)
        self.norm = nn.LayerNorm(d)
        self.register_buffer("pos", pos)

    def forward(self, x):
        if x.ndim == 2:
            x = x.unsqueeze(0)
        if x.dim() == 3:
            x = self.norm(x)
        if x.ndim == 5:
            b, f = x.shape[:2]
            h = self.spatial(x.flatten(0, 1)).unflatten(0, (b, f))
        else:
            h = self.spatial(x)
        if self.pos.ndim == 3:
            h = self.temporal(h)
        return h
"""
    assert _check(tmp_path, body) == []


def test_the_layout_of_a_mask_is_the_calling_convention(tmp_path):
    # `attention_mask.ndim == 2`: a 2-D padding mask or a 4-D prepared one, as the caller's convention has it on
    # every rank (transformers' generation builds the 4-D mask only for a static cache), not a kind of input data
    body = """

class Decoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mask_proj = Attn(d)
        self.body = Attn(d)

    def forward(self, x, attention_mask):
        if attention_mask.ndim == 2:
            attention_mask = self.mask_proj(attention_mask)
        return self.body(x) * attention_mask
"""
    assert _check(tmp_path, body) == []
