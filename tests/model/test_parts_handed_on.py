"""Writes reached through a helper that takes a part of the module it is given, and through a helper handed a model
the same function has just built.

* `prev = get_op_by_name(module, name)` (a function handing back an item of `module.named_modules()`),
  `layers = [module.get_submodule(n) for n in names]`: parts of the argument. A helper that hands them to another
  which scales their weights in place writes the argument's parameters, so its callers do (ZG101 where a trainer
  hands it a model it holds).
* `model = Net(cfg)` then `init_model(model, cfg)` with `init_model` writing the parameters: under zero.Init the
  model was partitioned when its constructor returned (ZG103), as a load into it is (ZG108). A helper that only
  moves the model or reads its dtype writes nothing.
* The layers a progress bar shows (`for layer in tqdm.tqdm(self.model.layers)`) are modules, not parameters; the
  device of a state dict's first entry reads no value of it.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HELPERS = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        return self.b(self.a(x))


def get_op_by_name(module, op_name):
    for name, m in module.named_modules():
        if name == op_name:
            return m
    raise ValueError(op_name)


def describe(module, op_name):
    return f"{op_name} of {type(module).__name__}"


def scale_fcs(fc1, fcs, scales):
    fc1.weight.div_(scales.view(-1, 1))
    for fc in fcs:
        fc.weight.mul_(scales.view(1, -1))


def init_block(block, std):
    for layer in (block.a, block.b):
        nn.init.normal_(layer.weight, std=std)


def place(block, device):
    print(next(block.parameters()).dtype)
    return block.to(device)
"""


def codes(body: str) -> list[tuple[str, int]]:
    source = HELPERS + textwrap.dedent(body)
    start = HELPERS.count("\n")
    return [(f.code, f.line - start) for f in check_source("m.py", source) if f.code.startswith("ZG1") and f.line > start]


SCALER = """
    def apply_scale(module, pairs, scales):
        for first, rest in pairs:
            prev = {part}
            layers = [module.get_submodule(name) for name in rest]
            scale_fcs(prev, layers, scales)


    class Quantizer:
        def __init__(self, model: nn.Module, layers):
            self.model = model
            self.layers = layers

        def quantize(self, scales):
            for i in range(len(self.layers)):
                apply_scale(self.layers[i], [("a", ["b"])], scales)
"""


def test_a_helper_scaling_parts_of_the_module_it_is_given_writes_its_parameters():
    found = codes(SCALER.replace("{part}", "get_op_by_name(module, first)"))
    assert ("ZG101", 16) in found


def test_a_helper_describing_the_module_it_is_given_writes_nothing_through_it():
    body = SCALER.replace("{part}", "describe(module, first)").replace(
        "            layers = [module.get_submodule(name) for name in rest]\n", "            layers = []\n")
    assert codes(body) == []


def test_a_model_handed_to_an_initialiser_right_after_it_was_built_is_written_partitioned():
    assert codes("""
        def build(std):
            block = Block()
            init_block(block, std)
            return block
    """) == [("ZG103", 4)]


def test_a_model_handed_to_a_helper_that_moves_it_is_not_written():
    assert codes("""
        def build(device):
            block = Block()
            return place(block, device)
    """) == []


FUSER = """
    import tqdm


    class Fuser:
        def __init__(self, model: nn.Module):
            self.model = model

        def fuse(self, path):
            for layer in tqdm.tqdm(self.model.layers, desc="fusing"):
                {use}
"""


def test_the_device_of_a_state_dicts_first_entry_reads_no_value():
    # (the items of a progress bar are those of the modules it shows)
    assert codes(FUSER.replace("{use}", "print(next(iter(layer.state_dict().values())).device)")) == []


def test_a_state_dict_of_each_layer_saved_reads_the_placeholders():
    assert [code for code, _ in codes(FUSER.replace("{use}", "torch.save(layer.state_dict(), path)"))] == ["ZG108"]
