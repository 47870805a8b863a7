"""ZG1 joins found by probing the same hazard in many shapes (h-zg1pkg): modules reached through a literal
sequence of children, a local list of modules a constructor builds, a helper of a helper, and a free layer
factory that initialises what it built. Each with a safe look-alike."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found_in_package


def _found(source: str, path: str = "model.py") -> list[tuple[str, int]]:
    source = textwrap.dedent(source)
    return [(f.code, f.line) for f in check_source(path, source) if f.code.startswith("ZG1")]


def _found_in_package(tmp_path, helper: str, checked: str) -> list[tuple[str, int]]:
    """The ZG1 findings of `model.py` in a package beside `utils.py`."""
    return found_in_package(tmp_path, {"utils.py": helper, "model.py": checked}, "model.py", prefix="ZG1")


# A loop over a literal tuple of children built earlier in `__init__`: each one is partitioned already.
LITERAL_CHILDREN = """
import torch.nn as nn

class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        for lin in (self.q, self.k):
            nn.init.xavier_uniform_(lin.weight)

    def forward(self, x):
        return self.q(x) + self.k(x)
"""

# ... only flags set on them, or the same loop inside GatheredParameters, or run in forward: no write.
LITERAL_CHILDREN_SAFE = """
import deepspeed
import torch.nn as nn

class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        for lin in (self.q, self.k):
            lin.weight.requires_grad = False
        for lin in [self.q, self.k]:
            with deepspeed.zero.GatheredParameters(lin.weight, modifier_rank=0):
                nn.init.xavier_uniform_(lin.weight)

    def forward(self, x):
        for blk in (self.q, self.k):
            x = blk(x)
        return x
"""


def test_literal_sequence_of_children_initialised():
    assert ("ZG103", 10) in _found(LITERAL_CHILDREN)


def test_literal_sequence_of_children_safe():
    assert _found(LITERAL_CHILDREN_SAFE) == []


# ... handed one by one to an initialiser of another file.
LITERAL_HANDED = """
import torch.nn as nn
from .utils import init_fn

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.actor = nn.Linear(d, d)
        self.critic = nn.Linear(d, 1)
        for net in [self.actor, self.critic]:
            init_fn(net)

    def forward(self, x):
        return self.actor(x)
"""

INIT_FN = """
import torch.nn as nn

def init_fn(m):
    if isinstance(m, nn.Linear):
        nn.init.orthogonal_(m.weight)
"""


def test_literal_sequence_handed_to_initialiser_of_another_file(tmp_path):
    assert ("ZG103", 11) in _found_in_package(tmp_path, INIT_FN, LITERAL_HANDED)


# A local list of modules the constructor builds (a comprehension, appends, a factory returning a list),
# initialised in a loop: each module was partitioned when its own `__init__` returned.
LOCAL_LISTS = """
import torch.nn as nn

def make_layers(d, n):
    return [nn.Linear(d, d) for _ in range(n)]

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        a = [nn.Linear(d, d) for _ in range(3)]
        for l in a:
            nn.init.orthogonal_(l.weight)
        b = []
        for i in range(3):
            b.append(nn.Linear(d, d))
        for l in b:
            l.weight.data.normal_(0, 0.02)
        c = make_layers(d, 3)
        for l in c:
            nn.init.zeros_(l.bias)
        self.layers = nn.ModuleList(a + b + c)

    def forward(self, x):
        return self.layers[0](x)
"""

# ... flags on them, or the list only registered: no parameter touched.
LOCAL_LISTS_SAFE = """
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, d, freeze):
        super().__init__()
        layers = [nn.Linear(d, d) for _ in range(3)]
        for l in layers:
            l.requires_grad_(not freeze)
        more = []
        for i in range(3):
            more.append(nn.Linear(d, d))
            more.append(nn.ReLU())
        for i, l in enumerate(more):
            self.add_module(f"l{i}", l)
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)
"""


def test_local_lists_of_built_modules_initialised():
    assert {("ZG103", 12), ("ZG103", 17), ("ZG103", 20)} <= set(_found(LOCAL_LISTS))


def test_local_lists_of_built_modules_safe():
    assert _found(LOCAL_LISTS_SAFE) == []


# An initialiser of another file that walks the model and hands each submodule to a second helper, which
# initialises it: two calls between the constructor and the write.
TWO_HOPS = """
import torch.nn as nn

def _init_one(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)

def init_weights(model):
    for m in model.modules():
        _init_one(m)
"""

# ... the same walk handing each submodule to a helper that only sets flags.
TWO_HOPS_SAFE = """
def _freeze_one(m):
    for p in m.parameters():
        p.requires_grad = False

def init_weights(model):
    for m in model.modules():
        _freeze_one(m)
"""

CALLS_INIT_WEIGHTS = """
import torch.nn as nn
from .utils import init_weights

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        init_weights(self)

    def forward(self, x):
        return self.fc(x)
"""


def test_walk_handing_submodules_to_a_second_helper(tmp_path):
    assert ("ZG103", 9) in _found_in_package(tmp_path, TWO_HOPS, CALLS_INIT_WEIGHTS)


def test_walk_handing_submodules_to_a_flag_helper_safe(tmp_path):
    assert _found_in_package(tmp_path, TWO_HOPS_SAFE, CALLS_INIT_WEIGHTS) == []


# A free layer factory a constructor of the file calls: the layer it builds is partitioned when its own
# `__init__` returns, so initialising it afterwards writes a placeholder.
FACTORY = """
import torch.nn as nn

def make_linear(d_in, d_out):
    linear = nn.Linear(d_in, d_out)
    nn.init.xavier_uniform_(linear.weight)
    return linear

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = make_linear(d, d)

    def forward(self, x):
        return self.proj(x)
"""

# ... and one no constructor of its file calls: a torch layer's factory is called by the constructors of other files
# (`built.layer_factory`; once taken for a script's plain layer).
FACTORY_UNCALLED = """
import torch.nn as nn

def make_linear(d_in, d_out):
    linear = nn.Linear(d_in, d_out)
    nn.init.xavier_uniform_(linear.weight)
    return linear
"""

# ... one that only sets flags.
FACTORY_SAFE = """
import torch.nn as nn

def make_frozen(d):
    linear = nn.Linear(d, d)
    linear.weight.requires_grad = False
    return linear

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = make_frozen(d)

    def forward(self, x):
        return self.proj(x)
"""


def test_layer_factory_called_in_construction_initialises():
    assert ("ZG103", 6) in _found(FACTORY)


def test_layer_factory_no_constructor_of_its_file_calls_initialises():
    assert ("ZG103", 6) in _found(FACTORY_UNCALLED)


def test_layer_factory_safe():
    assert _found(FACTORY_SAFE) == []


# A plain object keeping a mapping of models it built (`{"actor": Net(d), ...}`): its values and items are built
# models, so their state dicts and weights read outside any gather are placeholders.
MAPPING_OF_MODELS = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)

class Algo:
    def __init__(self, d):
        self.nets = {"actor": Net(d), "critic": Net(d)}

    def save(self):
        for net in self.nets.values():
            torch.save(net.state_dict(), "x.pt")

    def norms(self):
        return [net.fc.weight.norm().item() for net in self.nets.values()]
"""

# ... a mapping of settings is no model.
MAPPING_OF_SETTINGS = """
class Algo:
    def __init__(self, cfgs):
        self.cfgs = {"actor": cfgs.a, "critic": cfgs.c}

    def describe(self):
        return {k: v.hidden for k, v in self.cfgs.items()}
"""


def test_mapping_of_models_kept_by_a_plain_object():
    found = _found(MAPPING_OF_MODELS)
    assert ("ZG108", 19) in found and ("ZG109", 22) in found


def test_mapping_of_settings_safe():
    assert _found(MAPPING_OF_SETTINGS) == []


# Code given a model: a parameter compared by value (`(p == 0).sum()`), or bound to a local that is then
# computed with (`w = model.encoder.weight` ... `w.abs()`), reads the placeholder's values.
COMPARED_AND_BOUND = """
class Evaluator:
    def __init__(self, model):
        self.model = model

    def sparsity(self):
        return sum((p == 0).sum().item() for p in self.model.parameters())

def log_weight(model, logger):
    w = model.encoder.weight
    logger.log({"w": w.abs().mean().item()})
"""

# ... a parameter tested by identity or membership, or a local bound to one and only asked what it is.
COMPARED_AND_BOUND_SAFE = """
class Evaluator:
    def __init__(self, model):
        self.model = model

    def trainable(self, frozen):
        return [p for p in self.model.parameters() if p not in frozen and p is not None]

def describe(model):
    w = model.encoder.weight
    return w.is_leaf, w.dtype, w.is_contiguous()
"""


def test_parameter_compared_by_value_or_bound_then_computed():
    found = _found(COMPARED_AND_BOUND)
    assert ("ZG109", 7) in found and ("ZG109", 10) in found


def test_parameter_compared_by_identity_or_bound_and_described_safe():
    assert _found(COMPARED_AND_BOUND_SAFE) == []


# A plain algorithm class whose base (another file) calls `self._create_networks()` from its constructor, which the
# subclass overrides to build a ModuleDict of models; items of that container handed to a helper of another file
# that blends or copies their parameters are built models (`Base.__init__(self)` dispatches to the override).
ALGO_BASE = """
class Algo:
    def __init__(self, d):
        self.d = d
        self._create_networks()

    def _create_networks(self):
        self.nets = None
"""

ALGO_UTILS = """
def soft_update(source, target, tau):
    for t, s in zip(target.parameters(), source.parameters()):
        t.copy_(t * (1.0 - tau) + s * tau)
"""

ALGO = """
import torch.nn as nn
from .base import Algo
from . import utils as TorchUtils

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(x)

class TD3(Algo):
    def __init__(self, d):
        Algo.__init__(self, d)

    def _create_networks(self):
        self.nets = nn.ModuleDict()
        self.nets["critic"] = nn.ModuleList([Net(self.d), Net(self.d)])
        self.nets["critic_target"] = nn.ModuleList([Net(self.d), Net(self.d)])

    def train_on_batch(self, batch):
        for i in range(2):
            TorchUtils.soft_update(source=self.nets["critic"][i], target=self.nets["critic_target"][i], tau=0.01)
"""

# ... the same items handed to a helper that only counts their parameters' flags.
ALGO_UTILS_SAFE = """
def soft_update(source, target, tau):
    return sum(p.requires_grad for p in target.parameters())
"""


def _algo(tmp_path, utils: str) -> list[tuple[str, int]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(textwrap.dedent(ALGO_BASE))
    (pkg / "utils.py").write_text(textwrap.dedent(utils))
    module = pkg / "algo.py"
    module.write_text(textwrap.dedent(ALGO))
    return [(f.code, f.line) for f in check_source(str(module), module.read_text()) if f.code.startswith("ZG1")]


def test_items_of_models_built_by_an_override_the_base_constructor_runs(tmp_path):
    assert ("ZG101", 25) in _algo(tmp_path, ALGO_UTILS)


def test_items_of_models_handed_to_a_flag_counter_safe(tmp_path):
    assert _algo(tmp_path, ALGO_UTILS_SAFE) == []


# A policy whose mode setup (run by name from the base constructor) wraps the model it holds: the wrapper's state
# dict is the model's (ZG108), while the wrapper's own forward runs the model with its hooks (no ZG302).
WRAPPED_IN_SETUP = """
import copy
import torch
from rl_library.model import model_wrap

class Policy:
    def __init__(self, model: torch.nn.Module):
        self._model = model
        for field in ("learn",):
            getattr(self, "_init_" + field)()

    def _init_learn(self):
        self._optimizer = torch.optim.Adam(self._model.parameters())
        self._target_model = copy.deepcopy(self._model)
        self._learn_model = model_wrap(self._model, wrapper_name="base")

    def _forward_learn(self, batch):
        q = self._learn_model.forward(batch)
        q.sum().backward()
        self._optimizer.step()

    def _state_dict_learn(self):
        return {"model": self._learn_model.state_dict()}
"""


def test_attribute_set_from_a_held_model_in_a_setup_method():
    found = _found(WRAPPED_IN_SETUP)
    assert ("ZG108", 23) in found
    assert not any(code == "ZG302" for code, _ in check_codes(WRAPPED_IN_SETUP))


def check_codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(source))]


# `chain(...)` of parameter walks and a literal list of children, in `__init__`.
CHAINED_AND_STARRED = """
from itertools import chain
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = nn.Linear(d, d)
        self.decoder = nn.Linear(d, d)
        self.qs = nn.ModuleList([nn.Linear(d, d) for _ in range(2)])
        for p in chain(self.encoder.parameters(), self.decoder.parameters()):
            nn.init.uniform_(p)
        for m in [self.encoder, self.decoder]:
            nn.init.zeros_(m.weight)

    def forward(self, x):
        return self.decoder(self.encoder(x))
"""

# ... the same walks setting flags only.
CHAINED_AND_STARRED_SAFE = """
from itertools import chain
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = nn.Linear(d, d)
        self.decoder = nn.Linear(d, d)
        self.qs = nn.ModuleList([nn.Linear(d, d) for _ in range(2)])
        for p in chain(self.encoder.parameters(), self.decoder.parameters()):
            p.requires_grad = False
        for m in [self.encoder, self.decoder]:
            m.requires_grad_(False)

    def forward(self, x):
        return self.decoder(self.encoder(x))
"""


def test_chained_walks_and_listed_children_initialised():
    found = _found(CHAINED_AND_STARRED)
    assert ("ZG103", 12) in found and ("ZG103", 14) in found


def test_chained_walks_and_listed_children_flags_safe():
    assert _found(CHAINED_AND_STARRED_SAFE) == []


# A held model's state dict read for its keys alone names parameters and reads none.
KEYS_ONLY = """
def check_heads(model, state_dict):
    head_keys = [k for k in model.state_dict().keys() if k.startswith("heads.")]
    return [k for k in state_dict if k not in head_keys]
"""


def test_state_dict_keys_alone_safe():
    assert _found(KEYS_ONLY) == []
