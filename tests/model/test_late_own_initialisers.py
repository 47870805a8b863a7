"""A module's own re-initialiser that its `__init__` never runs (`reset_parameters` copying defaults into
`self.means.data`) is not reported where it is defined: a runtime building the model on `meta` calls it with the
module's parameters materialised; a parent or the training code calling it on the built model is reported at that
call. (h-z1own reported the definition; withdrawn: it flagged the bundled Llama example's `RMSNorm`.) Look-alikes:
the method run by a subclass's `__init__` of the file on the object it builds, an override of the method torch's
layer constructor calls (`class Dense(nn.Linear)`), a base of another file whose `__init__` calls it, and one
the own `__init__` calls (`test_built_modules.LATE_SAFE` holds more)."""

from __future__ import annotations

from tests.model.package_check import found_in_package

RBF = """
    import torch
    from torch import nn


    class ExpNormal(nn.Module):
        def __init__(self, n, trainable=True):
            super().__init__()
            self.n = n
            means = torch.linspace(0, 1, n)
            if trainable:
                self.register_parameter("means", nn.Parameter(means))
            else:
                self.register_buffer("means", means)

        def reset_parameters(self):
            self.means.data.copy_(torch.linspace(0, 1, self.n))

        def forward(self, x):
            return x - self.means


    class Dense(nn.Linear):
        def reset_parameters(self):
            nn.init.zeros_(self.weight)


    class Own(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = nn.Parameter(torch.empty(n))
            self.reset_parameters()

        def reset_parameters(self):
            nn.init.zeros_(self.w)

        def forward(self, x):
            return x * self.w
"""

BASE = """
    import torch
    from torch import nn


    class Layer(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = nn.Parameter(torch.empty(n, 4096))
            self.reset_parameters()

        def reset_parameters(self):
            pass
"""

SUB = """
    import torch
    from torch import nn
    from .base import Layer


    class Scaled(Layer):
        def reset_parameters(self):
            nn.init.ones_(self.w)

        def forward(self, x):
            return x @ self.w
"""


def test_own_parameters_written_by_the_own_reinitialiser_are_left_alone(tmp_path):
    # a module's own `reset_parameters` is the re-initialiser a runtime building the model on `meta` calls with the
    # module's parameters materialised (zgen's own runtime does: `zgen/runtime/own_init.py`); a call of it on the
    # built model elsewhere is what ZG103 reports, at that call
    assert found_in_package(tmp_path, {"rbf.py": RBF}, "rbf.py", prefix="ZG1") == []


LOCAL_BASE = """
    import torch
    from torch import nn


    class ConvLoRA(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lora_A = nn.Parameter(torch.empty(n, 4096))
            self.reset_parameters()

        def reset_parameters(self):
            nn.init.zeros_(self.lora_A)

        def forward(self, x):
            return x @ self.lora_A


    class Conv2d(ConvLoRA):
        def __init__(self, n):
            super(Conv2d, self).__init__(n)
"""


def test_method_a_base_of_the_file_calls_in_init_is_clean(tmp_path):
    assert found_in_package(tmp_path, {"lora.py": LOCAL_BASE}, "lora.py", prefix="ZG1") == []


def test_override_of_a_method_a_base_of_another_file_calls_in_init_is_clean(tmp_path):
    assert found_in_package(tmp_path, {"base.py": BASE, "sub.py": SUB}, "sub.py", prefix="ZG1") == []
