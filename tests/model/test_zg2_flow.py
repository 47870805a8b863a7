"""Ranks that run different submodules through values the analyses did not follow (issue 20, h-zg2flow).

* A model chosen among models a class holds (`self.ema or self.model`, `a if c else b`, a function of the file
  handing back one of its arguments, `default(self.ema_model, self.model)`) is run when the local is called: a
  rank test around it is ZG201. Safe: a choice between a model and a value that is none (`default(x, None)`
  called on data), a function of the file that computes a new value from its arguments.
"""

from __future__ import annotations

import pytest

from zgen.model import check_source

HEADER = """
import os
import random

import numpy as np
import torch
import torch.distributed as dist
from torch import nn


def exists(v):
    return v is not None


def default(v, d):
    if exists(v):
        return v
    return d() if callable(d) else d


def either(v, d):
    return v if exists(v) else d


def scaled(v, d):
    return v * d


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)
"""

TRAINER = """
class Trainer:
    def __init__(self, model: nn.Module, ema: nn.Module, fabric):
        self.model = model
        self.ema_model = ema
        self.fabric = fabric

    @property
    def is_main(self):
        return self.fabric.global_rank == 0

    def step(self, batch):
        loss = self.model(batch).mean()
{body}
        return loss
"""


def _zg2(source: str) -> list:
    return [f for f in check_source("m.py", source) if f.code.startswith("ZG2")]


def _indent(body: str, n: int = 8) -> str:
    return "\n".join(" " * n + line if line else line for line in body.strip("\n").splitlines())


def _trainer(body: str) -> str:
    return HEADER + TRAINER.format(body=_indent(body))


CHOSEN = {
    "a pass-through function of the file": "eval_model = either(self.ema_model, self.model)",
    "an `or` of two held models": "eval_model = self.ema_model or self.model",
    "a conditional expression": "eval_model = self.ema_model if exists(self.ema_model) else self.model",
}


@pytest.mark.parametrize("choice", CHOSEN.values(), ids=CHOSEN.keys())
def test_model_chosen_among_held_models_runs_under_a_rank_test(choice: str) -> None:
    found = _zg2(_trainer(f"if self.is_main:\n    {choice}\n    loss = loss + eval_model(batch).mean()"))
    assert [f.code for f in found] == ["ZG201"], found


CHOSEN_SAFE = {
    "a value chosen, not a model": "eval_model = either(batch, None)",
    "a function computing a new value": "eval_model = scaled(self.model, 2)",
}


@pytest.mark.parametrize("choice", CHOSEN_SAFE.values(), ids=CHOSEN_SAFE.keys())
def test_value_chosen_or_computed_is_no_model_run(choice: str) -> None:
    assert _zg2(_trainer(f"if self.is_main:\n    {choice}\n    print(eval_model)")) == []


RANK_FUNCTIONS = """
def on_first_host():
    return int(os.environ.get("RANK", "0")) == 0


def device_of_rank():
    rank = dist.get_rank()
    return f"cuda:{{rank}}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Block()
        self.extra = Block()

    def first_of_group(self):
        return self.group_rank() == 0

    def group_rank(self):
        return dist.get_rank() % 2

    def forward(self, h):
{body}
"""


@pytest.mark.parametrize("test", ["on_first_host()", "self.first_of_group()"])
def test_function_returning_a_rank_decision_gates_a_child(test: str) -> None:
    found = _zg2(HEADER + RANK_FUNCTIONS.format(body=_indent(f"if {test}:\n    h = self.extra(h)\nreturn self.head(h)")))
    assert [f.code for f in found] == ["ZG201"], found


def test_function_returning_a_value_made_from_the_rank_is_no_decision() -> None:
    body = 'if device_of_rank() != "cpu":\n    h = self.extra(h)\nreturn self.head(h)'
    assert _zg2(HEADER + RANK_FUNCTIONS.format(body=_indent(body))) == []


NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Block()
        self.dim = 8

    def forward(self, h, state=None):
{body}
"""


def _net(body: str) -> str:
    return HEADER + NET.format(body=_indent(body))


LOOPS = {
    "a loss statistic kept in a list item stops the epochs": """
prev = 0.0
losses = [0.0] * 2
for _ in range(8):
    for i in range(2):
        losses[i] = float(self.sub(h).mean())
    new = float(np.mean(losses))
    if abs(prev - new) < 1e-3:
        break
    prev = new
return h
""",
    "split sizes read from the input count the pieces": """
sizes = (torch.arange(h.shape[-1]) % 3 == 0).nonzero().flatten().diff().tolist()
chunks = h.split(sizes, dim=-1)
for i, part in enumerate(zip(chunks, chunks)):
    h = self.sub(part[0])
return h
""",
}


@pytest.mark.parametrize("body", LOOPS.values(), ids=LOOPS.keys())
def test_loop_the_data_decides_found(body: str) -> None:
    found = _zg2(_net(body))
    assert found and all(f.code in ("ZG203", "ZG204") for f in found), found


LOOPS_SAFE = {
    "a loss statistic all-reduced before the stop": """
prev = 0.0
losses = [0.0] * 2
for _ in range(8):
    for i in range(2):
        loss = self.sub(h).mean()
        dist.all_reduce(loss)
        losses[i] = float(loss)
    if abs(prev - losses[0]) < 1e-3:
        break
    prev = losses[0]
return h
""",
    "split sizes of the configuration": """
for part in h.split([self.dim // 2] * 2, dim=-1):
    h = self.sub(part)
return h
""",
}


@pytest.mark.parametrize("body", LOOPS_SAFE.values(), ids=LOOPS_SAFE.keys())
def test_loop_of_a_fixed_count_clean(body: str) -> None:
    assert _zg2(_net(body)) == []


LEARNER = """
class Learner:
    def __init__(self, cfg):
        self.actor_critic = create_actor_critic(cfg)
        self.optimizer = torch.optim.Adam(self.actor_critic.parameters())

    def _losses(self, mb):
        head = self.actor_critic.forward_head(mb)
        return head.mean()

    def _stats(self, mb):
        return self.actor_critic.summaries()

    def train(self, batches):
        prev = 1e9
        for epoch in range(8):
            losses = [0.0] * len(batches)
            for i, mb in enumerate(batches):
                losses[i] = float(self.{method}(mb))
            new = float(np.mean(losses))
            if abs(prev - new) < 1e-6:
                break
            prev = new
"""


def test_forward_part_of_a_held_model_of_unread_class_runs_it() -> None:
    found = _zg2(HEADER + "from .models import create_actor_critic\n" + LEARNER.format(method="_losses"))
    assert "ZG204" in [f.code for f in found], found


def test_other_method_of_a_held_model_of_unread_class_is_no_run() -> None:
    found = _zg2(HEADER + "from .models import create_actor_critic\n" + LEARNER.format(method="_stats"))
    assert [f for f in found if "abs(prev" in f.message] == [], found


OPTIONAL = """
class Graph(nn.Module):
    def __init__(self):
        super().__init__()
        self.node_emb = nn.Embedding(100, 4096)
        self.edge_emb = nn.Embedding(64, 4096)  # (above the persistence threshold: it gathers)
        self.proj = nn.Linear(4096, 4096)

    def forward(self, nodes, edges=None, indices=None):
        h = self.node_emb(nodes)
{body}
        return h, edges
"""


def test_single_layer_run_on_the_optional_input_found() -> None:
    body = "if exists(edges):\n    edges = self.edge_emb(edges)"
    found = _zg2(HEADER + OPTIONAL.format(body=_indent(body)))
    assert [f.code for f in found] == ["ZG205"], found


def test_single_layer_gated_but_run_on_another_value_clean() -> None:
    body = "if indices is not None:\n    h = self.proj(h)[indices]"
    assert _zg2(HEADER + OPTIONAL.format(body=_indent(body))) == []


RETRY = """
while True:
    try:
        out = {run}
        break
    except torch.cuda.OutOfMemoryError:
        h = h[: h.shape[0] // 2]
return out
"""


def test_retry_on_out_of_memory_around_a_child_found() -> None:
    found = _zg2(_net(RETRY.format(run="self.sub(h)")))
    assert [f.code for f in found] == ["ZG204"], found


def test_retry_that_runs_no_child_clean() -> None:
    assert _zg2(_net(RETRY.format(run="h.clone()") + "\n")) == []


def test_handler_that_reraises_runs_no_retry() -> None:
    body = "for _ in range(2):\n    try:\n        h = self.sub(h)\n        break\n    except RuntimeError:\n        raise\nreturn h"
    assert _zg2(_net(body)) == []


def test_single_layer_whose_output_the_optional_input_replaces_found() -> None:
    body = "h = self.node_emb(nodes) if edges is None else edges"
    found = _zg2(HEADER + OPTIONAL.format(body=_indent(body)))
    assert [f.code for f in found] == ["ZG205"], found


TOWER_INPUT = """
def is_empty(t):
    return t.nelement() == 0


class Dalle(nn.Module):
    def __init__(self):
        super().__init__()
        self.text_emb = nn.Embedding(100, 4096)
        self.image_emb = nn.Sequential(nn.Embedding(100, 4096), nn.Linear(4096, 4096))

    def forward(self, text, image=None, return_loss=False):
        tokens = self.text_emb(text)
        if exists(image) and not is_empty(image):
            tokens = tokens + self.image_emb(image)
        if not return_loss:
            return tokens
{tail}
        return tokens.mean()
"""


def test_presence_and_emptiness_test_before_an_assert_on_one_path_found() -> None:
    found = _zg2(HEADER + TOWER_INPUT.format(tail="        assert exists(image)"))
    assert [f.code for f in found] == ["ZG205"], found


def test_presence_asserted_before_any_return_clean() -> None:
    source = HEADER + TOWER_INPUT.format(tail="").replace(
        "        tokens = self.text_emb(text)\n", "        assert exists(image)\n        tokens = self.text_emb(text)\n"
    )
    assert _zg2(source) == []


PROPERTY_TRAINER = """
class Trainer({base}):
    def __init__(self, model: Block, accelerator):
        super().__init__()
        self.model = model
        self.accelerator = accelerator

    @property
    def is_main(self):
        return self.accelerator.is_main_process

    @property
    def unwrapped_model(self):
        return self.accelerator.unwrap_model(self.model)

    @property
    def {other}(self):
        return self.accelerator.device

    def train(self, batch):
        loss = self.model(batch).mean()
        if self.is_main:
            out = self.{called}(batch)
        return loss
"""


@pytest.mark.parametrize("base", ["nn.Module", "object"])
def test_property_handing_back_a_held_model_runs_it(base: str) -> None:
    source = HEADER + PROPERTY_TRAINER.format(base=base, other="device", called="unwrapped_model")
    assert [f.code for f in _zg2(source)] == ["ZG201"]


@pytest.mark.parametrize("base", ["nn.Module", "object"])
def test_property_handing_back_another_value_runs_nothing(base: str) -> None:
    source = HEADER + PROPERTY_TRAINER.format(base=base, other="runner", called="runner")
    assert _zg2(source) == []


def test_optional_input_required_by_a_setting_clean() -> None:
    body = "assert not (self.has_edges and not exists(edges))\nif exists(edges):\n    edges = self.edge_emb(edges)"
    source = HEADER + OPTIONAL.format(body=_indent(body)).replace(
        "        self.proj = nn.Linear(4096, 4096)\n", "        self.proj = nn.Linear(4096, 4096)\n        self.has_edges = True\n"
    )
    assert _zg2(source) == []


VALIDATING_TRAINER = """
class Trainer:
    def __init__(self, model, gpu_rank):
        self.model = model
        self.gpu_rank = gpu_rank

    def validate(self, batches):
        valid_model = self.model
        valid_model.eval()
{use}

    def train(self, batches):
        for step, batch in enumerate(batches):
            loss = self.model(batch).mean()
            if self.gpu_rank <= 0:
                self.validate(batches)
"""


def test_helper_running_a_local_bound_to_the_held_model_is_gated() -> None:
    use = "        return [valid_model(b) for b in batches]"
    assert [f.code for f in _zg2(HEADER + VALIDATING_TRAINER.format(use=use))] == ["ZG201"]


def test_helper_only_switching_the_held_model_to_eval_is_no_run() -> None:
    use = "        return len(batches)"
    assert _zg2(HEADER + VALIDATING_TRAINER.format(use=use)) == []


LAYERS = """
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(4)])

    def forward(self, h):
{body}
        return h
"""


def test_random_sample_of_a_module_list_found() -> None:
    body = "chosen = random.sample(list(self.layers), 2)\nfor layer in chosen:\n    h = layer(h)"
    assert [f.code for f in _zg2(HEADER + LAYERS.format(body=_indent(body)))] == ["ZG202"]


def test_random_sample_of_data_rows_clean() -> None:
    body = "rows = random.sample(range(h.shape[0]), 1)\nfor layer in self.layers:\n    h = layer(h[rows])"
    assert _zg2(HEADER + LAYERS.format(body=_indent(body))) == []


def test_single_layer_run_both_ways_on_other_values_clean() -> None:
    body = "if edges is not None:\n    h = h + self.proj(edges)\nelse:\n    h = h + self.proj(h)"
    assert _zg2(HEADER + OPTIONAL.format(body=_indent(body))) == []


def test_function_rebinding_its_argument_is_no_pass_through() -> None:
    source = HEADER + """
def dropout_layers(layers, p):
    if p == 0:
        return layers
    layers = [layer for layer in layers if random.random() > p]
    return layers
""" + LAYERS.format(body=_indent("kept = dropout_layers(self.layers, 0.1)\nfor layer in kept:\n    h = layer(h)"))
    assert [f.code for f in _zg2(source)] == ["ZG202"]


SETTING_LAYER = """
class Residual(nn.Module):
    def __init__(self, context_size=None):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)
        if context_size is not None:
            self.context = nn.Linear(context_size, 4096)

    def forward(self, x, context=None):
        x = self.fc(x)
        if {test}:
            x = x + self.context(context)
        return x
"""


def test_single_layer_gated_on_the_input_alone_found() -> None:
    # built under a setting or not, a rank called without the context skips the layer's gather
    found = _zg2(HEADER + SETTING_LAYER.format(test="context is not None"))
    assert [f.code for f in found] == ["ZG205"], found


def test_single_layer_built_under_a_setting_gated_on_both_found() -> None:
    found = _zg2(HEADER + SETTING_LAYER.format(test="exists(context) and hasattr(self, 'context') and exists(self.context)"))
    assert [f.code for f in found] == ["ZG205"], found


def test_single_layer_given_the_optional_input_beside_its_value_clean() -> None:
    body = "if indices is not None:\n    h = h + self.proj(h, indices)"
    assert _zg2(HEADER + OPTIONAL.format(body=_indent(body))) == []
