"""ZG303 through the joins of the program (issue 20, h-zg3call): a non-forward method whose use of the module's own
parameters only shows through another method (of a base class in another file), a helper function handed the
module or a child, or the module's own state dict; and receivers typed only through another class or function: an
attribute chain through a plain object, a value a property, a method or an unwrapping function hands back, and a
method named by a string constant or handed to a call helper. Each hazard has a look-alike of the same shape whose
method touches no parameter of its own (it runs a child as a module, or reads a buffer)."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

NET = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.table = nn.Parameter(torch.randn(4096, d))
        self.fc = nn.Linear(d, d)
        self.register_buffer("steps", torch.zeros(d))

    def forward(self, x):
        return self.fc(x) + self.table.sum()

    def attend(self, h):
        return h @ self.table.T

    def safe(self, h):
        return self.fc(h) * self.steps
"""

BLEND = """
def blend(target, source, tau):
    for p, q in zip(target.parameters(), source.parameters()):
        p.data.mul_(1 - tau).add_(q.data, alpha=tau)
"""

# a module whose `sync` hands its two children to the helper
AGENT = """
            from torch import nn
            from .util import blend

            class Agent(nn.Module):
                def __init__(self, d=1024):
                    super().__init__()
                    self.online = nn.Linear(d, 4096)
                    self.target = nn.Linear(d, 4096)

                def forward(self, x):
                    return self.online(x)

                def sync(self, tau):
                    blend(self.target, self.online, tau)
"""

CASES = {
    # a method reaching a base-class method of another file that reads the parameter the base registers
    "base_method_of_another_file": ({
        "base.py": """
            import torch
            from torch import nn

            class BaseNet(nn.Module):
                def __init__(self, d=1024):
                    super().__init__()
                    self.table = nn.Parameter(torch.randn(4096, d))
                    self.norm = nn.LayerNorm(d)

                def project(self, h):
                    return h @ self.table.T
            """,
        "model.py": """
            from .base import BaseNet

            class Net(BaseNet):
                def forward(self, x):
                    return self.project(x)

                def sample(self, x):
                    return self.project(x) * 2

            class Trainer:
                def __init__(self, net: Net):
                    self.net = net

                def step(self, x):
                    return self.net.sample(x)  # KEY
            """,
    }, ("return h @ self.table.T", "return self.norm(h)")),
    # a method handing two children to a helper of another file that blends their parameters
    "helper_of_another_file_blends_children": ({
        "util.py": BLEND,
        "model.py": AGENT + """
            class Trainer:
                def __init__(self, agent: Agent):
                    self.agent = agent

                def step(self):
                    self.agent.sync(0.01)  # KEY
            """,
    }, ("zip(target.parameters(), source.parameters())", "zip(target.buffers(), source.buffers())")),
    # the same from a parent's forward
    "forward_runs_a_childs_blend": ({
        "util.py": BLEND,
        "model.py": AGENT + """
            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pair = Agent()

                def forward(self, x):
                    self.pair.sync(0.1)  # KEY
                    return self.pair(x)
            """,
    }, ("zip(target.parameters(), source.parameters())", "zip(target.buffers(), source.buffers())")),
    # an averaging wrapper of the project whose `update()` (a name containers use too) blends two modules' parameters
    "averaging_wrapper_update": ({
        "ema.py": """
            import copy
            import torch
            from torch import nn

            class EMA(nn.Module):
                def __init__(self, model, beta=0.99):
                    super().__init__()
                    self.online = model
                    self.ema_model = copy.deepcopy(model)
                    self.beta = beta

                def forward(self, x):
                    return self.ema_model(x)

                @torch.no_grad()
                def update(self):
                    for ema_p, p in zip(self.ema_model.parameters(), self.online.parameters()):
                        ema_p.data.lerp_(p.data, 1 - self.beta)
            """,
        "model.py": """
            from torch import nn
            from .ema import EMA

            class Trainer:
                def __init__(self, model: nn.Module):
                    self.model = model
                    self.ema = EMA(model)

                def step(self, x):
                    loss = self.model(x).sum()
                    self.ema.update()  # KEY
                    return loss
            """,
    }, ("zip(self.ema_model.parameters(), self.online.parameters())", "zip(self.ema_model.buffers(), self.online.buffers())")),
    # a method loading the module's own state dict
    "own_state_dict_loaded": ({
        "model.py": NET + """
    def reload(self, path):
        self.load_state_dict(torch.load(path))

class Trainer:
    def __init__(self, net: Net):
        self.net = net

    def restart(self, path):
        self.net.reload(path)  # KEY
""",
    }, ("self.load_state_dict(torch.load(path))", "return sorted(self.state_dict().keys())")),
    # an attribute chain through a plain object of the program
    "attribute_chain_through_a_plain_object": ({
        "net.py": NET,
        "model.py": """
            from .net import Net

            class State:
                def __init__(self, d):
                    self.model = Net(d)

            class Trainer:
                def __init__(self, d):
                    self.state = State(d)

                def evaluate(self, x):
                    return self.state.model.attend(x)  # KEY
            """,
    }, (".attend(x)", ".safe(x)")),
    # a property unwrapping the held model
    "unwrap_property": ({
        "net.py": NET,
        "model.py": """
            from .net import Net

            class Trainer:
                def __init__(self, d):
                    self.model = Net(d)

                @property
                def raw(self):
                    return self.model.module if hasattr(self.model, "module") else self.model

                def evaluate(self, x):
                    return self.raw.attend(x)  # KEY
            """,
    }, (".attend(x)", ".safe(x)")),
    # a function of another file handing back its argument, or the module it wraps
    "unwrap_function_of_another_file": ({
        "net.py": NET,
        "util.py": """
            def unwrap_model(model):
                return model.module if hasattr(model, "module") else model
            """,
        "model.py": """
            from .net import Net
            from .util import unwrap_model

            class Trainer:
                def __init__(self, d):
                    self.model = Net(d)

                def evaluate(self, x):
                    model = unwrap_model(self.model)
                    return model.attend(x)  # KEY
            """,
    }, (".attend(x)", ".safe(x)")),
    # a library object's unwrapping method we cannot read: a wrapper hands back what it was given
    "library_unwrap_method": ({
        "net.py": NET,
        "model.py": """
            from accelerate import Accelerator
            from .net import Net

            class Trainer:
                def __init__(self, d):
                    self.accelerator = Accelerator()
                    self.model = self.accelerator.prepare(Net(d))

                def evaluate(self, x):
                    return self.accelerator.unwrap_model(self.model).attend(x)  # KEY
            """,
    }, (".attend(x)", ".safe(x)")),
    # a method of another object of the program returning the model it holds
    "method_of_a_plain_object_returns_its_model": ({
        "net.py": NET,
        "model.py": """
            from .net import Net

            class Runner:
                def __init__(self, d):
                    self.net = Net(d)

                def get_model(self):
                    return self.net

            class Trainer:
                def __init__(self, d):
                    self.runner = Runner(d)

                def evaluate(self, x):
                    return self.runner.get_model().attend(x)  # KEY
            """,
    }, (".attend(x)", ".safe(x)")),
    # the method named by a string constant of the file
    "method_named_by_a_constant": ({
        "net.py": NET,
        "model.py": """
            from .net import Net

            METHOD = "attend"

            class Trainer:
                def __init__(self, d):
                    self.model = Net(d)

                def evaluate(self, x):
                    return getattr(self.model, METHOD)(x)  # KEY
            """,
    }, ('METHOD = "attend"', 'METHOD = "safe"')),
    # the method named to a call helper of another file
    "method_named_to_a_call_helper": ({
        "net.py": NET,
        "util.py": """
            def call_method(obj, name, *args):
                return getattr(obj, name)(*args)
            """,
        "model.py": """
            from .net import Net
            from .util import call_method

            class Trainer:
                def __init__(self, d):
                    self.model = Net(d)

                def evaluate(self, x):
                    return call_method(self.model, "attend", x)  # KEY
            """,
    }, ('"attend"', '"safe"')),
}


def _check(tmp_path, files: dict[str, str]) -> tuple[list[tuple[str, int]], int]:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    path = pkg / "model.py"
    text = path.read_text()
    lines = text.splitlines()
    key = next(i for i, line in enumerate(lines, 1) if line.endswith("# KEY"))
    # where `Net` is part of the checked file, `Net.attend`'s own read of `self.table` (a method run on the built
    # model) is ZG303's at that read; these cases are about the calls
    own_read = {i for i, line in enumerate(lines, 1) if line.strip() == "return h @ self.table.T"}
    found = [(f.code, f.line) for f in check_source(str(path), text) if f.code.startswith("ZG3") and f.line not in own_read]
    return found, key


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_join_is_followed_to_the_call(tmp_path, name):
    files, _ = CASES[name]
    found, key = _check(tmp_path, files)
    assert ("ZG303", key) in found


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_shape_touching_no_own_parameter_is_clean(tmp_path, name):
    files, (old, new) = CASES[name]
    changed = {f: textwrap.dedent(t).replace(old, new) for f, t in files.items()}
    assert any(changed[f] != textwrap.dedent(t) for f, t in files.items())
    found, _key = _check(tmp_path, changed)
    assert found == []


@pytest.mark.parametrize("built", ["model = build(self.d)", "model = load_model(self.d, path)"])
def test_a_module_a_factory_or_loader_builds_and_returns_is_new_and_clean(tmp_path, built):
    # built whole outside `zero.Init` in the method's scope, like `model = Net(d)` there: not a held, partitioned one
    files = {
        "net.py": NET + """
def build(d):
    return Net(d)

def load_model(d, path):
    model = Net(d)
    model.load_state_dict(torch.load(path))
    return model
""",
        "model.py": f"""
            from .net import build, load_model

            class Trainer:
                def __init__(self, d):
                    self.d = d

                def evaluate(self, x, path):
                    {built}
                    return model.attend(x)  # KEY
            """,
    }
    found, _key = _check(tmp_path, files)
    assert found == []


AVERAGED = """
from ema_pytorch import EMA
from .net import Net

class Trainer:
    def __init__(self, model: Net):
        self.model = model
        self.ema = EMA(self.model, beta=0.99)

    def step(self, x):
        loss = self.model(x).sum()
        self.ema.update()  # KEY
        return loss
"""


def test_a_library_averages_update_blends_the_held_models_parameters(tmp_path):
    found, key = _check(tmp_path, {"net.py": NET, "model.py": AVERAGED})
    assert ("ZG303", key) in found


def test_a_library_average_read_for_its_copy_is_clean(tmp_path):
    # running the average's copy is its own forward; no update blends the held model in
    found, _key = _check(tmp_path, {"net.py": NET, "model.py": AVERAGED.replace("self.ema.update()", "self.ema(x)")})
    assert found == []


UNWRAPPED = """
from .net import Net

class Trainer:
    def __init__(self, d):
        self.model = Net(d)

    def evaluate(self, x):
        model = {unwrap}
        return model.attend(x)  # KEY
"""


@pytest.mark.parametrize(
    "unwrap", ['getattr(self.model, "module", self.model)', 'self.model.module if hasattr(self.model, "module") else self.model']
)
def test_a_local_bound_to_the_unwrapped_held_model_is_typed_by_it(tmp_path, unwrap):
    found, key = _check(tmp_path, {"net.py": NET, "model.py": UNWRAPPED.format(unwrap=unwrap)})
    assert ("ZG303", key) in found
    clean, _key = _check(tmp_path, {"net.py": NET, "model.py": UNWRAPPED.format(unwrap=unwrap).replace(".attend(", ".safe(")})
    assert clean == []


GRADIENTS = NET + """
    def reduce_gradients(self):
        grads = torch.cat([p.grad.view(-1) for p in self.parameters() if p.grad is not None])
        offset = 0
        for p in self.parameters():
            if p.grad is not None:
                p.grad.data.copy_(grads[offset : offset + p.numel()].view_as(p.grad))
                offset += p.numel()

    def rope_table(self):
        return build_table(self.shape)

def build_table(shape):
    return torch.zeros(shape.shape)

class Trainer:
    def __init__(self, net: Net):
        self.net = net

    def step(self):
        self.net.reduce_gradients()
        return self.net.rope_table()
"""


def test_a_walk_of_gradients_and_counts_and_a_setting_handed_to_a_helper_are_clean(tmp_path):
    # `p.grad` and `p.numel()` over its own parameters compute with none of their values; `self.shape` is a setting
    text = GRADIENTS.replace("self.register_buffer(", "self.shape = (d,)\n        self.register_buffer(")
    found, _key = _check(tmp_path, {"model.py": text + "# KEY\n"})
    assert found == []
