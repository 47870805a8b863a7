"""A module run by hand (issue 20, blind5's ZG3 misses).

Two general facts, each tested on spellings the misses did not use:

* a function outside the model classes (free function or a plain class's method) handed a module and a tensor
  input, that brings the module's parameter and the input together in one operation, computes the module's
  output with no hook of that module running: the read is ZG301 and a method of the module handed values derived
  from its parameter (`conv._conv_forward(x, w, b)`) is ZG303 (`analysis/by_hand.py`);
* a helper method or property (of the class or a base class) that computes with a parameter of a module the
  class was handed is a read at each call in `forward` too, where a reader of the forward sees it.

Safe look-alikes: no tensor input (a fuser), sizes and dtypes only, inside `GatheredParameters`, a batch norm's
per-channel weight, the module called (`layer(x)`), a bias of a torch layer.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F
import deepspeed
"""


def found(source: str, family: str = "ZG3") -> list[tuple[str, int]]:
    text = HEAD + textwrap.dedent(source)
    return sorted((f.code, f.line) for f in check_source("m.py", text) if f.code.startswith(family))


def line_of(source: str, needle: str) -> int:
    text = HEAD + textwrap.dedent(source)
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


# ---- a function handed a module and an input


HAZARDS = {
    "free function, annotated module, weight through a local": """
        def run(layer: nn.Linear, x: torch.Tensor):
            w = layer.weight  # KEY
            w = w * 0.5
            return F.linear(x, w)
    """,
    "free function, unannotated module used as one, matmul": """
        def project(encoder, hidden_states):
            for p in encoder.parameters():
                p.requires_grad_(False)
            return hidden_states @ encoder.weight.t()  # KEY
    """,
    "method of a plain class, F.conv2d with a scaled weight": """
        class Fuser:
            def run(self, conv: nn.Conv2d, inputs):
                return F.conv2d(inputs, conv.weight * 2.0, conv.bias)  # KEY
    """,
    "torch private base class annotation": """
        def run(conv: nn.modules.conv._ConvNd, x):
            return conv._conv_forward(x, conv.weight, conv.bias)  # KEY
    """,
}


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hand_run_reads_are_zg301(name: str) -> None:
    source = HAZARDS[name]
    assert ("ZG301", line_of(source, "# KEY")) in found(source)


def test_method_given_derived_weight_is_zg303() -> None:
    source = """
        def fused(norm, layer: nn.Conv2d, x):
            scale = torch.rsqrt(norm.running_var + norm.eps)
            w = layer.weight * scale.reshape(-1, 1, 1, 1)
            return layer._conv_forward(x, w, None)  # KEY
    """
    assert ("ZG303", line_of(source, "# KEY")) in found(source)


LOOKALIKES = {
    "no tensor input: a fuser of weights": """
        def fuse(conv: nn.Conv2d, bn: nn.BatchNorm2d):
            return conv.weight * (bn.weight / torch.sqrt(bn.running_var + bn.eps)).reshape(-1, 1, 1, 1)
    """,
    "inside GatheredParameters": """
        def run(layer: nn.Linear, x: torch.Tensor):
            with deepspeed.zero.GatheredParameters([layer.weight]):
                return F.linear(x, layer.weight)
    """,
    "sizes and dtypes only, the module called": """
        def run(layer: nn.Linear, x: torch.Tensor):
            y = layer(x)
            return y.to(layer.weight.dtype)
    """,
    "a batch norm's weight (known by its running statistics) and a conv's bias": """
        def run(bn, conv: nn.Conv2d, x):
            x = conv(x) + conv.bias.view(1, -1, 1, 1)
            return (x - bn.running_mean.view(1, -1, 1, 1)) * bn.weight.view(1, -1, 1, 1)
    """,
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_hand_run_lookalikes_are_clean(name: str) -> None:
    assert found(LOOKALIKES[name]) == []


# ---- a wrapper's helper that computes with the wrapped module's parameter, called in forward

WRAPPER = """
class Wrapper(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.wrapped = layer
        self.register_buffer("mask", torch.ones(4096, 4096))

{helper}

class Masked(Wrapper):
    def forward(self, x):
        return F.linear(x, {use}, self.wrapped.bias)  # KEY
"""


@pytest.mark.parametrize(
    "helper, use",
    [
        ("    def masked(self):\n        return self.wrapped.weight * self.mask", "self.masked()"),
        ("    @property\n    def masked(self):\n        return self.mask * self.wrapped.weight", "self.masked"),
        ("    def masked(self, scale=1.0):\n        w = self.wrapped.weight\n        return w * scale", "self.masked(0.5)"),
    ],
    ids=["base-method", "base-property", "method-through-local"],
)
def test_wrapped_weight_through_helper_reported_at_forward(helper: str, use: str) -> None:
    source = WRAPPER.format(helper=helper, use=use)
    assert ("ZG301", line_of(source, "# KEY")) in found(source)


def test_wrapped_helper_of_metadata_only_is_clean_at_forward() -> None:
    source = WRAPPER.format(helper="    def masked(self):\n        return self.wrapped.weight.dtype", use="self.mask.to(self.masked())")
    text = HEAD + textwrap.dedent(source)
    # only the bias the forward hands `F.linear` (the wrapped layer never runs, so no hook gathered it), nothing
    # through the helper reading the weight's dtype
    assert [f.message.split("`")[1] for f in check_source("m.py", text) if f.code.startswith("ZG3")] == [
        "self.wrapped.bias"
    ]


# ---- a model of no readable class run by the parts of its forward (ZG303)

FORWARD_PARTS = {
    "registry-built child, through a helper forward calls": """
        import timm

        class Encoder(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.model = timm.create_model(name)

            def _features(self, x):
                return self.model.forward_intermediates(x, indices=[2, 5])  # KEY

            def forward(self, x):
                return self._features(x)
    """,
    "child handed in, forward_features": """
        class Head(nn.Module):
            def __init__(self, encoder):
                super().__init__()
                self.encoder = encoder
                self.fc = nn.Linear(768, 10)

            def forward(self, x):
                return self.fc(self.encoder.forward_features(x).mean(1))  # KEY
    """,
    "plain class holding an annotated model": """
        class Probe:
            def __init__(self, backbone: nn.Module):
                self.backbone = backbone

            def embed(self, images):
                return self.backbone.forward_features(images)  # KEY
    """,
    "free function given a model": """
        def extract(model, images):
            return model.get_intermediate_layers(images, n=4)  # KEY
    """,
}


@pytest.mark.parametrize("name", sorted(FORWARD_PARTS))
def test_unreadable_model_run_by_parts_is_zg303(name: str) -> None:
    source = FORWARD_PARTS[name]
    assert ("ZG303", line_of(source, "# KEY")) in found(source)


FORWARD_PARTS_LOOKALIKES = {
    "the handed model called": """
        class Head(nn.Module):
            def __init__(self, encoder):
                super().__init__()
                self.encoder = encoder

            def forward(self, x):
                return self.encoder(x)
    """,
    "a readable class whose forward_features uses only its children": """
        class Cnn(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 64, 3)

            def forward_features(self, x):
                return self.stem(x)

            def forward(self, x):
                return self.forward_features(x)

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.backbone = Cnn()

            def forward(self, x):
                return self.backbone.forward_features(x)
    """,
    "a registry-built model's other method": """
        import timm

        class Encoder(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.model = timm.create_model(name)

            def forward(self, x):
                return self.model.generate(x)
    """,
}


@pytest.mark.parametrize("name", sorted(FORWARD_PARTS_LOOKALIKES))
def test_forward_parts_lookalikes_are_clean(name: str) -> None:
    assert found(FORWARD_PARTS_LOOKALIKES[name]) == []


# ---- a child's property that returns its own child's parameter (ZG301 where forward reads it)

CHILD_PROPERTY = """
class NormedLinear(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.linear = nn.Linear(d, n, bias=False)

    @property
    def {name}(self):
        return self.linear.{what}

    def forward(self, x):
        return self.linear(x)


class Net(nn.Module):
    def __init__(self, d=1024, n=4096):
        super().__init__()
        self.pos = NormedLinear(d, n)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        table = self.pos.{name}  # KEY
        return self.proj(x) + table.sum()
"""


@pytest.mark.parametrize("name", ["weight", "table", "last_layer"])
def test_child_property_returning_grandchild_weight_is_read(name: str) -> None:
    source = CHILD_PROPERTY.format(name=name, what="weight")
    assert ("ZG301", line_of(source, "# KEY")) in found(source)


def test_child_property_returning_metadata_is_clean() -> None:
    source = CHILD_PROPERTY.format(name="table", what="weight.dtype")
    assert found(source) == []


def test_depthwise_conv1d_with_config_kernel_stays_gathered() -> None:
    """`nn.Conv1d(d, d, kernel_size=cfg.k, groups=d)`: one short filter per channel, below the persistence threshold
    even when its kernel comes from a config, so a helper's read of it is no hazard at the forward's call either
    (the slow path runs the conv, so its hook has gathered it)."""
    source = """
        class Mixer(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.d = config.intermediate_size
                self.conv1d = nn.Conv1d(in_channels=self.d, out_channels=self.d, kernel_size=config.conv_kernel,
                                        groups=self.d, padding=config.conv_kernel - 1)

            def kernel_forward(self, x):
                w = self.conv1d.weight.view(self.d, -1)
                return x * w.sum(-1, keepdim=True)

            def slow_forward(self, x):
                return self.conv1d(x)

            def forward(self, x):
                return self.kernel_forward(x) if self.d > 8 else self.slow_forward(x)
    """
    assert found(source) == []
