"""ZG3 where zgen cannot name the receiver's class (issue 20, h-zg3duck): a module known only by its use (built by a
factory or registry zgen does not read, handed in, a loop variable over a container of such modules), whose
`.forward` is called by name or whose weights a forward reads; and what counts as a module's own parameter when it
is bypassed (a `ParameterList` it holds is a child, not its own)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found_in_package


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


class HubFolding(Folding):
    pass
"""


def test_self_forward_of_a_module_whose_parameters_sit_in_a_parameter_list_child_is_clean(tmp_path):
    # the list is a child module: skipping the module's own hooks skips no parameter of its own (nor of a subclass,
    # which inherits the member and the method)
    assert _found(tmp_path, SELF_FORWARD_LIST) == []


def test_self_forward_of_a_module_holding_a_large_parameter_of_its_own_is_flagged(tmp_path):
    # (one its forward reads: a parameter only a loss reads is not lost to `self.forward`, blind12's BERT4Rec)
    own = SELF_FORWARD_LIST.replace(
        "nn.ParameterList([nn.Parameter(torch.randn(4096, d)) for _ in constraints])", "nn.Parameter(torch.randn(4096, d))"
    ).replace("return self.trunk(x)", "return self.trunk(x) @ self.masks.t()")
    assert _found(tmp_path, own) == [("ZG302", 12)]
    unread = SELF_FORWARD_LIST.replace(
        "nn.ParameterList([nn.Parameter(torch.randn(4096, d)) for _ in constraints])", "nn.Parameter(torch.randn(4096, d))"
    )
    assert _found(tmp_path, unread) == []


# `.forward` by name on modules no constructor of the file names: a list another package's factory builds,
# `self.children()`, a local or loop variable bound to a part of a given model
FORWARD_BY_NAME = """
import torch
from torch import nn
from blocks import build_blocks

class Stack(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.blocks = build_blocks(cfg)
        self.heads = nn.ModuleDict()

    def add_head(self, name, head_class):
        self.heads[name] = head_class()

    def forward(self, x):
        for blk in self.blocks:
            x = blk.forward(x)
        for child in self.children():
            x = child.forward(x)
        return x


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = nn.Linear(d, 4096)
        self.blocks = nn.ModuleList([nn.Linear(d, 4096) for _ in range(3)])

    def forward(self, x):
        return self.encoder(x)


def encode(model: Net, x):
    enc = model.encoder
    return enc.forward(x)


def walk(model: Net, x):
    for blk in model.blocks:
        x = blk.forward(x)
    return x
"""


def test_forward_by_name_on_modules_of_no_named_class_is_flagged(tmp_path):
    assert _found(tmp_path, FORWARD_BY_NAME) == [
        ("ZG302", 17), ("ZG302", 19), ("ZG302", 35), ("ZG302", 40),
    ]


# the same shapes where the callee is no module of unknown class: a base class's forward run on this module, a
# parent's through `super(...)`, a setting, a local bound to a module that owns no parameter, a forward only
# inspected; and an item of a ModuleList of modules no constructor names (timm's `Sequential`s of layers, which own
# no parameter directly), left alone
FORWARD_BY_NAME_SAFE = """
import inspect
import torch
from torch import nn
from blocks import build_blocks, Base

class Stack(Base):
    def __init__(self, cfg):
        super().__init__()
        self.blocks = build_blocks(cfg)
        self.scale = cfg.scale
        self.downs = nn.ModuleList(self._make_downs(cfg))

    def forward(self, x):
        x = Base.forward(self, x)
        x = super(Stack, self).forward(x)
        x = nn.Linear.forward(self, x)
        for blk in self.blocks:
            assert "mask" in inspect.signature(blk.forward).parameters
        for down in self.downs:
            x = down.forward(x)
        for i, blk in enumerate(self.blocks):
            step: Interface = self.blocks[i]
            x = step.forward(x)
        return self.scale.forward(x)


@torch.jit.interface
class Interface(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


def activate(model, x):
    act = nn.GELU()
    return act.forward(x)
"""


def test_forward_by_name_on_a_base_class_a_setting_or_a_parameterless_module_is_clean(tmp_path):
    assert _found(tmp_path, FORWARD_BY_NAME_SAFE) == []


# weights read through the items of a ModuleDict whose modules no constructor of the file names
DICT_ITEMS = """
import torch
from torch import nn
from heads import make_head

class Heads(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = nn.ModuleDict({k: make_head(v) for k, v in cfg.items()})

    def forward(self, x):
        out = [x @ head.weight.T for head in self.heads.values()]
        for name, head in self.heads.items():
            out.append(x @ head.weight.T)
        return out
"""


def test_weights_read_through_the_values_and_items_of_a_module_dict_of_unnamed_modules_are_flagged(tmp_path):
    assert _found(tmp_path, DICT_ITEMS) == [("ZG301", 12), ("ZG301", 14)]


def test_the_same_modules_called_or_asked_only_for_their_dtype_are_clean(tmp_path):
    safe = DICT_ITEMS.replace("x @ head.weight.T", "head(x.to(head.weight.dtype))")
    assert _found(tmp_path, safe) == []


NETS = """
import torch
from torch import nn

class Actor(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, d)
        self.state_avg = nn.Parameter(torch.zeros(d, 4096), requires_grad=False)

    def forward(self, s):
        return self.net(s @ self.state_avg)

    def get_action(self, s):
        return self.net(s @ self.state_avg)

class Critic(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, 1)

    def forward(self, s):
        return self.net(s)

    def get_q(self, s):
        return self.net(s)

class TablePlanner(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(d, 4096))

    def forward(self, s):
        return s @ self.table

    def plan(self, s):
        return s @ self.table

class MlpPlanner(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mlp = nn.Linear(d, 4096)

    def forward(self, s):
        return self.mlp(s)

    def plan(self, s):
        return self.mlp(s)
"""

# a method called by name on the modules of a ModuleDict another method fills with what a factory builds: of the
# module classes the file imports, only `Actor` defines `get_action`, and it computes with its own statistics
TEAM = """
from torch import nn
from .nets import Actor, Critic, TablePlanner, MlpPlanner
from .factory import build

class Team(nn.Module):
    def __init__(self):
        super().__init__()
        self.members = nn.ModuleDict()

    def add(self, key, d):
        self.members[key] = build(d)

    def forward(self, s):
        return [m.get_action(s) for m in self.members.values()]
"""


def _found_in_package(tmp_path, model: str) -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"nets.py": NETS, "team.py": model}, "team.py", name="agents", prefix="ZG3")


def test_a_method_of_an_imported_module_class_called_on_an_item_of_a_module_dict_of_unnamed_modules(tmp_path):
    assert _found_in_package(tmp_path, TEAM) == [("ZG303", 15)]


def test_the_same_call_of_a_method_that_only_runs_children_is_clean(tmp_path):
    # `Critic.get_q` runs its Linear through `__call__`: its hooks gather
    assert _found_in_package(tmp_path, TEAM.replace("get_action", "get_q")) == []


def test_a_method_name_two_imported_classes_define_with_one_only_running_its_children_is_clean(tmp_path):
    # `plan` computes with its own table in one class and runs its Linear in the other: the name alone cannot tell
    assert _found_in_package(tmp_path, TEAM.replace("get_action", "plan")) == []


def test_forward_by_name_in_a_file_with_a_plain_class_defining_forward_is_clean(tmp_path):
    # a receiver of no named class may be the plain core (held as a class value, `core_class = PlainCore`), whose
    # `forward` runs no hook; the parts of a given `Net`, typed through its members, are still modules, and so are
    # the items of `self.children()`, which only ever hands out registered submodules
    plain = FORWARD_BY_NAME + """

class PlainCore:
    def forward(self, h):
        return h
"""
    assert _found(tmp_path, plain) == [("ZG302", 19), ("ZG302", 35), ("ZG302", 40)]


# `.forward` by name on what a local, a property, a conditional, an unpacking or the class's own call binds to an
# attribute of `self`: the attribute's value decides, as for `self.v.forward(...)` itself
BOUND_FROM_SELF = """
import torch
from torch import nn


def solve(fn, x):
    return fn(x)


class PlainCore:
    def __init__(self, d):
        self.table = torch.empty(4096, d)


class Holder(nn.Module):
    core_class = PlainCore

    def __init__(self, d, net):
        super().__init__()
        self.v = self.core_class(d)
        self.net = net

    @property
    def core(self):
        return self.v

    def forward(self, x, slow=False):
        v = self.v
        a = v.forward(x)
        b = solve(self.core.forward, x)
        w = self.v if slow else self.v
        c = w.forward(x)
        u, n = self.v, 2
        return self._run(self.v, a + b + c + u.forward(x))

    def _run(self, v, x):
        return v.forward(x)
"""


def test_forward_by_name_on_locals_properties_and_arguments_bound_to_a_plain_attribute_is_clean(tmp_path):
    # `self.v` holds an instance of a plain class: none of these is a module, whatever `.forward` they are asked for
    assert _found(tmp_path, BOUND_FROM_SELF) == []


def test_the_same_bound_to_an_attribute_holding_a_handed_in_module_is_flagged(tmp_path):
    handed = BOUND_FROM_SELF.replace("self.v = self.core_class(d)", "self.v = net")
    assert _found(tmp_path, handed) == [("ZG302", 29), ("ZG302", 30), ("ZG302", 32), ("ZG302", 34), ("ZG302", 37)]
