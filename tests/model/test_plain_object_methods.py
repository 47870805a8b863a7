"""A built model handed to a method of another plain object of the program, or to its constructor (eleventh
session, h-zg1obj).

`self.lagged.add(self.model)` with `self.lagged = Lagged()` built in `__init__`, `lag.add(model)` of a local
bound to `Lagged()` or an argument annotated `Lagged`, and `Ema(model)`: the class lives in another file, whose
reading cannot tell what it is handed. `effects.resolve_function` finds the method through the receiver's class
(`plain.named_instances`) and a construction's `__init__` (`plain.plain_class`), so the function's summary
(`module_arg_effects`: copies, writes, state dicts, clips) says what the call does to the model, also through a
helper method of that class (`self._copy(model)`) or a function it hands the model on to. Each is ZG105 at the
call; a method or constructor that only keeps the model is clean."""

from __future__ import annotations

from package_check import found_in_package

HELPERS = """
import copy

import torch


def clone(net):
    return copy.deepcopy(net)


class Lagged:
    def __init__(self):
        self.pairs = []

    def add(self, model):
        self.pairs.append((model, copy.deepcopy(model)))

    def add_through(self, model):
        self.pairs.append((model, self._copy(model)))

    def add_handed(self, model):
        self.pairs.append((model, clone(model)))

    def _copy(self, model):
        return copy.deepcopy(model)

    def keep(self, model):
        self.pairs.append((model, None))


class Ema:
    def __init__(self, model, decay=0.999):
        self.decay = decay
        self.shadow = copy.deepcopy(model)


class Keeper:
    def __init__(self, model):
        self.model = model

class BaseInit:
    def __call__(self, module):
        for p in module.parameters():
            torch.nn.init.zeros_(p)


class Zeros(BaseInit):
    pass


class Normal:
    def __init__(self, std):
        self.std = std

    def __call__(self, module):
        for p in module.parameters():
            torch.nn.init.normal_(p, std=self.std)


class Namer:
    def __call__(self, module):
        return type(module).__name__


class Tracker:
    def __init__(self, decay=0.99):
        self.decay = decay
        self.shadow = {}

    def update(self, model):
        for n, p in model.named_parameters():
            self.shadow[n] = p.data.clone() * (1 - self.decay)

    def name(self, model):
        return type(model).__name__
"""


def _found(tmp_path, text: str) -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"helpers.py": HELPERS, "agent.py": text}, "agent.py")


HANDED = """
from . import helpers
from .helpers import Ema, Lagged


class Agent:
    def __init__(self, model):
        self.model = model
        self.lagged = Lagged()
        self.lagged.add(self.model)
        self.ema = Ema(self.model)

    def refresh(self):
        self.lagged.add_through(self.model)

    def refresh_handed(self):
        self.sync()

    def sync(self):
        self.lagged.add_handed(self.model)


class Given:
    def __init__(self, model, lagged: Lagged):
        self.model = model
        self.lagged = lagged

    def setup(self):
        self.lagged.add(self.model)


def train(model):
    lag = helpers.Lagged()
    lag.add(model)
    ema = helpers.Ema(model)
    return lag, ema


def attach(lag: Lagged, model):
    lag.add(model)
"""


def test_a_model_handed_to_another_objects_method_or_constructor_that_copies_it(tmp_path):
    found = _found(tmp_path, HANDED)
    assert sorted(line for code, line in found if code == "ZG105") == [10, 11, 14, 20, 29, 34, 35, 40]


HANDED_SAFE = """
from .helpers import Keeper, Lagged


class Agent:
    def __init__(self, model):
        self.model = model
        self.lagged = Lagged()
        self.lagged.keep(self.model)
        self.keeper = Keeper(self.model)


def train(model):
    lag = Lagged()
    lag.keep(model)
    return lag, Keeper(model)
"""


def test_a_method_or_constructor_that_only_keeps_the_model_is_clean(tmp_path):
    assert _found(tmp_path, HANDED_SAFE) == []


# A built model handed to a plain object the program keeps, reached as the object itself or as an item of a list or
# dict of them (twelfth session, h-zg1join): `self.initializer(self.model)` runs `Init.__call__` (of its class or a
# base in another file); `for tracker in self.trackers: tracker.update(self.model)`, `tracker = self.trackers[i]` and
# `for name, tracker in self.by_name.items()` run the method of the class the list, dict or comprehension built its
# items with (`plain.named_instances`). A `__call__` or method that never touches the parameters is clean, and so is a
# model built at the call's side.

CALLED = """
from .helpers import Normal, Tracker, Zeros


class Agent:
    def __init__(self, model, init: Normal):
        self.model = model
        self.init = init
        self.zeros = Zeros()
        self.trackers = [Tracker(), Tracker(0.9)]
        self.by_name = {"fast": Tracker(0.5)}
        self.made = [Tracker(d) for d in (0.9, 0.99)]

    def reset(self):
        self.init(self.model)
        self.zeros(self.model)

    def step(self, i):
        for tracker in self.trackers:
            tracker.update(self.model)
        tracker = self.trackers[i]
        tracker.update(self.model)
        for name, tracker in self.by_name.items():
            tracker.update(self.model)
        for tracker in self.made:
            tracker.update(self.model)


def train(model):
    initializer = Normal(0.02)
    initializer(model)
"""


def test_a_held_object_called_or_an_item_of_a_list_of_them_given_the_model(tmp_path):
    found = _found(tmp_path, CALLED)
    assert sorted(line for code, line in found if code == "ZG101") == [15, 16, 31]
    assert sorted(line for code, line in found if code == "ZG109") == [20, 22, 24, 26]


CALLED_SAFE = """
from torch import nn

from .helpers import Namer, Normal, Tracker


class Agent:
    def __init__(self, model):
        self.model = model
        self.namer = Namer()
        self.trackers = [Tracker(), Tracker(0.9)]

    def report(self):
        for tracker in self.trackers:
            tracker.name(self.model)
        return self.namer(self.model)


def build():
    model = nn.Linear(4, 4)
    initializer = Normal(0.02)
    initializer(model)
    return model
"""


def test_a_held_object_that_never_touches_the_parameters_or_a_model_built_here_is_clean(tmp_path):
    assert _found(tmp_path, CALLED_SAFE) == []
