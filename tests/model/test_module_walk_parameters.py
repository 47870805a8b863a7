"""A module's own parameters (`recurse=False`) walked item by item over a handed model's `modules()` are the model's.

`for module, ema_module in zip(new_model.modules(), self.averaged_model.modules())` then
`for param, ema_param in zip(module.parameters(recurse=False), ...)` (diffusion_policy's EMA update) reads and
writes every parameter of both models, one module at a time, outside any forward: ZG109 for the reads, ZG101 for the
writes. The function an `apply` is handed, walking its module's own parameters, is not judged in its own body: what
`apply` gathers around it is the call's question.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

EMA = """
import torch
import torch.nn as nn


class EMAModel:
    def __init__(self, model):
        self.averaged_model = model
        self.decay = 0.99

    @torch.no_grad()
    def step(self, new_model):
        for module, ema_module in zip(new_model.modules(), self.averaged_model.modules()):
            for param, ema_param in zip(module.parameters(recurse=False), ema_module.parameters(recurse=False)):
                ema_param.mul_(self.decay)
                ema_param.add_(param.data, alpha=1 - self.decay)


def init_fn(module):
    for param in module.parameters(recurse=False):
        nn.init.normal_(param, std=0.02)


def build(net):
    net.apply(init_fn)
    return net
"""


def test_own_parameters_of_each_walked_module_are_the_handed_models(tmp_path):
    found = found_in_package(tmp_path, {"ema.py": EMA}, "ema.py", prefix="ZG1")
    assert ("ZG109", 16) in found and ("ZG101", 15) in found
    assert not any(line in (20, 21) for _code, line in found)  # (the `apply` function's own parameters)


FREEZE = """
class Agent:
    def freeze_all_but_output_layers(self, network):
        for param in network.named_parameters():
            param_name = param[0]
            assert "hidden" in param_name or "output" in param_name
            if "output" not in param_name:
                param[1].requires_grad = False

    def log_weights(self, network):
        for param in network.named_parameters():
            print(param[0], param[1].data.norm())
"""


def test_a_named_parameter_pair_read_for_its_name_reads_no_value(tmp_path):
    # `param[0]` is the name and `param[1].requires_grad` a flag; `param[1].data` reads the parameter
    assert found_in_package(tmp_path, {"agent.py": FREEZE}, "agent.py", prefix="ZG1") == [("ZG109", 12)]
