"""Forms of ZG1/ZG3 hazards that `bench/zg1_matrix.py` found missed, each a whole row or column of its
access x holder grid, next to a safe look-alike that must stay clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import copy
import torch
from torch import nn
"""


def _codes(body: str) -> list[tuple[str, int]]:
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    return [(f.code, f.line) for f in check_source("m.py", src, None)]


def test_deepcopy_of_self_in_init_is_checked_without_a_crash() -> None:
    codes = _codes("""
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)
        self.scale = nn.Parameter(torch.empty(4096, 4096))
        twin = copy.deepcopy(self)
""")
    assert all(code != "ZG901" for code, _ in codes)


MODEL = """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4096, 4096))

    def forward(self, x):
        return x @ self.weight

    def logits(self, x):
        return x @ self.weight.t()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)
        self.blk = Block()
        self.register_buffer("mask", torch.ones(4096, 4096))

    def forward(self, x):
        return self.blk(self.fc(x))
"""


def _outside(body: str) -> list[tuple[str, int]]:
    """Codes and lines of ZG1/ZG3 findings in `body`, placed after the model classes."""
    start = len((textwrap.dedent(HEAD) + MODEL).splitlines())
    return [(code, line - start) for code, line in _codes(MODEL + textwrap.dedent(body)) if line > start
            and code[:3] in ("ZG1", "ZG3")]


def test_a_parameter_reached_by_path_from_a_model_a_function_is_given() -> None:
    assert [c for c, _ in _outside("""
def tweak(model):
    model.fc.weight.data.copy_(torch.zeros(4096, 4096))
    n = model.fc.weight.shape[0]
    w = model.fc.weight.data.clone()
""")] == ["ZG101", "ZG102", "ZG109"]


def test_a_parameter_reached_by_path_from_a_model_a_trainer_holds() -> None:
    assert _outside("""
class Trainer:
    def __init__(self, model):
        self.model = model

    def step(self):
        nn.init.normal_(self.model.fc.weight, std=0.02)
""") == [("ZG101", 7)]


def test_buffers_metadata_and_callbacks_of_a_given_model_stay_clean() -> None:
    assert _outside("""
def tweak(model):
    model.mask.data.fill_(0.0)
    dt = model.fc.weight.dtype


def filter_fn(state, model):
    return state[model.fc.weight.shape[0]]


def build(fn=filter_fn):
    return fn
""") == []


def test_a_helper_a_module_calls_on_itself_is_judged_at_the_call() -> None:
    found = _outside("""
class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4096, 4096)

    def forward(self, x):
        return attend(self, x)


def attend(module, x):
    return x @ module.proj.weight
""")
    assert all(line != 11 for _, line in found)


def test_forward_of_a_submodule_of_a_given_or_held_model() -> None:
    found = _outside("""
def sample(model):
    return model.fc.forward(torch.randn(2, 4096))


class Agent:
    def __init__(self, net):
        self.net = net

    def act(self):
        return self.net.fc.forward(torch.randn(2, 4096))

    def act_safe(self):
        return self.net.fc(torch.randn(2, 4096))
""")
    assert found == [("ZG302", 3), ("ZG302", 11)]


def test_a_non_forward_method_of_a_submodule_of_a_given_or_held_model() -> None:
    found = _outside("""
def score(model: nn.Module):
    return model.blk.logits(torch.randn(2, 4096))


class Agent:
    def __init__(self, net: Net):
        self.net = net

    def act(self):
        return self.net.blk.logits(torch.randn(2, 4096))

    def act_safe(self):
        return self.net.blk(torch.randn(2, 4096))
""")
    assert found == [("ZG303", 3), ("ZG303", 11)]


def test_a_weight_handed_to_a_functional_op_outside_forward() -> None:
    found = _outside("""
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)
        self.probe = torch.nn.functional.linear(torch.zeros(1, 4096), self.fc.weight)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.fc.weight)

    def score(self, x):
        return torch.nn.functional.linear(x, self.fc.weight)

    def tie(self):
        self.out = nn.Linear(4096, 4096)
        self.out.weight = self.fc.weight
""")
    assert [(code, line) for code, line in found if code.startswith("ZG1")] == [("ZG109", 6), ("ZG109", 12)]


def test_submodules_a_loop_takes_from_a_given_or_held_model() -> None:
    found = _outside("""
def score(model, x):
    for name, head in model.heads.items():
        x = torch.nn.functional.linear(x, head.weight)
    for layer in model.layers:
        n = layer.mask.shape[0]
    return x


class Trainer:
    def __init__(self, model):
        self.model = model

    def perturb(self):
        for m in self.model.modules():
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.weight)
""")
    assert found == [("ZG109", 4), ("ZG101", 17)]


def test_a_module_used_whole_by_its_own_methods() -> None:
    found = _outside("""
class Policy(nn.Module):
    def __init__(self, path):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)
        self.load_state_dict(torch.load(path))

    def forward(self, x):
        return self.fc(x)

    def flat(self):
        return torch.nn.utils.parameters_to_vector(self.parameters())

    def set_flat(self, vec):
        torch.nn.utils.vector_to_parameters(vec, self.parameters())

    def step(self):
        torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)

    def keys(self):
        return list(self.state_dict().keys())


class Leaf(nn.Module):
    def __init__(self, path):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(4096, 4096))
        self.load_state_dict(torch.load(path))
""")
    assert found == [("ZG108", 6), ("ZG109", 12), ("ZG101", 15), ("ZG107", 18)]


def test_a_submodule_of_a_given_model_reset() -> None:
    found = _outside("""
def restore(model, sd):
    model.fc.load_state_dict(sd)
    model.fc.reset_parameters()
    model.fc.train()
""")
    # the load copies into the submodule's parameters as into the model's own (one holding buffers alone is rare)
    assert found == [("ZG108", 3), ("ZG101", 4)]


def test_a_built_childs_method_computing_with_its_weights_in_init() -> None:
    found = _outside("""
class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.blk = Block()
        self.ref = self.blk.logits(torch.zeros(1, 4096))
        self.out = self.blk(torch.zeros(1, 4096))

    def forward(self, x):
        return self.blk(x)
""")
    assert [f for f in found if f[0].startswith("ZG3")] == [("ZG303", 6)]


def test_apply_run_by_a_method_on_the_built_model() -> None:
    found = _outside("""
def init_own(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)
        self.apply(init_own)

    def forward(self, x):
        return self.fc(x)

    def perturb(self):
        self.apply(init_own)
""")
    assert found == [("ZG101", 17)]


def test_the_state_dict_tensors_of_a_given_model_written_in_place() -> None:
    found = _outside("""
def soft_update(target_model, source_model, tau):
    target = target_model.state_dict()
    for k, v in target.items():
        v.mul_(1 - tau)
        n = v.shape
    for k, v in source_model.state_dict().items():
        v.add_(1.0)
    for k, v in source_model.state_dict().items():
        print(k, v.shape)
""")
    assert [f for f in found if f[0] != "ZG108"] == [("ZG101", 5), ("ZG101", 8)]
