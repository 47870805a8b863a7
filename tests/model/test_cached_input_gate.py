"""ZG205 on an optional input named as a cache: what decides is what its absence runs, not its name.

`if cache is None: cache = self.image_features(obs)` runs the encoder tower only on the ranks whose call left the
cache out (lerobot's SAC actor), so the other ranks skip its gathers. Look-alike: a cache left out only picks a value
(`cache = {}`), and the tower runs on every call.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

MODEL = """
from torch import nn

class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64))
        self.head = nn.Linear(64, 2)

    def image_features(self, obs):
        return self.encoder(obs)

    def forward(self, obs, cache=None):
{body}
"""

TOWER_WHEN_ABSENT = """
        if cache is None:
            cache = self.image_features(obs)
        return self.head(cache)"""

VALUE_WHEN_ABSENT = """
        if cache is None:
            cache = {}
        cache["features"] = self.encoder(obs)
        return self.head(cache["features"])"""


def _codes(body: str) -> list[str]:
    source = textwrap.dedent(MODEL).format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))
    return [f.code for f in check_source("actor.py", source)]


def test_a_tower_run_only_when_the_cache_is_left_out_is_a_gate():
    assert "ZG205" in _codes(TOWER_WHEN_ABSENT)


def test_a_cache_left_out_that_only_picks_a_value_is_no_gate():
    assert "ZG205" not in _codes(VALUE_WHEN_ABSENT)
