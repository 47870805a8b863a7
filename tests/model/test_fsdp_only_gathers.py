"""A gather context chosen by a test: DeepSpeed's `GatheredParameters` chosen under ZeRO-3 gathers; FSDP's
`summon_full_params`, chosen where the module has one (vissl's SwAV hook, `contextlib.suppress()` otherwise), gathers
nothing under DeepSpeed, whose modules have no such method: the write under it goes to a placeholder."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HOOK = """
import contextlib
import torch
from torch import nn


class NormalizePrototypes:
    def on_update(self, task):
        with torch.no_grad():
            module = task.model.heads[0].prototypes
            ctx = contextlib.suppress()
            if hasattr(module, "summon_full_params"):
                ctx = module.summon_full_params()
            with ctx:
                w = nn.functional.normalize(module.weight.data.clone(), dim=1, p=2)
                module.weight.copy_(w)
"""


def codes(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.line) for f in check_source("hooks.py", textwrap.dedent(source))}


def test_fsdps_gather_chosen_where_the_module_has_it_gathers_nothing_under_deepspeed():
    assert ("ZG101", 16) in codes(HOOK)


def test_deepspeeds_gather_chosen_under_zero3_guards_the_write():
    source = HOOK.replace("ctx = module.summon_full_params()",
                          "ctx = deepspeed.zero.GatheredParameters(module.weight, modifier_rank=0)")
    assert ("ZG101", 16) not in codes(source)


def test_fsdps_gather_taken_outright_still_guards():
    source = HOOK.replace("""            ctx = contextlib.suppress()
            if hasattr(module, "summon_full_params"):
                ctx = module.summon_full_params()
""", """            ctx = module.summon_full_params()
""")
    assert ("ZG101", 14) not in codes(source) and not any(code == "ZG101" for code, _ in codes(source))
