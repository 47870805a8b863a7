"""A decoding function whose loop body is a closure calling another closure that runs the model it was handed.

`beam_search(symbols_to_logits_fn, ...)` defines `grow` (calling the model function) and `inner_loop` (calling
`grow`); `while _is_finished(step, seq): step, seq = inner_loop(step, seq)` leaves on this rank's own sequences, so
ranks run `inner_loop` (and the model) a different number of times (ZG204). When the closure only pads the
sequence, no model runs in the loop.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SEARCH = """
import torch


def beam_search(symbols_to_logits_fn, ids, decode_length):
    def grow(i, seq):
        logits = {step}
        return logits.argmax(-1)

    def inner_loop(i, seq):
        nxt = grow(i, seq)
        return i + 1, torch.cat([seq, nxt[:, None]], 1)

    def _is_finished(i, seq):
        return (i < decode_length) & ~bool((seq[:, -1] == 0).all().item())

    step = 0
    seq = ids
    while _is_finished(step, seq):
        step, seq = inner_loop(step, seq)
    return seq
"""


def _zg2(step: str) -> list[tuple[str, int]]:
    source = textwrap.dedent(SEARCH.format(step=step))
    return [(f.code, f.line) for f in check_source("search.py", source) if f.code.startswith("ZG2")]


def test_a_loop_running_a_closure_that_reaches_the_model_through_another():
    assert _zg2("symbols_to_logits_fn(seq)") == [("ZG204", 19)]


def test_a_closure_that_runs_no_model_decides_nothing():
    assert _zg2("torch.nn.functional.one_hot(seq, 8).float()") == []
