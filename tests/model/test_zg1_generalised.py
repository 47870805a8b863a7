"""ZG1 facts found on unseen code (h-zg1gen, blind12's misses stated generally): each a hazard and a safe
look-alike."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def _found(source: str, path: str = "model.py") -> list[tuple[str, int]]:
    source = textwrap.dedent(source)
    return [(f.code, f.line) for f in check_source(path, source)]


def _found_in_package(tmp_path, helper: tuple[str, str], checked: str) -> list[tuple[str, int, int]]:
    """The findings of `checked` (as `model.py`) in a package beside one helper file (name, source)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / f"{helper[0]}.py").write_text(textwrap.dedent(helper[1]))
    module = pkg / "model.py"
    module.write_text(textwrap.dedent(checked))
    return [(f.code, f.line, f.column) for f in check_source(str(module), module.read_text())]


# A plain object that is handed the built model by a method of its own, not by its constructor (a
# checkpointer's or a target network's `init(model)`): the attribute holds the partitioned model.
KEPT_BY_A_METHOD = """
import copy
import torch

class Checkpointer:
    def __init__(self, frequency):
        self._model = None

    def init(self, model, filename):
        self._model = model
        self._filename = filename

    def __call__(self):
        torch.save(self._model, self._filename)

class Target:
    def __init__(self):
        self._source = None
        self._target = None

    def init(self, model):
        self._source = model
        self._target = copy.deepcopy(model)

    def update(self):
        self._target.load_state_dict(self._source.state_dict())
"""

# ... and so is a model a plain object builds in a method other than `__init__` (a trainer's setup: the model it
# trains, h-ema); a value handed to a setter is no model.
BUILT_BY_A_METHOD = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

class Runner:
    def __init__(self):
        self._net = None
        self._metric = None

    def build(self, width):
        self._net = Net()

    def set_metric(self, metric):
        self._metric = metric

    def save(self, path):
        torch.save(self._net, path)
        torch.save(self._metric, path)
"""


def test_a_model_kept_by_a_method_of_a_plain_object_is_held():
    found = _found(KEPT_BY_A_METHOD)
    assert ("ZG108", 14) in found  # torch.save of the kept model
    assert ("ZG108", 26) in found  # the target loads the source's state


def test_a_model_built_by_a_method_is_held_a_value_set_is_not():
    assert _found(BUILT_BY_A_METHOD) == [("ZG108", 22)]  # `torch.save(self._net)`; not `self._metric`


# An initialiser that takes a module or a list of them (`module_list = [module_list]`, then each module's
# `.modules()` walked and written), handed the children built in `__init__`: each is partitioned already.
INIT_HELPER = """
import torch
from torch import nn
from torch.nn import init

def default_init_weights(module_list, scale=1):
    if not isinstance(module_list, list):
        module_list = [module_list]
    for module in module_list:
        for m in module.modules():
            if isinstance(m, nn.Conv2d):
                init.kaiming_normal_(m.weight)
                m.weight.data *= scale

def count(module_list):
    return [m.weight.dtype for module in module_list for m in module.modules()]
"""

RESIDUAL = """
from torch import nn
from .util import default_init_weights, count

class Block(nn.Module):
    def __init__(self, n=64):
        super().__init__()
        self.conv1 = nn.Conv2d(n, n, 3)
        self.conv2 = nn.Conv2d(n, n, 3)
        default_init_weights([self.conv1, self.conv2], 0.1)
        default_init_weights(self.conv1, 0.1)

    def forward(self, x):
        return self.conv2(self.conv1(x))

class Safe(nn.Module):
    def __init__(self, n=64):
        super().__init__()
        default_init_weights([nn.Conv2d(n, n, 3) for _ in range(2)])
        self.conv1 = nn.Conv2d(n, n, 3)
        self.dtypes = count([self.conv1])

    def forward(self, x):
        return self.conv1(x)
"""


def test_children_handed_in_a_list_to_an_initialiser_of_another_file(tmp_path):
    found = _found_in_package(tmp_path, ("util", INIT_HELPER), RESIDUAL)
    assert found == [("ZG103", 10, 31), ("ZG103", 10, 43), ("ZG103", 11, 30)]


# A trainer's helpers given the built network: its parameter sizes summed through `map(lambda ...)` (the
# lambda's parameter is each item, as in a comprehension), and its state saved for each network of a list made
# of what it was handed (`net if isinstance(net, list) else [net]`).
TRAINER_HELPERS = """
import torch

class BaseModel:
    def __init__(self, opt):
        self.opt = opt
        self.optimizers = []

    def get_bare_model(self, net):
        if hasattr(net, "module"):
            net = net.module
        return net

    def print_network(self, net):
        net = self.get_bare_model(net)
        return sum(map(lambda x: x.numel(), net.parameters()))

    def save_network(self, net, path):
        net = net if isinstance(net, list) else [net]
        for net_ in net:
            net_ = self.get_bare_model(net_)
            torch.save(net_.state_dict(), path)

    def frozen(self, net):
        return all(map(lambda x: not x.requires_grad, net.parameters()))

    def save_training_state(self, path):
        for opt in [o for o in self.optimizers]:
            torch.save(opt.state_dict(), path)
        for opt in self.optimizers:
            torch.save(opt.state_dict(), path)
"""


def test_sizes_summed_through_map_and_states_saved_from_a_list_of_models():
    assert _found(TRAINER_HELPERS) == [("ZG102", 16), ("ZG108", 22)]


# Printing the built model: a `__str__` that counts its parameters over a walk of them reads placeholder sizes,
# and so does an `extra_repr` printing the shape of one weight (`scale=(0,)`).
PRINTED = """
import numpy as np
from torch import nn

class Recommender(nn.Module):
    def __str__(self):
        model_parameters = filter(lambda p: p.requires_grad, self.parameters())
        params = sum([np.prod(p.size()) for p in model_parameters])
        return super().__str__() + f": {params}"

class Items(Recommender):
    def __init__(self, n):
        super().__init__()
        self.emb = nn.Embedding(n, 64)
        self.scale = nn.Parameter(nn.init.zeros_(np.empty(n)))

    def extra_repr(self):
        return f"scale={tuple(self.scale.shape)}"

    def forward(self, x):
        return self.emb(x)
"""


def test_a_parameter_count_printed_by_str_reads_placeholder_sizes():
    assert _found(PRINTED) == [("ZG102", 8), ("ZG102", 18)]


# A mixin of modules (no base of its own; its methods call on `self` what only a module has) saves and loads the
# module it is mixed into: `self` is the built model, and `cls(...)` in its classmethod builds one.
MIXIN = """
import torch

class IOMixIn:
    def save(self, path):
        torch.save(self._init_args, path + "/model.pt")
        torch.save(self.state_dict(), path + "/state.pt")

    @classmethod
    def load(cls, path):
        state = torch.load(path + "/state.pt")
        model = cls(**torch.load(path + "/model.pt"))
        model.load_state_dict(state, strict=False)
        return model

class Lookahead:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def state_dict(self):
        return self.optimizer.state_dict()

    def save(self, path):
        torch.save(self.state_dict(), path)
"""


def test_a_mixin_of_modules_saves_and_loads_the_built_model():
    assert _found(MIXIN) == [("ZG108", 7), ("ZG108", 13)]


# Buffers are never partitioned: a batch norm's running statistics, or a name the file registers with
# `register_buffer`, written through a module whose class cannot be read stay clean; its parameter does not.
BUFFERS = """
import torch
from torch import nn

def read(tensor):
    with torch.no_grad():
        tensor.copy_(torch.zeros_like(tensor))

class Holder(nn.Module):
    def __init__(self, vit):
        super().__init__()
        self.vit = vit
        self.register_buffer("stats", torch.zeros(1024, 1024))
        read(self.vit.stats)
        read(self.vit.norm.running_var)
        nn.init.zeros_(self.vit.norm.running_mean)
        nn.init.zeros_(self.vit.norm.num_batches_tracked)
        nn.init.zeros_(self.vit.cls_token)

    def forward(self, x):
        return self.vit(x)
"""


def test_buffers_of_a_module_of_unknown_class_are_no_parameters():
    assert _found(BUFFERS) == [("ZG103", 18)]


# Two encoders a builder method of the class returns as a tuple (`self.q, self.k = self.init_encoders()`): each
# was partitioned when its own constructor returned, so `__init__` reading a weight's shape or copying one
# encoder's parameters into the other sees placeholders. A builder returning settings stays a value.
BUILDER_TUPLE = """
from torch import nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2048, 1000)

class Moco(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder_q, self.encoder_k = self.init_encoders()
        self.dim, self.depth = self.sizes()
        dim_mlp = self.encoder_q.fc.weight.shape[1]
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)

    def init_encoders(self):
        return Encoder(), Encoder()

    def sizes(self):
        return 2048, 12
"""


def test_modules_a_builder_method_returns_as_a_tuple_are_built_children():
    assert _found(BUILDER_TUPLE) == [("ZG102", 14), ("ZG103", 16)]


# A helper of `__init__` builds an encoder of another file in a local and calls its own initialiser, which
# re-initialises its blocks through their own methods: the encoder was partitioned when its constructor returned.
# The same in a method run later on the built model builds a new, whole encoder.
ENCODER = """
import math
from torch import nn

class ResBlock(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.conv1 = nn.Conv2d(n, n, 3)

    def init_weights(self, init_scale=1.0):
        nn.init.kaiming_uniform_(self.conv1.weight, a=math.sqrt(5))
        self.conv1.weight.data.mul_(init_scale)

class Encoder(nn.Module):
    def __init__(self, n=256):
        super().__init__()
        self.layer_list = nn.ModuleList([ResBlock(n) for _ in range(4)])

    def init_weights(self, init_scale=1.0):
        for layer in self.modules():
            if isinstance(layer, ResBlock):
                layer.init_weights(init_scale)
"""

AMDIM = """
from torch import nn
from .networks import Encoder

class AMDIM(nn.Module):
    def __init__(self, encoder="amdim"):
        super().__init__()
        self.encoder = encoder
        if isinstance(encoder, str):
            self.encoder = self.init_encoder()

    def init_encoder(self):
        encoder = Encoder(256)
        encoder.init_weights()
        return encoder

    def replace_encoder(self):
        encoder = Encoder(256)
        encoder.init_weights()
        self.encoder = encoder
"""


def test_a_local_encoder_built_in_init_then_initialised_by_its_own_method(tmp_path):
    found = [(code, line) for code, line, _col in _found_in_package(tmp_path, ("networks", ENCODER), AMDIM)]
    assert found == [("ZG103", 14)]


# A builder method of `__init__` calls a local bound, branch by branch, to one of two factory functions of another
# file: the model is what either builds, so a training step normalising a child's weight in place writes a
# partitioned parameter. A local bound to a layer class without parameters builds none.
RESNETS = """
from torch import nn

class ResNet(nn.Module):
    def __init__(self, num_prototypes=3000):
        super().__init__()
        self.prototypes = nn.Linear(128, num_prototypes, bias=False)

    def forward(self, x):
        return self.prototypes(x)

def resnet18(**kwargs):
    return ResNet(**kwargs)

def resnet50(**kwargs):
    return ResNet(**kwargs)
"""

SWAV = """
import torch
from torch import nn
from .resnet import resnet18, resnet50

class SwAV(nn.Module):
    def __init__(self, arch="resnet50"):
        super().__init__()
        self.arch = arch
        self.model = self.init_model()
        norm = nn.Identity
        self.norm = norm()

    def init_model(self):
        if self.arch == "resnet18":
            backbone = resnet18
        else:
            backbone = resnet50
        return backbone(num_prototypes=3000)

    def shared_step(self, batch):
        with torch.no_grad():
            w = nn.functional.normalize(batch, dim=1, p=2)
            self.model.prototypes.weight.copy_(w)
            self.norm.zero_()
        return self.model(batch)
"""


def test_a_model_built_by_a_local_bound_to_one_of_two_factories(tmp_path):
    found = [(code, line) for code, line, _col in _found_in_package(tmp_path, ("resnet", RESNETS), SWAV)]
    assert found == [("ZG101", 24)]


# An initialiser of another file handed `self` from `__init__` walks the module and writes what it yields: the
# children built before the call are partitioned. Before any child, or a helper that only sets flags, is clean.
WALKERS = """
from torch import nn

def init_weights(module):
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)

def freeze(module):
    for p in module.parameters():
        p.requires_grad = False
"""

WALKED = """
from torch import nn
from .walkers import init_weights, freeze

class Early(nn.Module):
    def __init__(self):
        super().__init__()
        init_weights(self)
        self.fc = nn.Linear(1024, 1024)
        freeze(self)

    def forward(self, x):
        return self.fc(x)

class Late(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)
        init_weights(self)

    def forward(self, x):
        return self.fc(x)
"""


def test_an_initialiser_of_another_file_handed_self_after_children_were_built(tmp_path):
    found = [(code, line) for code, line, _col in _found_in_package(tmp_path, ("walkers", WALKERS), WALKED)]
    assert found == [("ZG103", 19)]


# Modules handed as `*args`: a constructor's typed varargs (`*heads: nn.Linear`) are modules its caller built, and a
# helper's `*modules` binds every extra argument of a call (`init(self.a, self.b)`); values logged stay clean.
VARARGS = """
from torch import nn

def init(*modules):
    for m in modules:
        nn.init.zeros_(m.weight)

def log(*values):
    for v in values:
        print(v)

class Heads(nn.Module):
    def __init__(self, *heads: nn.Linear):
        super().__init__()
        self.heads = nn.ModuleList(heads)
        for h in heads:
            nn.init.zeros_(h.weight)

    def forward(self, x):
        return [h(x) for h in self.heads]

class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(1024, 1024)
        self.b = nn.Linear(1024, 1024)
        init(self.a, self.b)
        log(self.a, self.b)

    def forward(self, x):
        return self.b(self.a(x))
"""


def test_modules_handed_as_varargs():
    assert _found(VARARGS) == [("ZG103", 17), ("ZG103", 27), ("ZG103", 27)]


# A loader builds the model and loads its state through a function that hands the model back (`unwrap(net)`);
# a function handing back something else (its state dict's keys) loads nothing into the model.
UNWRAPPED_LOAD = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)

def unwrap(model):
    return model.module if hasattr(model, "module") else model

def shadow(model):
    return Net()

def load(path):
    net = Net()
    unwrap(net).load_state_dict(torch.load(path))
    other = Net()
    shadow(other).load_state_dict(torch.load(path))
    return net
"""


def test_a_built_model_loaded_through_a_function_that_hands_it_back():
    assert _found(UNWRAPPED_LOAD) == [("ZG108", 21)]


# A method the training loop runs on the built model (an evaluation's full ranking) binds an embedding's whole
# weight to a local and computes with it through a tensor method; its shape alone is no read.
FULL_SORT = """
import torch
from torch import nn

class BPR(nn.Module):
    def __init__(self, n_users, n_items, d):
        super().__init__()
        self.user_embedding = nn.Embedding(n_users, d)
        self.item_embedding = nn.Embedding(n_items, d)

    def forward(self, user, item):
        return self.user_embedding(user), self.item_embedding(item)

    def full_sort_predict(self, user):
        user_e = self.user_embedding(user)
        all_item_e = self.item_embedding.weight
        return torch.matmul(user_e, all_item_e.transpose(0, 1)).view(-1)

    def n_items(self):
        all_item_e = self.item_embedding.weight
        return all_item_e.size(0)
"""


def test_a_weight_bound_to_a_local_then_computed_with_by_a_tensor_method():
    # the placeholder read (ZG109), and the hook bypass of a method other than forward computing with it (ZG303)
    assert _found(FULL_SORT) == [("ZG109", 16), ("ZG303", 16)]


# A model a plain class's builder method makes, or one a function returns beside its optimizer, then loaded; an
# optimizer returned beside it loads its own state.
BUILT_ELSEWHERE_LOADED = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)

def make_pair(cfg):
    net = Net()
    return net, torch.optim.SGD(net.parameters(), 0.1)

class Builder:
    def build(self, cfg):
        return Net()

    def load(self, cfg, path):
        model = self.build(cfg)
        model.load_state_dict(torch.load(path))
        net, opt = make_pair(cfg)
        net.load_state_dict(torch.load(path))
        opt.load_state_dict(torch.load(path))
        return model
"""


def test_models_built_by_a_builder_method_or_returned_in_a_tuple_then_loaded():
    assert _found(BUILT_ELSEWHERE_LOADED) == [("ZG108", 23), ("ZG108", 25)]


# Encoders built by a builder of an imported package of models chosen by a name known at run time
# (`getattr(torchvision.models, arch)`): models of a class we cannot read, partitioned once built, so `__init__`
# reading a weight's shape or copying one encoder's parameters into the other sees placeholders. A builder of
# another namespace (`getattr(nn, act)`, an activation) builds no such model.
BY_NAME = """
import torchvision
from torch import nn

class Moco(nn.Module):
    def __init__(self, base_encoder="resnet50", act="ReLU"):
        super().__init__()
        self.encoder_q, self.encoder_k = self.init_encoders(base_encoder)
        dim_mlp = self.encoder_q.fc.weight.shape[1]
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
        make = getattr(nn, act)
        self.act = make()
        n = self.act.weight.shape[0]

    def init_encoders(self, base_encoder):
        template_model = getattr(torchvision.models, base_encoder)
        return template_model(num_classes=128), template_model(num_classes=128)
"""


def test_models_built_by_a_builder_of_a_models_package_chosen_by_name():
    assert _found(BY_NAME) == [("ZG102", 9), ("ZG103", 11)]
