"""How many items a list holds is how often it was appended to, not what the items hold.

StarGAN v2's `video_latent` fills `s_list` with styles made from `torch.randn` draws, in loops over settings, then
runs the generator once per pair of neighbours: `for idx, s in enumerate(s_list)`, skipping the first
(`if s_prev is None`, with `s_prev = None` set before the loop) and each group's first
(`if idx % len(z_list) == 0`). The draws change what the styles hold, never how many there are, nor the counter
`enumerate` hands out, nor whether the start value is still there: every rank runs the generator as often. Appends
made under a draw, or in a loop a draw counts, do make the list's length random.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

VIDEO = """
import torch


def interpolate(nets, x, a, b):
    return nets.generator(x, torch.lerp(a, b, 0.5))


@torch.no_grad()
def video_latent(nets, x_src, y_list, z_list, psi):
    s_list = []
    for y in y_list:
        for z in z_list:
            s = nets.mapping_network(z, y)
            s_list.append(torch.lerp(torch.randn_like(s), s, psi))
    s_prev = None
    frames = []
    for idx, s_next in enumerate(s_list):
        if s_prev is None:
            s_prev = s_next
            continue
        if idx % len(z_list) == 0:
            s_prev = s_next
            continue
        frames.append(interpolate(nets, x_src, s_prev, s_next))
        s_prev = s_next
    return frames
"""


def _divergences(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("video.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


def test_a_list_of_drawn_styles_is_as_long_on_every_rank():
    assert _divergences(VIDEO) == []


def test_appends_under_a_draw_make_the_length_random():
    drawn = VIDEO.replace(
        "            s_list.append(torch.lerp(torch.randn_like(s), s, psi))",
        "            if torch.rand(()) < 0.5:\n                s_list.append(s)",
    )
    found = _divergences(drawn)
    assert found and all(code == "ZG202" and 18 <= line <= 20 for code, line in found)


def test_a_counter_started_from_a_draw_decides_at_random():
    drawn = VIDEO.replace("enumerate(s_list)", "enumerate(s_list, int(torch.randint(0, 4, ())))")
    assert _divergences(drawn) == [("ZG202", 22)]
