"""ZG101/ZG109 on the parameters a torch layer base registers, in a method run on the built model (h-ft, adapters
merged into the layer they subclass): `self.weight` in a method of `class LoraLinear(nn.Linear)`, and in a mixin's
method when every module class of the file deriving from the mixin derives from a torch layer too (`class
LoraLinear(LoraMixin, nn.Linear)`), `params.layer_base_params`. Beside them, the look-alikes: the same parameter
read in the class's own forward, initialised in its `__init__` or `reset_parameters`, or asked for its dtype."""

from __future__ import annotations

from package_check import found_in_package

LAYERS = """
import torch.nn.functional as F
from torch import nn


class LoraMixin(nn.Module):
    def merge(self, delta):
        self.weight.data = self.weight.data + delta                  # 8: a mixin of torch layers

    def describe(self):
        return self.weight.dtype, self.weight.device


class LoraLinear(LoraMixin, nn.Linear):
    def __init__(self, i, o):
        nn.Linear.__init__(self, i, o)
        nn.init.zeros_(self.weight)

    def fold(self, delta):
        self.weight.data += delta                                    # 20: a subclass of nn.Linear

    def reset_parameters(self):
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return F.linear(x, self.weight * 2.0, self.bias)
"""


def test_layer_base_parameters_are_partitioned_in_methods_run_on_the_built_model(tmp_path):
    found = found_in_package(tmp_path, {"layers.py": LAYERS}, "layers.py", prefix="ZG1")
    assert ("ZG101", 8) in found
    assert ("ZG101", 20) in found


def test_layer_base_parameters_in_forward_init_and_metadata_stay_clean(tmp_path):
    found = found_in_package(tmp_path, {"layers.py": LAYERS}, "layers.py")
    assert {line for _, line in found} <= {8, 20}
