"""ZG3 where zgen cannot name the receiver's class (issue 20, h-zg3duck): a module known only by its use (built by a
factory or registry zgen does not read, handed in, a loop variable over a container of such modules), whose
`.forward` is called by name or whose weights a forward reads; and what counts as a module's own parameter when it
is bypassed (a `ParameterList` it holds is a child, not its own)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(tmp_path, model: str) -> list[tuple[str, int]]:
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(model))
    return [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code.startswith("ZG3")]


# `self.forward(...)` from a plain method of a module whose only parameters sit in a `ParameterList` child
SELF_FORWARD_LIST = """
import torch
from torch import nn

class Folding(nn.Module):
    def __init__(self, d, constraints):
        super().__init__()
        self.trunk = nn.Linear(d, d)
        self.masks = nn.ParameterList([nn.Parameter(torch.randn(4096, d)) for _ in constraints])

    def forward_with_inputs(self, inputs):
        return self.forward(inputs.to_tensor())

    def forward(self, x):
        return self.trunk(x)
"""


def test_self_forward_of_a_module_whose_parameters_sit_in_a_parameter_list_child_is_clean(tmp_path):
    # the list is a child module: skipping the module's own hooks skips no parameter of its own
    assert _found(tmp_path, SELF_FORWARD_LIST) == []


def test_self_forward_of_a_module_holding_a_large_parameter_of_its_own_is_flagged(tmp_path):
    own = SELF_FORWARD_LIST.replace(
        "nn.ParameterList([nn.Parameter(torch.randn(4096, d)) for _ in constraints])", "nn.Parameter(torch.randn(4096, d))"
    )
    assert _found(tmp_path, own) == [("ZG302", 12)]
