"""ZG1 hazards whose pieces are joined through another file of the package, a base class or a returned value
(issue 20, round 6: what the labellers of two unseen sets found zgen missing), each beside a safe look-alike."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found, write_package

NETS = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.BatchNorm1d(dim)

    def forward(self, x):
        return self.norm(self.fc(x))


class LitBase(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.model = Net(dim)
        self.ema_model = Net(dim)


def build_net(dim):
    return Net(dim)


def unwrap(model):
    return model.module if hasattr(model, "module") else model


def trainable(model):
    return [p for p in model.parameters() if p.requires_grad]


def buffers_of(model):
    return list(model.buffers())


def make_optimizer(model):
    return torch.optim.Adam(model.parameters())
"""

INITS = """
def reset_children(model):
    for m in model.children():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()


def reset_statistics(model):
    for m in model.modules():
        if hasattr(m, "reset_running_stats"):
            m.reset_running_stats()
"""

MODELS = """
import deepspeed
from torch import nn
from ..nets import Net
from ..inits import reset_children, reset_statistics


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.enc = Net(dim)
        reset_children(self.enc)

    def forward(self, x):
        return self.enc(x)


class GatheredEncoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.enc = Net(dim)
        with deepspeed.zero.GatheredParameters(list(self.enc.parameters()), modifier_rank=0):
            reset_children(self.enc)
        reset_statistics(self.enc)

    def forward(self, x):
        return self.enc(x)
"""

TRAINER = """
import deepspeed
import torch
from ..nets import build_net, unwrap, trainable, buffers_of, make_optimizer


class Trainer:
    def __init__(self, model, dim):
        self.model = model
        self.optimizer = make_optimizer(model)

    def save(self, path):
        torch.save(unwrap(self.model).state_dict(), path)

    def load(self, path):
        unwrap(self.model).load_state_dict(torch.load(path))

    def count(self):
        return sum(p.numel() for p in trainable(self.model))

    def save_optimizer(self, path):
        torch.save(self.optimizer.state_dict(), path)

    def count_buffers(self):
        return sum(b.numel() for b in buffers_of(self.model))


def load_pretrained(path, dim):
    model = build_net(dim)
    model.load_state_dict(torch.load(path))
    return model


def load_gathered(path, dim):
    model = build_net(dim)
    with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=0):
        model.load_state_dict(torch.load(path))
    return model
"""

LIT = """
from ..nets import LitBase


class Lit(LitBase):
    def forward(self, x):
        return self.model(x)

    def on_validation_start(self):
        self.backup = {k: v.clone() for k, v in self.model.state_dict().items()}

    def parameter_names(self):
        return list(self.model.state_dict().keys())
"""


def _package(tmp_path):
    files = {"nets.py": NETS, "inits.py": INITS, "parts/models.py": MODELS, "parts/trainer.py": TRAINER,
             "parts/lit.py": LIT}
    return write_package(tmp_path, files, "proj") / "parts"


def _found(path) -> list[tuple[str, int]]:
    return found(path, "ZG1")


def test_a_reset_helper_of_another_file_resets_the_children_of_a_built_child(tmp_path):
    # `reset_children(self.enc)` calls `reset_parameters()` on every child of `self.enc`, which `zero.Init` has
    # partitioned: the helper's summary says it initialises its argument; under a gather, or resetting running
    # statistics (buffers), it does not
    found = _found(_package(tmp_path) / "models.py")
    assert found == [("ZG103", 12)]


def test_values_a_function_of_another_file_returns_carry_the_model(tmp_path):
    # `unwrap` hands its argument back, `trainable` a list of its parameters, `build_net` a model it built (then
    # loaded); the optimizer a helper makes and the buffers another helper lists are no parameters of the model
    found = _found(_package(tmp_path) / "trainer.py")
    assert found == [("ZG108", 13), ("ZG108", 16), ("ZG102", 19), ("ZG108", 30)]


def test_the_state_of_a_child_a_base_class_of_another_file_built_is_read_on_the_built_model(tmp_path):
    # a weight swap before validation reads `self.model`'s state: placeholders, whichever file built it; its keys
    # alone name the parameters
    found = _found(_package(tmp_path) / "lit.py")
    assert found == [("ZG108", 10)]


REPR = """
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim, dim))
        setattr(self, "shift", nn.Parameter(torch.randn(dim, dim)))

    def forward(self, x):
        return x @ self.scale + self.shift

    def extra_repr(self):
        return f"scale={self.scale.data.norm()}"

    def __repr__(self):
        return "shift=" + str(self.shift.data.mean())


class Sized(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim, dim))

    def forward(self, x):
        return x @ self.scale

    def extra_repr(self):
        return f"scale={tuple(self.scale.shape)}"
"""


def test_a_repr_reading_the_modules_own_parameters_reads_placeholders():
    # printing the built model runs `extra_repr`/`__repr__` outside any forward: the module's own parameters,
    # registered by assignment or by `setattr` with a literal name, are placeholders there, and so are the
    # shapes they print (`scale=(0,)`)
    found = [(f.code, f.line) for f in check_source("scaled.py", textwrap.dedent(REPR))]
    assert found == [("ZG109", 16), ("ZG109", 19), ("ZG102", 31)]


BASE = """
from torch import nn


class Base(nn.Module):
    def _init_layer(self, layer):
        nn.init.xavier_uniform_(layer.weight)

    def _freeze(self, module):
        for p in module.parameters():
            p.requires_grad = False


def zero_module(module):
    for p in module.parameters():
        p.detach().zero_()
    return module


def detached(module):
    for p in module.parameters():
        p.detach_()
    return module
"""

SUB = """
import deepspeed
from torch import nn
from .base import Base, zero_module, detached


class Model(Base):
    def __init__(self, dim):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim, dim), nn.Linear(dim, dim))
        self.out = nn.Linear(dim, dim)
        self._init_layer(self.enc[0])
        zero_module(self.out)
        with deepspeed.zero.GatheredParameters(list(self.enc.parameters()), modifier_rank=0):
            self._init_layer(self.enc[1])
        self._freeze(self.enc)
        detached(self.out)

    def forward(self, x):
        return self.out(self.enc(x))
"""


def test_a_base_class_method_of_another_file_and_a_write_through_a_view_initialise_a_built_child(tmp_path):
    # `self._init_layer(...)` runs a method of the base class in another file: its summary, read there, says it
    # initialises what it is handed; `p.detach().zero_()` writes the parameter through a view sharing its storage
    # (`detach_()` only flags the tensor; a gathered call and a `requires_grad` change stay clean)
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(textwrap.dedent(BASE))
    (pkg / "sub.py").write_text(textwrap.dedent(SUB))
    assert _found(pkg / "sub.py") == [("ZG103", 12), ("ZG103", 13)]


REGISTRY = """
from torch import nn

BACKBONES = {}


def register(name):
    def add(cls):
        BACKBONES[name] = cls
        return cls
    return add


@register("mlp")
class Mlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


def build_backbone(name, dim):
    return BACKBONES[name](dim)
"""

PROBED = """
import deepspeed
import torch
from torch import nn
from .registry import build_backbone


class Probed(nn.Module):
    def __init__(self, name, dim):
        super().__init__()
        self.backbone = build_backbone(name, dim)
        out = self.backbone(torch.zeros(1, dim))
        self.head = nn.Linear(out.shape[-1], dim)

    def forward(self, x):
        return self.head(self.backbone(x))


class Gathered(nn.Module):
    def __init__(self, name, dim):
        super().__init__()
        self.backbone = build_backbone(name, dim)
        with deepspeed.zero.GatheredParameters(list(self.backbone.parameters())):
            out = self.backbone(torch.zeros(1, dim))
        self.head = nn.Linear(out.shape[-1], dim)

    def forward(self, x):
        return self.head(self.backbone(x))
"""


def test_a_module_a_decorator_registry_of_another_file_builds_is_run_in_init(tmp_path):
    # `BACKBONES[name](dim)` builds one of the classes `@register(...)` put in the registry: a module with
    # parameters, partitioned once built, so probing it in `__init__` computes with placeholders (not under a gather)
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "registry.py").write_text(textwrap.dedent(REGISTRY))
    (pkg / "probed.py").write_text(textwrap.dedent(PROBED))
    assert _found(pkg / "probed.py") == [("ZG110", 12)]


POOL = """
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


class Population:
    def __init__(self, dim, n):
        self.members = [Policy(dim) for _ in range(n)]
        self.optimizers = [torch.optim.Adam(m.parameters()) for m in self.members]

    def snapshot(self):
        return [m.state_dict() for m in self.members]

    def optimizer_states(self):
        return [o.state_dict() for o in self.optimizers]
"""


def test_a_plain_object_keeps_the_models_it_built_in_a_list():
    # the list the constructor fills with built policies holds models (their state is placeholders); the list of
    # optimizers beside it holds none
    found = [(f.code, f.line) for f in check_source("population.py", textwrap.dedent(POOL))]
    assert found == [("ZG108", 21)]


WRAPPED = """
import torch
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, net, dtype=torch.float32):
        super().__init__()
        self.net = net.to(dtype=dtype)

    def forward(self, x):
        return self.net(x)


class Shifted(nn.Module):
    def __init__(self, shift, dtype=torch.float32):
        super().__init__()
        self.shift = shift.to(dtype=dtype)

    def forward(self, x):
        return x + self.shift


def load_wrapped(net, path):
    model = Wrapper(net)
    model.load_state_dict(torch.load(path))
    return model


def load_shifted(shift, path):
    model = Shifted(shift)
    model.load_state_dict(torch.load(path))
    return model
"""


def test_a_module_a_constructor_moves_before_keeping_it_is_a_wrapped_model():
    # `self.net = net.to(dtype=d)` keeps the module handed in (run in forward): the wrapper may own parameters, so
    # loading into one built above loads placeholders; a tensor kept the same way and only added makes no module
    found = [(f.code, f.line) for f in check_source("wrapped.py", textwrap.dedent(WRAPPED))]
    assert found == [("ZG108", 26)]


BUILDERS = """
from external_lib import OptimWrapper


def build_optim_wrapper(model, cfg):
    return OptimWrapper(model, **cfg)
"""

RUNNER = """
import torch
from .builders import build_optim_wrapper


class Runner:
    def __init__(self, model, cfg):
        self.model = model
        self.optim_wrapper = build_optim_wrapper(model, cfg)

    def resume(self, path):
        self.optim_wrapper.load_state_dict(torch.load(path)["optimizer"])

    def count_calls(self):
        for p in self.model.parameters():
            p._calls -= 1
"""


def test_what_a_helper_of_another_file_builds_around_the_model_for_a_setting_holds_no_model(tmp_path):
    # the optimizer wrapper a builder makes from the model (a call of a library class given it first) is kept in an
    # optimizer-named attribute: its state is the optimizer's; `p._calls` is bookkeeping kept on the parameter object
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "builders.py").write_text(textwrap.dedent(BUILDERS))
    (pkg / "runner.py").write_text(textwrap.dedent(RUNNER))
    assert _found(pkg / "runner.py") == []
