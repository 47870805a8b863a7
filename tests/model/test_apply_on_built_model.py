"""`self.apply(init_fn)` in an initialiser that runs on the built model (one neither `__init__` nor `forward`
reaches: a runner's `init_weights()`, a `reinit()`): DeepSpeed's `zero.Init` wraps `Module.apply` to gather each
visited module only while its context is open, during construction, so afterwards the callback writes empty
placeholders (ZG103). Look-alikes: the same initialiser called from `__init__`, and a callback that writes no
parameter."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from functools import partial

from torch import nn


def init_fn(m, std):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=std)


def set_eval(m):
    m.eval()


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)
        {call_in_init}

    def forward(self, x):
        return self.b(self.a(x))

    def init_weights(self):
        self.apply({callback})  # KEY
"""


def _zg103_at_key(call_in_init: str, callback: str) -> bool:
    source = textwrap.dedent(SOURCE).format(call_in_init=call_in_init, callback=callback)
    key = next(i for i, line in enumerate(source.splitlines(), 1) if line.endswith("# KEY"))
    return ("ZG103", key) in [(f.code, f.line) for f in check_source("m.py", source)]


def test_an_initialiser_a_runner_calls_on_the_built_model_writes_placeholders():
    assert _zg103_at_key("pass", "partial(init_fn, std=0.02)")
    assert _zg103_at_key("pass", "lambda m: init_fn(m, 0.02)")


def test_the_same_initialiser_run_from_init_is_gathered_by_zero_init():
    assert not _zg103_at_key("self.init_weights()", "partial(init_fn, std=0.02)")


def test_a_callback_writing_no_parameter_is_clean():
    assert not _zg103_at_key("pass", "set_eval")
