"""A script beside its siblings imports them by their own names (`from model import Transformer,
ConditionalFeedForward`): the parameters those siblings register by name (`self.w1 = nn.Parameter(...)`) are the
program's, so a handed model's child reached by such a name is sized as a parameter (`child.w1.shape`, ZG102;
`index.related_param_names`). Look-alike: an attribute no file of the program registers as a parameter."""

from __future__ import annotations

from tests.model.package_check import found_in_directory

MODEL = """
    import torch
    from torch import nn


    class ConditionalFeedForward(nn.Module):
        def __init__(self, e, i, d):
            super().__init__()
            self.w1 = nn.Parameter(torch.empty(e, i, d))

        def forward(self, x):
            return x @ self.w1[0]
"""
QUANTIZE = """
    from model import ConditionalFeedForward


    def replace_experts(module, dtype):
        for name, child in module.named_children():
            if isinstance(child, ConditionalFeedForward):
                num_experts, inter, dim = child.{attr}.shape
                setattr(module, name, ConditionalFeedForward(num_experts, inter, dim))
            else:
                replace_experts(child, dtype)
"""


def test_a_parameter_name_a_sibling_script_registers_is_a_parameter(tmp_path):
    files = {"model.py": MODEL, "quantize.py": QUANTIZE.format(attr="w1")}
    assert found_in_directory(tmp_path, files, "quantize.py", "ZG1") == [("ZG102", 8)]


def test_a_name_no_file_registers_is_no_parameter(tmp_path):
    files = {"model.py": MODEL, "quantize.py": QUANTIZE.format(attr="shape_hint")}
    assert found_in_directory(tmp_path, files, "quantize.py", "ZG1") == []
