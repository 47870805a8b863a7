"""Reading `self.<name>` for a `@property` of the class runs its getter where it is read (`program.index.ClassInfo.
reachable`): a property the forward reads is part of the forward, where the module's own parameters are gathered,
not an entry point the training loop calls. A property handing back the tensors of a `ParameterList`/`ParameterDict`
child, as is or regrouped by the calls it hands the container to whole (`dict(zip(self.names, self.ws))`,
`TensorDict(...)`), stands for that container where it is read (`params.property_container`): a child module nobody
calls, whose tensors no hook gathers (ZG301)."""

from __future__ import annotations

from package_check import found_in_package

DICT_PROPERTY = """
import torch
from torch import nn


class Memory(nn.Module):
    def __init__(self, d=1024, n=3):
        super().__init__()
        self.names = [f"w{i}" for i in range(n)]
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for _ in range(n)])

    @property
    def weight_dict(self):
        return dict(zip(self.names, self.ws))

    def init_weights(self, batch):
        return {k: v.expand(batch, -1, -1) for k, v in self.weight_dict.items()}

    def forward(self, x):
        weights = self.init_weights(x.shape[0])
        return x @ weights["w0"]
"""

LIST_PROPERTY = """
import torch
from torch import nn


class Memory(nn.Module):
    def __init__(self, d=1024, n=3):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for _ in range(n)])

    @property
    def weights(self):
        return list(self.ws)

    @property
    def held(self):
        return self.ws

    def momentum(self):
        return [p.clone().zero_() for p in self.held]

    def forward(self, x):
        for w in self.weights:
            x = x @ w
        return x @ self.momentum()[0]
"""

IN_FILE_BASE = """
import torch
from torch import nn


class MemoryBase(nn.Module):
    def __init__(self, d=1024, n=3):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for _ in range(n)])

    @property
    def weights(self):
        return list(self.ws)


class Memory(MemoryBase):
    def forward(self, x):
        for w in self.weights:
            x = x @ w
        return x
"""

# A property over the module's own parameter, one reading only the length, one reading only dtypes, one over a
# container of vectors (kept gathered), and the names of a regrouped container: nothing read ungathered.
LOOK_ALIKES = """
import torch
from torch import nn


class Own(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d))

    @property
    def weight_t(self):
        return self.w.t()

    def forward(self, x):
        return x @ self.weight_t


class Sized(nn.Module):
    def __init__(self, d=1024, n=3):
        super().__init__()
        self.names = [f"w{i}" for i in range(n)]
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(d, d)) for _ in range(n)])
        self.lin = nn.Linear(d, d)

    @property
    def depth(self):
        return len(self.ws)

    @property
    def dtypes(self):
        return [p.dtype for p in self.ws]

    @property
    def weight_dict(self):
        return dict(zip(self.names, self.ws))

    def forward(self, x):
        x = x.to(self.dtypes[0])
        for _ in range(self.depth):
            x = self.lin(x)
        for _ in self.weight_dict.keys():
            x = self.lin(x)
        return x


class Gains(nn.Module):
    def __init__(self, d=64, n=3):
        super().__init__()
        self.gs = nn.ParameterList([nn.Parameter(torch.ones(d)) for _ in range(n)])

    @property
    def gains(self):
        return list(self.gs)

    def forward(self, x):
        for g in self.gains:
            x = x * g
        return x
"""


def test_a_property_regrouping_a_parameter_list_is_read_where_the_forward_reads_it(tmp_path):
    assert found_in_package(tmp_path, {"model.py": DICT_PROPERTY}, "model.py", prefix="ZG3") == [("ZG301", 17)]


def test_a_property_returning_the_list_as_is_or_listed(tmp_path):
    assert found_in_package(tmp_path, {"model.py": LIST_PROPERTY}, "model.py", prefix="ZG3") == [
        ("ZG301", 20), ("ZG301", 24),
    ]


def test_a_property_and_its_container_of_an_in_file_base(tmp_path):
    assert found_in_package(tmp_path, {"model.py": IN_FILE_BASE}, "model.py", prefix="ZG3") == [("ZG301", 19)]


def test_properties_the_forward_reads_run_in_it(tmp_path):
    # on main: ZG109 in `weight_t` (an own parameter read "outside any forward") and ZG102 for `len(self.ws)`; the
    # gains `Gains` reads through its property are a list no hook gathers, small as they are (ZG301)
    assert found_in_package(tmp_path, {"model.py": LOOK_ALIKES}, "model.py") == [("ZG301", 58)]
