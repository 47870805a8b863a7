"""An argument named like a module (`pos_embed`) that the function uses as only a tensor is (`.shape`,
`.reshape(...)`) holds a tensor: a data-dependent early return before its `reshape` skips no module (ImageBind's
`interpolate_pos_encoding_2d`). One it calls is a module all the same."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

INTERPOLATE = """
import math
from torch import nn


def interpolate_pos_encoding_2d(target_spatial_size, pos_embed):
    N = pos_embed.shape[1]
    if N == target_spatial_size:
        return pos_embed
    dim = pos_embed.shape[-1]
    return nn.functional.interpolate(
        pos_embed.reshape(1, int(math.sqrt(N)), int(math.sqrt(N)), dim).permute(0, 3, 1, 2),
        scale_factor=math.sqrt(target_spatial_size / N),
        mode="bicubic",
    )
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("helpers.py", textwrap.dedent(source))]


def test_an_argument_used_as_a_tensor_is_no_module_however_named():
    assert not [code for code in codes(INTERPOLATE) if code.startswith("ZG2")]


def test_an_argument_so_named_and_called_is_a_module():
    source = INTERPOLATE.replace("    dim = pos_embed.shape[-1]\n", "    dim = pos_embed(N)\n").replace(
        "    N = pos_embed.shape[1]\n", "    N = target_spatial_size.sum().item()\n")
    assert "ZG204" in codes(source)


