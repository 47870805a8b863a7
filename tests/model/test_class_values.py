"""Receivers typed through classes held as values and bound methods used as values (issue 20, h-duck).

`self.act = self.act_class(d)` builds whatever class the family puts in `act_class` (a class body, a subclass's
`__init__` before the base's, `getattr(self, "act_class", Default)`, a module-level registry); a bound method kept
in a local, looked up by name, kept in a tuple or handed on runs on its receiver like the plain call."""

from __future__ import annotations

from package_check import found_in_package

NETS = """
import torch
from torch import nn

class Actor(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Linear(d, 4096)
        self.state_avg = nn.Parameter(torch.zeros(4096, d))

    def forward(self, s):
        return self.net(s)

    def get_action(self, s):
        return self.net((s - self.state_avg.mean(0)))

class PlainPolicy:
    def __init__(self, d):
        self.state_avg = torch.zeros(4096, d)

    def get_action(self, s):
        return s - self.state_avg.mean(0)
"""

BASE = """
import torch

class AgentBase:
    def __init__(self, d):
        act_class = getattr(self, "act_class", None)
        self.act = act_class(d).to("cpu")
        self.act_target = self.act
"""


def _found(tmp_path, files: dict[str, str], checked: str = "model.py") -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"nets.py": NETS, **files}, checked, name="agents")


SUBCLASS_SETS_CLASS = """
from copy import deepcopy
from .base import AgentBase
from .nets import Actor

class AgentPG(AgentBase):
    def __init__(self, d):
        self.act_class = getattr(self, "act_class", Actor)
        super().__init__(d)
        self.act_target = deepcopy(self.act)

    def update(self, s):
        return self.act.get_action(s)
"""


def test_a_base_of_another_file_builds_the_class_a_subclass_sets(tmp_path):
    found = _found(tmp_path, {"base.py": BASE, "model.py": SUBCLASS_SETS_CLASS})
    assert ("ZG303", 13) in found  # the actor's non-forward method reads its own parameter
    assert ("ZG105", 10) in found  # the target is a deep copy of the built actor


def test_a_plain_class_held_as_the_value_is_no_module(tmp_path):
    model = SUBCLASS_SETS_CLASS.replace("import Actor", "import PlainPolicy").replace('"act_class", Actor', '"act_class", PlainPolicy')
    found = _found(tmp_path, {"base.py": BASE, "model.py": model})
    assert not [f for f in found if f[0].startswith(("ZG3", "ZG105"))]


CLASS_BODY = """
from .nets import Actor, PlainPolicy

NETS = {"actor": Actor}

class Agent:
    act_class = Actor

    def __init__(self, d, kind, cri_cls=Actor):
        self.act = self.act_class(d)
        self.cri = cri_cls(d)
        self.aux = NETS[kind](d)

    def explore(self, s):
        return self.act.get_action(s) + self.cri.get_action(s) + self.aux.get_action(s)
"""


def test_a_class_attribute_an_argument_default_and_a_registry(tmp_path):
    found = _found(tmp_path, {"model.py": CLASS_BODY})
    assert found.count(("ZG303", 15)) == 3  # the three receivers of the line, each typed by its own value


def test_the_same_values_naming_a_plain_class_stay_clean(tmp_path):
    model = CLASS_BODY.replace("act_class = Actor", "act_class = PlainPolicy").replace("cri_cls=Actor", "cri_cls=PlainPolicy")
    model = model.replace('{"actor": Actor}', '{"actor": PlainPolicy}')
    assert not [f for f in _found(tmp_path, {"model.py": model}) if f[0].startswith("ZG3")]


BOUND = """
from .nets import Actor

def solve(fn, x):
    return fn(x)

class Agent:
    def __init__(self, d):
        self.act = Actor(d)

    def kept(self, s):
        get_action = self.act.get_action
        return get_action(s)

    def looked_up(self, s):
        return getattr(self.act, "get_action")(s)

    def in_a_tuple(self, s):
        fns = (self.act.get_action, self.act.get_action)
        return fns[0](s)

    def handed(self, s):
        return solve(self.act.get_action, s)

    def run_as_module(self, s):
        f = self.act
        return f(s)

    def hook(self):
        self.act.register_forward_hook(self.act.get_action)

    def present(self, s):
        f = self.act.get_action
        return exists(f) and exists(self.act.get_action)

def exists(v):
    return v is not None
"""


def test_bound_methods_as_values_run_on_their_receiver(tmp_path):
    found = [line for code, line in _found(tmp_path, {"model.py": BOUND}) if code == "ZG303"]
    # not the module called whole, a method kept as a hook, nor one handed to a presence test
    assert found == [13, 16, 20, 23]


BASE_EXPLORES = BASE + """
    def explore(self, s):
        get_action = self.act.get_action
        return get_action(s)
"""


def test_a_base_leaving_the_class_to_subclasses_learns_it_from_its_package(tmp_path):
    files = {"base.py": BASE_EXPLORES, "model.py": SUBCLASS_SETS_CLASS}
    assert ("ZG303", 12) in _found(tmp_path, files, checked="base.py")  # AgentPG beside it sets an Actor


def test_a_base_whose_package_subclasses_set_a_plain_class_stays_clean(tmp_path):
    model = SUBCLASS_SETS_CLASS.replace("import Actor", "import PlainPolicy").replace('"act_class", Actor', '"act_class", PlainPolicy')
    files = {"base.py": BASE_EXPLORES, "model.py": model}
    assert not [f for f in _found(tmp_path, files, checked="base.py") if f[0].startswith("ZG3")]


MATCHED = """
from .nets import Actor

class Holder:
    def __init__(self, d, net: Actor):
        match d:
            case 1:
                self.net = net
            case _:
                self.net = net

    def run(self, s):
        return self.net.get_action(s)
"""


def test_an_attribute_bound_in_the_cases_of_a_match_statement_is_typed(tmp_path):
    assert ("ZG303", 13) in _found(tmp_path, {"model.py": MATCHED})  # read through each case's body
