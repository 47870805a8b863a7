"""Facts found on the blind transformers2 set (issue 20), each with a safe look-alike.

* A module built inline in `__init__` (`nn.Embedding(1, d).weight[0]`) is partitioned as soon as its constructor
  returns under `deepspeed.zero.Init`: reading its weight there reads a placeholder (ZG109). Built inline in a
  method run on the built model, outside `zero.Init`, it is a plain module.
* An `apply` callback that hands a child of the visited module to a helper initialising it
  (`linear_init_(module.fc1)`, the helper nested or at module level) writes parameters `apply` did not gather
  (ZG103). Handing the visited module itself is safe: `apply` gathered its own parameters.
* A trainer's set-up methods (`create_optimizer`, `setup_ema`) run on the model it was given, built before it:
  their reads of its parameters count (ZG102). Grouping the parameters by name for an optimizer reads none.
* A call told not to synchronise its decoding loop (`synced_gpus=False`) lets ranks stop at their own last token
  (ZG204); `synced_gpus=True`, or the caller's own flag handed on, is not flagged.
* A function whose model argument is annotated with a base class is handed any subclass: calls of a child the
  base does not declare (`model.post.postnet(h)`, a method running the child's layers) run submodules, and a data
  gate around them is ZG203. A gate on a setting is not.
"""

from __future__ import annotations

from zgen.model import check_source


def _codes(source: str, prefix: str = "ZG") -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", source) if f.code.startswith(prefix)]


INLINE = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.segment = nn.Parameter({init})

    def forward(self, x):
        return self.fc(x) + self.segment

    def fresh_segment(self, d):
        return nn.Embedding(1, d).weight[0].detach()
"""


def test_weight_of_a_module_built_inline_in_init_found() -> None:
    found = _codes(INLINE.format(init="nn.Embedding(1, d).weight[0]"), "ZG1")
    assert found == [("ZG109", 10)], found


def test_module_built_inline_outside_init_clean() -> None:
    assert _codes(INLINE.format(init="torch.zeros(d)"), "ZG1") == []


APPLY = """
import math
from torch import nn


def scaled_init_(m, gain=1.0):
    bound = gain / math.sqrt(m.weight.shape[0])
    nn.init.uniform_(m.weight, -bound, bound)


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, d)

    def forward(self, x):
        return self.fc1(x)


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = nn.ModuleList([Layer(d) for _ in range(2)])
        self.apply(self._init_weights)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def _init_weights(self, module):
        def linear_init_(m):
            nn.init.normal_(m.weight, std=0.02)

        if isinstance(module, Layer):
            {call}
"""


def test_child_handed_to_a_nested_initialiser_in_an_apply_callback_found() -> None:
    found = _codes(APPLY.format(call="linear_init_(module.fc1)"), "ZG103")
    assert found == [("ZG103", 36)], found


def test_child_handed_to_a_module_level_initialiser_in_an_apply_callback_found() -> None:
    found = _codes(APPLY.format(call="scaled_init_(module.fc1, gain=2.0)"), "ZG103")
    assert found == [("ZG103", 36)], found


def test_visited_module_handed_to_an_initialiser_clean() -> None:
    source = APPLY.format(call="scaled_init_(module)").replace("if isinstance(module, Layer)", "if isinstance(module, nn.Linear)")
    assert _codes(source, "ZG103") == []


TRAINER = """
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def {name}(self):
        skipped = 0
        for module in self.model.modules():
            if isinstance(module, nn.Embedding):
                skipped += sum(p.numel() for p in module.parameters())
        return skipped
"""


def test_parameters_counted_in_a_trainers_create_method_found() -> None:
    assert ("ZG102", 13) in _codes(TRAINER.format(name="create_optimizer"), "ZG1")


def test_trainers_create_method_grouping_parameters_by_name_clean() -> None:
    source = """
import torch
from torch import nn


class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def create_optimizer(self, lr):
        decay = [p for n, p in self.model.named_parameters() if not n.endswith("bias")]
        rest = [p for n, p in self.model.named_parameters() if n.endswith("bias")]
        return torch.optim.AdamW([{"params": decay}, {"params": rest, "weight_decay": 0.0}], lr=lr)
"""
    assert _codes(source, "ZG1") == []


GENERATE = """
import torch
from torch import nn


class Post(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.prob_out = nn.Linear(d, 1)
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(2)])

    def postnet(self, h):
        for layer in self.layers:
            h = layer(h)
        return h


class Base(nn.Module):
    pass


class Speech(Base):
    def __init__(self, d):
        super().__init__()
        self.decoder = nn.Linear(d, d)
        self.post = Post(d)


def generate(model: Base, x, refine=True, steps=4):
    outs = []
    for _ in range(steps):
        h = model.decoder(x)
        prob = torch.sigmoid(model.post.prob_out(h))
        done = torch.where(prob.squeeze(-1) > 0.5)[0].tolist()
        if {gate}:
            h = model.post.postnet(h)
        outs.append(h)
    return outs
"""


def test_data_gate_around_a_child_method_of_a_subclass_found() -> None:
    found = _codes(GENERATE.format(gate="len(done) > 0"), "ZG2")
    assert found == [("ZG203", 35)], found


def test_setting_gate_around_a_child_method_of_a_subclass_clean() -> None:
    assert _codes(GENERATE.format(gate="refine"), "ZG2") == []


SYNC = """
from torch import nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = nn.Linear(4, 4)

    def forward(self, x):
        return self.lm(x)

    def generate(self, x, synced_gpus=False):
        return self._sample(x, synced_gpus={value})

    def _sample(self, x, synced_gpus=False):
        return self(x)
"""


def test_decoding_loop_told_not_to_synchronise_found() -> None:
    assert _codes(SYNC.format(value="False"), "ZG204") == [("ZG204", 14)]


def test_decoding_loop_synchronised_or_left_to_decide_clean() -> None:
    assert _codes(SYNC.format(value="True"), "ZG204") == []
    assert _codes(SYNC.format(value="synced_gpus"), "ZG204") == []
