"""Objects handed a walk of a built model's parameters, and initialisers a list of rules pairs with names.

* A class that is no module, constructed with a model's parameters (`EMA(model.parameters())`,
  `MovingAverage(model.named_parameters())`), keeps those parameters: its constructor's `p.data.clone()` and its
  methods' `shadow.add_(p)` / `p.data.copy_(shadow)` read or write partitioned placeholders (ZG109 / ZG101). The
  argument is such a walk when annotated as an iterable of `Parameter`, or named as parameters and iterated where
  it is kept. Look-alikes: an optimizer (ZeRO-3 hands it partitions), a setting named `params` (a dict), a module's
  constructor.
* A tensor method computing with a parameter (`shadow.mul_(d).add_(p, alpha=1 - d)`, `t.lerp_(p, w)`) reads its
  values, as an operator would; a function of `torch.nn.utils` given it does not by that alone.
* A callable taken from a list of rules (`for regex, init in rules: ... init(p)`), called on a parameter as a statement,
  is an initialiser: a function that runs it over a module's parameters, run on `self` at the end of a constructor,
  writes the children's placeholders (ZG103). Look-alike: the result of the callable is used (a score, not a write).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _codes(source: str, prefix: str = "ZG1") -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith(prefix)]


AVERAGE = """
import torch
from torch import nn


class MovingAverage:
    def __init__(self, parameters, decay=0.999):
        self._parameters = list(parameters)
        self._decay = decay
        self._shadows = {name: p.data.clone() for name, p in self._parameters}

    def apply(self):
        for name, p in self._parameters:
            self._shadows[name].mul_(self._decay).add_(p, alpha=1 - self._decay)

    def assign_average_value(self):
        for name, p in self._parameters:
            p.data.copy_(self._shadows[name])


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.average = MovingAverage(model.named_parameters())
"""


def test_an_average_kept_over_a_parameter_walk_reads_and_writes_placeholders():
    found = _codes(AVERAGE)
    assert (10, "ZG109") in found  # the constructor clones the placeholders
    assert (14, "ZG109") in found  # `add_(p, ...)` reads each one
    assert (18, "ZG101") in found  # copying the average back writes them


ANNOTATED = """
from typing import Iterable

import torch


class Shadow:
    def __init__(self, weights: Iterable[torch.nn.Parameter]):
        self.weights = list(weights)
        self.copies = [w.detach().clone() for w in self.weights]
"""


def test_an_argument_annotated_as_parameters_is_a_walk_whatever_its_name():
    assert (10, "ZG109") in _codes(ANNOTATED)


LOOKALIKES = """
import torch
from torch import nn


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4):
        super().__init__(params, dict(lr=lr))
        self.snapshots = [p.data.clone() for p in params if False]

    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.data.add_(p.grad, alpha=-group["lr"])


class Schedule:
    def __init__(self, params: dict):
        self.values = {k: v for k, v in params.items()}
        self.base = [v.clone() for v in params.values()] if False else []


class Gain(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.gains = nn.ParameterList([nn.Parameter(p.detach().clone()) for p in params])

    def forward(self, x):
        return x * self.gains[0]
"""


def test_an_optimizer_a_setting_dict_and_a_module_are_no_average():
    assert _codes(LOOKALIKES) == []


def test_collecting_a_parameter_is_no_value_read_where_a_tensor_method_computing_with_it_is():
    source = """
    def collect(model, shadow):
        kept = []
        for p in model.parameters():
            kept.append(p)
        for s, p in zip(shadow, model.parameters()):
            s.lerp_(p, 0.01)
        return kept
    """
    assert _codes(source) == [(7, "ZG109")]


RULES = """
import re
from torch import nn


def initialise(module, rules):
    for name, p in module.named_parameters():
        for regex, init in rules:
            if re.search(regex, name):
                init(p)


def scores(module, rules):
    found = []
    for name, p in module.named_parameters():
        for regex, score in rules:
            found.append(score(p))
    return found


class Tagger(nn.Module):
    def __init__(self, rules):
        super().__init__()
        self.proj = nn.Linear(1024, 1024)
        initialise(self, rules)

    def forward(self, x):
        return self.proj(x)


class Scored(nn.Module):
    def __init__(self, rules):
        super().__init__()
        self.proj = nn.Linear(1024, 1024)
        self.found = scores(self, rules)

    def forward(self, x):
        return self.proj(x)
"""


def test_an_initialiser_from_a_list_of_rules_run_on_self_writes_the_built_children():
    found = _codes(RULES)
    assert (25, "ZG103") in found  # `initialise(self, rules)` after `self.proj` was built
    assert not any(line in (15, 16, 34) for line, _code in found)  # a score is computed, nothing written


NORMS = """
import torch
from torch import nn


class Folder(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.trunk(x)

    def parameter_norm(self, module):
        return torch.stack([p.norm(p=2) ** 2 for p in module.parameters() if p.requires_grad]).sum().sqrt()

    def describe(self, module):
        return [p.requires_grad for p in module.parameters()]


def write_histograms(writer, modules, step):
    for module_name, module in modules.items():
        for name, parameter in module.named_parameters():
            writer.add_histogram(f"{module_name}/{name}", parameter, global_step=step)
"""


def test_a_built_models_method_reading_the_module_it_is_handed_and_a_histogram_of_parameters_read_values():
    found = _codes(NORMS)
    assert (15, "ZG109") in found  # `p.norm()` over what `self.parameter_norm(self)` is handed
    assert not any(line == 18 for line, _code in found)  # flags only
    assert (24, "ZG109") in found  # the histogram bins each parameter's values


SUBCLASSED = """
from torch import nn
from torch.optim.swa_utils import AveragedModel as TorchAveragedModel


class AveragedModel(TorchAveragedModel):
    def __init__(self, model, decay=0.999):
        super().__init__(model)
        self.decay = decay


class Averages:
    def __init__(self, model, decay):
        self.decay = decay


class Unit:
    def __init__(self, module: nn.Module):
        self.module = module
        self.swa_model = AveragedModel(module, decay=0.99)
        self.plain = Averages(module, 0.99)
"""


def test_a_program_class_deriving_from_a_library_weight_average_copies_the_model_it_is_built_over():
    found = _codes(SUBCLASSED)
    assert (20, "ZG105") in found and not any(line == 21 for line, _code in found)
