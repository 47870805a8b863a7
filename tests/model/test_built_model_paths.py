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


DINO = """
import torch
import vision_transformer as vits
from torchvision import models as torchvision_models


def train_dino(args):
    if args.arch in vits.__dict__.keys():
        student = vits.__dict__[args.arch](patch_size=args.patch_size, drop_path_rate=args.drop_path_rate)
        embed_dim = student.embed_dim
    else:
        student = torchvision_models.__dict__[args.arch]()
        embed_dim = student.fc.weight.shape[1]
    return student, embed_dim
"""


def test_a_zoo_model_looked_up_by_name_is_built_and_its_weight_shape_a_placeholder():
    # DINO's `main_dino.py` sizes its head from the torchvision backbone it looked up by name
    assert ("ZG102", 13) in found(DINO)


def test_the_size_a_model_looked_up_by_name_keeps_as_a_setting_is_whole():
    assert ("ZG102", 10) not in found(DINO)


def test_a_weight_of_a_model_built_above_handed_to_an_initialiser_is_a_placeholder():
    # MAE's fine-tuning script: `trunc_normal_(model.head.weight, std=2e-5)` after building the ViT
    source = EVALUATE.replace("    model.fc.bias.data.zero_()\n", "    torch.nn.init.trunc_normal_(model.fc.bias, std=2e-5)\n")
    source = source.replace("    model.fc.weight.data.normal_(mean=0.0, std=0.01)\n", "    pass\n")
    assert any(code.startswith("ZG10") and line == 9 for code, line in found(source))


def test_a_weight_of_a_model_built_above_handed_to_a_report_is_read_for_its_type():
    source = EVALUATE.replace("    model.fc.bias.data.zero_()\n", "    print(type(model.fc.bias))\n")
    source = source.replace("    model.fc.weight.data.normal_(mean=0.0, std=0.01)\n", "    pass\n")
    assert not any(line == 9 for _code, line in found(source))


def test_a_function_handed_to_spawn_still_owns_the_model_it_builds():
    # Barlow Twins' `evaluate.py`: `torch.multiprocessing.spawn(main_worker, ...)` runs the function that builds it
    source = EVALUATE + "\n\ndef main(args):\n    torch.multiprocessing.spawn(main_worker, (args,), 2)\n"
    assert ("ZG101", 8) in found(source)


def test_a_function_handed_to_spawn_is_not_given_a_built_model():
    source = EVALUATE.replace("    model = torchvision.models.resnet50()\n", "") + (
        "\n\ndef main(args):\n    torch.multiprocessing.spawn(main_worker, (args,), 2)\n")
    source = source.replace("def main_worker(gpu, args):", "def main_worker(gpu, args, model=None):")
    assert ("ZG101", 7) not in found(source)
