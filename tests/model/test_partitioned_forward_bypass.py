"""A bound `forward` of a model the function itself built and partitioned (`model = Unet()` handed to
`deepspeed.initialize`, or built under `zero.Init`; the engine's `.module`), called or handed to a sampler, skips the
model's own hooks (ZG302, `ScriptScope.partitioned_models`). The engine's own `forward`, `.forward` called before the
model was handed over, and a root that owns no parameter itself stay clean."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import torch
import torch.nn as nn
import deepspeed

class Unet(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(1024, 1024))

    def forward(self, x):
        return x @ self.w

class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.u = Unet()

    def forward(self, x):
        return self.u(x)

class Sampler:
    def sample(self, fn, x, steps=10):
        for _ in range(steps):
            x = x - 0.1 * fn(x)
        return x
"""


def codes(body: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


def test_the_forward_of_a_model_this_function_partitioned_skips_its_hooks():
    assert codes("""
        def run(x):
            model = Unet()
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters())
            return Sampler().sample(engine.module.forward, x)
    """) == ["ZG302"]
    assert codes("""
        def run(x):
            with deepspeed.zero.Init():
                model = Unet()
            return Sampler().sample(model.forward, x)
    """) == ["ZG302"]
    assert codes("""
        def run(x):
            model = Outer()
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters())
            return model.u.forward(x)
    """) == ["ZG302"]


def test_the_engines_forward_and_models_never_partitioned_stay_clean():
    assert codes("""
        def run(x):
            model = Unet()
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters())
            return Sampler().sample(engine.forward, x)
    """) == []
    # (a model the function builds with no engine in sight is taken as built under `zero.Init`, as its loads and
    # copies are: `loaded.built_then_loaded`; its forward handed on is `test_forward_handed_through_a_local.py`'s)
    assert codes("""
        def run(x):
            model = Unet()
            y = model.forward(x)
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters())
            return y
    """) == []
    assert codes("""
        def run(x):
            model = Outer()
            engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters())
            return engine.module.forward(x)
    """) == []
