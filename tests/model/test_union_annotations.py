"""An argument annotated as a union whose alternatives include a module is a module argument.

`rgb_model: Union[nn.Module, Dict[str, nn.Module]]` (diffusion_policy's image encoder) is one module or a mapping of
them; deep-copying it in a constructor copies a model built (and, under `zero.Init`, partitioned) before: ZG105. An
argument annotated as a union of plain values (`Union[int, Dict[str, int]]`) is no module.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

ENCODER = """
import copy
from typing import Dict, Union

import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, rgb_model: Union[nn.Module, Dict[str, nn.Module]], keys):
        super().__init__()
        self.maps = nn.ModuleDict()
        for key in keys:
            self.maps[key] = copy.deepcopy(rgb_model)


class Sizes(nn.Module):
    def __init__(self, shapes: Union[int, Dict[str, int]], keys):
        super().__init__()
        self.shapes = {key: copy.deepcopy(shapes) for key in keys}
        self.fc = nn.Linear(4, 4)
"""


def test_a_module_alternative_of_a_union_makes_a_module_argument(tmp_path):
    assert found_in_package(tmp_path, {"enc.py": ENCODER}, "enc.py", prefix="ZG1") == [("ZG105", 13)]
