"""A helper of another file handed the module whole: it sizes the children in `__init__` (ZG102), or measures the
gradients of a built model in a training loop (ZG107).

`self.n_params = count_parameters(self)` after the children were built sums the sizes of placeholders under
`deepspeed.zero.Init`; `grad_norm(model)` after `backward` reads `p.grad` of every parameter, which ZeRO-3 leaves
None (the gradients live in the engine's partitions). A helper that only sets `requires_grad`, or only tests whether
a gradient exists, stays clean.
"""

from __future__ import annotations

from package_check import found_in_package, write_package

from zgen.model import check_source

UTILS = """
import torch


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def freeze(model):
    for p in model.parameters():
        p.requires_grad = False


def grad_norm(model):
    return torch.norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))


def has_grads(model):
    return all(p.grad is not None for p in model.parameters())
"""

MODEL = """
import torch.nn as nn
from .utils import count_parameters, freeze, grad_norm, has_grads


class Net(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.enc = nn.Linear(d, d)
        self.dec = nn.Linear(d, n)
        self.n_params = count_parameters(self)
        freeze(self.enc)

    def forward(self, x):
        return self.dec(self.enc(x))


def train(model: Net, loader, opt):
    for x in loader:
        model(x).mean().backward()
        print(grad_norm(model))
        assert has_grads(model)
        opt.step()
"""


def test_a_helper_sizing_the_module_in_init_and_one_measuring_gradients(tmp_path):
    files = {"utils.py": UTILS, "model.py": MODEL}
    assert ("ZG102", 11) in found_in_package(tmp_path, files, "model.py", prefix="ZG102")
    assert ("ZG107", 21) in found_in_package(tmp_path, files, "model.py", prefix="ZG107")


def test_flags_and_existence_tests_are_clean(tmp_path):
    found = found_in_package(tmp_path, {"utils.py": UTILS, "model.py": MODEL}, "model.py", prefix="ZG1")
    assert [line for _code, line in found if line in (12, 22)] == []


# The message says what the helper's summary found it does to the model's gradients: `grad_norm` measures them,
# `clip` clips them, and `local_norm`, defined in the training function itself, measures them too.
WORDING = """
from .model import Net
from .utils import clip, grad_norm


def train(model: Net, loader, opt):
    def local_norm(m):
        return sum(p.grad.norm() for p in m.parameters())

    for x in loader:
        model(x).mean().backward()
        print(grad_norm(model))
        clip(model, 1.0)
        print(local_norm(model))
        opt.step()
"""

CLIP = """
import torch


def clip(model, c):
    torch.nn.utils.clip_grad_norm_(model.parameters(), c)
"""


def test_the_message_says_whether_the_helper_measures_or_clips(tmp_path):
    package = write_package(tmp_path, {"utils.py": UTILS + CLIP, "model.py": MODEL, "train.py": WORDING})
    path = package / "train.py"
    verbs = {f.line: f.message.split("` ", 1)[1].split(" ", 1)[0] for f in check_source(str(path), path.read_text())
             if f.code == "ZG107"}
    assert verbs == {12: "measures", 13: "clips", 14: "measures"}
