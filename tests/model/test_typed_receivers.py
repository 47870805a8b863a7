"""ZG3 on any value `instances` types as a module (issue 20, h-qzg3): a loop variable over a container of typed
children (`for v in self.heads.values()`), a `@property` or local bound to an annotated child, handed to `.forward`
or to a method of it; and `self.forward` from another method only where the module holds a parameter ZeRO-3 does not
keep gathered."""

from __future__ import annotations

from package_check import found_in_package

LIB = """
import torch
from torch import nn

class Base(nn.Module):
    def attend(self, h):
        raise NotImplementedError

class Table(Base):
    def __init__(self, d):
        super().__init__()
        self.table = nn.Parameter(torch.empty(4096, d))
        self.gain = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x @ self.table.T

    def attend(self, h):
        return h @ self.table.T

    def scaled(self, h):
        return h * self.gain

class Gain(Base):
    def __init__(self, d):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(d))
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x) * self.gain

    def attend(self, h):
        return h * self.gain
"""


def _found(tmp_path, model: str) -> list[tuple[str, int]]:
    return found_in_package(tmp_path, {"parts.py": LIB, "model.py": model}, "model.py", name="lib", prefix="ZG3")


# a holder whose child only an annotation types, also kept in a ModuleDict
HEADS = """
from torch import nn
from .parts import Base

class Heads(nn.Module):
    def __init__(self, d, build):
        super().__init__()
        self.text: Base = build(d)
        self.heads = nn.ModuleDict({"text": self.text})
"""

LOOP = HEADS + """
    def forward(self, x):
        for name, head in self.heads.items():
            x = head.attend(x)
        return x
"""


def test_a_loop_variable_over_a_module_dict_of_an_annotated_child_is_typed_by_it(tmp_path):
    # the annotation names the base; its subclass of the package reads a 4096-row table in `attend`
    assert _found(tmp_path, LOOP) == [("ZG303", 13)]


def test_the_loop_variable_called_as_a_module_is_clean(tmp_path):
    assert _found(tmp_path, LOOP.replace("head.attend(x)", "head(x)")) == []


FORWARD = """
from torch import nn
from .parts import Table

class Wrapper(nn.Module):
    def __init__(self, inner: Table):
        super().__init__()
        self.inner = inner
        self.layers = nn.ModuleList([self.inner])

    @property
    def core(self):
        return self.inner

    def forward(self, x):
        x = self.core.forward(x)
        for layer in self.layers:
            x = layer.forward(x)
        return x
"""


def test_forward_by_name_on_a_property_and_on_a_loop_variable_of_a_typed_child(tmp_path):
    assert _found(tmp_path, FORWARD) == [("ZG302", 16), ("ZG302", 18)]


def test_forward_by_name_on_a_typed_child_holding_only_small_parameters_is_clean(tmp_path):
    # `Gain` holds a vector ZeRO-3 keeps gathered, and a Linear child whose own hook still runs
    assert _found(tmp_path, FORWARD.replace("Table", "Gain")) == []


SELF_FORWARD = """
import torch
from torch import nn

class Unet(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.null = nn.Parameter(torch.randn(1, d))
        self.proj = nn.Linear(d, d)

    def guided(self, x, scale=2.0):
        cond = self.forward(x, drop=0.0)
        null = self.forward(x, drop=1.0)
        return null + (cond - null) * scale

    def forward(self, x, drop=0.0):
        return self.proj(x) + self.null
"""


def test_self_forward_of_a_module_holding_only_a_small_parameter_is_flagged_too(tmp_path):
    # the null embedding (1 x d) would stay gathered once a hook of `Unet` fetched it, but `guided` runs outside any
    # forward and skips those hooks: nothing has fetched it (the Linear child still runs as a module)
    assert _found(tmp_path, SELF_FORWARD) == [("ZG302", 12), ("ZG302", 13)]


def test_self_forward_of_a_module_holding_a_large_parameter_is_flagged(tmp_path):
    large = SELF_FORWARD.replace("torch.randn(1, d)", "torch.randn(4096, d)")
    assert _found(tmp_path, large) == [("ZG302", 12), ("ZG302", 13)]


READS = HEADS + """
    def forward(self, x):
        for head in self.heads.values():
            x = x @ head.table.T
        return self._run(self.text, x) + project(self.heads["text"], x)

    def _run(self, v, x):
        return v.attend(x)


def project(emb, h):
    return h @ emb.table.T + emb.attend(h)
"""


def test_parameters_and_methods_of_typed_children_through_loops_arguments_and_functions_the_forward_calls(tmp_path):
    # a loop variable's table (ZG301), a method's argument the class binds to the child (ZG303), and a function
    # of the file the forward hands an element of the container to (ZG301 and ZG303)
    assert _found(tmp_path, READS) == [("ZG301", 13), ("ZG303", 17), ("ZG301", 21), ("ZG303", 21)]


def test_the_same_reads_of_a_small_parameter_or_of_the_child_run_as_a_module_are_clean(tmp_path):
    safe = READS.replace(".table.T", ".gain").replace("v.attend(x)", "v(x)").replace("emb.attend(h)", "emb(h)")
    assert _found(tmp_path, safe) == []


HANDED_IN = """
from torch import nn
from .parts import Gain

class Block(nn.Module):
    def __init__(self, inner: Gain):
        super().__init__()
        self.inner = inner
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) * self.inner.gain

    def gained(self, x):
        return self.inner(x)
"""


def test_a_small_parameter_of_a_child_handed_in_with_an_annotated_class_is_kept_gathered(tmp_path):
    # the members cannot tell the child's class; the annotation can: `gain` is a vector ZeRO-3 keeps gathered (the
    # child runs in `gained`, so its hook has gathered it once)
    assert _found(tmp_path, HANDED_IN) == []
    assert _found(tmp_path, HANDED_IN.replace("Gain", "Table").replace(".gain", ".table.sum()")) == [("ZG301", 12)]


PLAIN = """
from .parts import Base

class Sampler:
    def __init__(self, model: Base):
        self.model = model

    def step(self, x):
        return x @ self.model.table.T, self.model.forward(x)
"""


def test_a_plain_holder_reading_or_bypassing_an_annotated_model(tmp_path):
    assert _found(tmp_path, PLAIN) == [("ZG301", 9), ("ZG302", 9)]
    assert _found(tmp_path, PLAIN.replace("self.model.table.T", "self.model.gain").replace(".forward(x)", "(x)")) == []


LOCK = """
import torch
from torch import nn

class Tower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.pos = nn.Parameter(torch.empty(4096, d))
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x) + self.pos.sum()

    def lock(self, unlocked=0):
        for p in self.parameters():
            p.requires_grad = False
        groups = [[self.pos, self.proj], self.proj]

        def _unlock(x):
            if isinstance(x, list):
                for g in x:
                    _unlock(g)
            elif isinstance(x, nn.Parameter):
                x.requires_grad = True
            else:
                for p in x.parameters():
                    p.requires_grad = True

        _unlock(groups[-unlocked:])

class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.tower = Tower(d)

    def forward(self, x):
        return self.tower(x)

    def lock_tower(self, unlocked=0):
        self.tower.lock(unlocked)
"""


def test_parameters_grouped_only_to_set_their_requires_grad_flags_are_not_read(tmp_path):
    assert _found(tmp_path, LOCK) == []


def test_the_same_grouping_handed_to_a_helper_that_reads_values_is_a_read(tmp_path):
    reads = LOCK.replace("x.requires_grad = True", "x.requires_grad = bool(x.norm() > 0)")
    # the call on the held tower (40), and the read itself in `lock`, a method run on the built model (17)
    assert _found(tmp_path, reads) == [("ZG303", 17), ("ZG303", 40)]


TORCH_LAYER_SELF_FORWARD = """
import torch
from torch import nn

class Layer(nn.Linear):
    def forward(self, x):
        return torch.relu(x @ self.weight.T + self.bias)

    def train_layer(self, x_pos, x_neg):
        g_pos = self.forward(x_pos).pow(2).mean(1)
        g_neg = self.forward(x_neg).pow(2).mean(1)
        return (g_neg - g_pos).mean()
"""


def test_self_forward_of_a_torch_layer_subclass_skips_the_hooks_gathering_its_base_weight(tmp_path):
    # the forward-forward layer trains itself: `nn.Linear`'s own weight and bias, read in forward, gathered by no hook
    assert _found(tmp_path, TORCH_LAYER_SELF_FORWARD) == [("ZG302", 10), ("ZG302", 11)]
    # a normalisation layer's small vectors too: persistence keeps only what a hook once gathered
    norm = TORCH_LAYER_SELF_FORWARD.replace("nn.Linear", "nn.LayerNorm")
    assert _found(tmp_path, norm) == [("ZG302", 10), ("ZG302", 11)]
    # the layer's own forward run through its call: the hooks run
    assert _found(tmp_path, TORCH_LAYER_SELF_FORWARD.replace("self.forward(", "self(")) == []
