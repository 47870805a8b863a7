"""A weight of a model the same function built, written through its path (`model.fc.weight.data.normal_(0, 0.01)`
after `model = torchvision.models.resnet50()`, `head.weight.data.normal_()` for a head built a line above), is a
placeholder under `zero.Init`: the linear-evaluation scripts of Barlow Twins, VICReg and MoCo v3 re-initialise their
heads so."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

EVALUATE = """
import torch
import torchvision


def main_worker(gpu, args):
    model = torchvision.models.resnet50()
    model.fc.weight.data.normal_(mean=0.0, std=0.01)
    model.fc.bias.data.zero_()
    head = torch.nn.Linear(2048, 1000)
    head.weight.data.normal_(mean=0.0, std=0.01)
    return model, head
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("evaluate.py", textwrap.dedent(source))]


def test_a_weight_of_a_zoo_model_built_above_written_by_its_path_is_a_placeholder():
    assert ("ZG101", 8) in found(EVALUATE)
    assert ("ZG101", 9) in found(EVALUATE)


def test_a_weight_of_a_layer_built_above_written_by_its_path_is_a_placeholder():
    assert ("ZG101", 11) in found(EVALUATE)


def test_a_weight_written_while_gathered_is_whole():
    source = EVALUATE.replace(
        "    head.weight.data.normal_(mean=0.0, std=0.01)\n",
        "    with deepspeed.zero.GatheredParameters(head.weight, modifier_rank=0):\n"
        "        head.weight.data.normal_(mean=0.0, std=0.01)\n",
    ).replace("import torch\n", "import deepspeed\nimport torch\n", 1)
    assert [line for code, line in found(source) if code == "ZG101" and line >= 11] == []
