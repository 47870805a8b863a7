"""Facts that carry over to code shaped differently (issue 20, blind4's ZG1 misses as general gaps): what a helper
does to a module or parameter is reported where a built model's part is handed to it; a module known by its use
(a child a subclass builds, `cls(...)` of a module class, a class held in a variable); in-place writes over lists
of parameters (`torch._foreach_*_`); state dicts taken by a method a serialiser reaches."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import torch
from torch import nn
"""


def found(source: str) -> list[tuple[str, int]]:
    """(code, line) of the ZG1 findings on a file made of `HEAD` and `source` (lines counted in `source`)."""
    offset = HEAD.count("\n") + 1  # the first line of `source` after its opening newline is line 1
    return [(f.code, f.line - offset) for f in check_source("m.py", HEAD + textwrap.dedent(source))
            if f.code.startswith("ZG1")]


HAZARDS = {
    # A method run on the built model hands its children to a helper that writes their parameters.
    "entry-method-hands-children-to-a-writer": ("ZG101", 12, """
def soft_update(target, source, tau):
    for p, q in zip(source.parameters(), target.parameters()):
        q.data.mul_(1 - tau).add_(p.data, alpha=tau)

class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Linear(1024, 1024)
        self.target = nn.Linear(1024, 1024)

    def update_target(self):
        soft_update(self.target, self.online, 0.01)
"""),
    # A tensor parameter handed to a helper that writes it in place, from a method whose name a forward of the
    # file also calls on `F` (`F.normalize`): still a method run on the built model.
    "weight-handed-to-an-in-place-helper": ("ZG101", 14, """
def unit_rows(w):
    w.div_(torch.norm(w, dim=1, keepdim=True))

class Prototypes(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(128, 3000) for _ in range(2)])

    def forward(self, x):
        return [h(torch.nn.functional.normalize(x)) for h in self.heads]

    def normalize(self):
        for layer in self.heads:
            unit_rows(layer.weight)
"""),
    # A list built from a model's parameters, written in place by a foreach op.
    "foreach-over-a-parameter-list": ("ZG101", 4, """
def momentum_update(model, model_ema, m):
    ema_params = list(model_ema.parameters())
    torch._foreach_mul_(ema_params, m)
    torch._foreach_add_(ema_params, list(model.parameters()), alpha=1 - m)
"""),
    # ... and at the call site, from the helper's summary.
    "foreach-helper-called-on-built-children": ("ZG101", 12, """
def momentum_update(model, model_ema, m):
    ema_params = list(model_ema.parameters())
    torch._foreach_lerp_(ema_params, list(model.parameters()), 1 - m)

class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(1024, 1024)
        self.net_ema = nn.Linear(1024, 1024)

    def step_ema(self):
        momentum_update(self.net, self.net_ema, 0.99)
"""),
    # `cls(...)` in a classmethod of a module class is a built model, then loaded.
    "classmethod-builds-cls-then-loads": ("ZG108", 13, """
class Separator(nn.Module):
    def __init__(self, n=1024):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return self.fc(x)

    @classmethod
    def from_pretrained(cls, path):
        conf = torch.load(path)
        model = cls(**conf["args"])
        model.load_state_dict(conf["state_dict"])
        return model
"""),
    # A class held in a variable, built into a local named as models are, then loaded.
    "class-variable-builds-then-loads": ("ZG108", 4, """
def get_encoder(registry, name, path):
    EncoderClass = registry[name]["encoder"]
    encoder = EncoderClass(depth=5)
    encoder.load_state_dict(torch.load(path))
    return encoder
"""),
    # `save(path)` reaches `serialize()`, which reaches `get_state_dict()`: all run on the built model.
    "serialiser-reaches-the-own-state-dict": ("ZG108", 10, """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

    def forward(self, x):
        return self.fc(x)

    def get_state_dict(self):
        return self.state_dict()

    def serialize(self):
        return {"state_dict": self.get_state_dict(), "name": type(self).__name__}

    def save(self, path):
        torch.save(self.serialize(), path)
"""),
    # The model handed in is deep-copied into the name it came in (`model = copy.deepcopy(model)`).
    "deepcopy-rebinds-the-model-handed-in": ("ZG105", 4, """
import copy

def reparameterize(model: nn.Module) -> nn.Module:
    model = copy.deepcopy(model)
    for module in model.modules():
        if hasattr(module, "fuse"):
            module.fuse()
    return model
"""),
    # A target network `__init__` leaves `None` (built on first use) handed to a helper that writes a module's
    # parameters, from a method of the same name as the helper.
    "lazy-target-handed-to-a-writer": ("ZG101", 18, """
def update_moving_average(beta, ma_model, current_model):
    for current, ma in zip(current_model.parameters(), ma_model.parameters()):
        ma.data = beta * ma.data + (1 - beta) * current.data

class Learner(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Linear(1024, 1024)
        self.target = None
        self.beta = 0.99

    def forward(self, x):
        if self.target is None:
            self.target = nn.Linear(1024, 1024)
        return self.online(x) - self.target(x)

    def update_moving_average(self):
        update_moving_average(self.beta, self.target, self.online)
"""),
    # A local bound to one of two factories (each returning a Sequential of Linears), called in forward.
    "factory-chosen-in-a-local-called-in-forward": ("ZG106", 16, """
def mlp(d, n):
    return nn.Sequential(nn.Linear(d, n), nn.ReLU(), nn.Linear(n, n))

def deep_mlp(d, n):
    return nn.Sequential(nn.Linear(d, n), nn.ReLU(), nn.Linear(n, n), nn.ReLU(), nn.Linear(n, n))

class Wrapper(nn.Module):
    def __init__(self, net, deep=False):
        super().__init__()
        self.net = net
        self.deep = deep
        self.projector = None

    def forward(self, x):
        make = deep_mlp if self.deep else mlp
        self.projector = make(x.shape[-1], 256)
        return self.projector(self.net(x))
"""),
    # An override of `load_state_dict` (called by a loader on the built model) compares shapes of its own state.
    "load-state-dict-override-compares-own-shapes": ("ZG108", 10, """
class Segmenter(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(1024, 1024, 3)

    def forward(self, x):
        return self.head(x)

    def load_state_dict(self, state_dict, strict=True):
        own = self.state_dict()
        for key in set(own) & set(state_dict):
            if own[key].shape != state_dict[key].shape:
                state_dict.pop(key)
        return super().load_state_dict(state_dict, strict=strict)
"""),
    # A submodule that hands out the modules of the ModuleDict it wraps (`def items(self)`), walked in a method
    # run on the built model: each item's weight is read outside its forward.
    "items-of-a-dict-like-module": ("ZG109", 19, """
class MultiEmbedding(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.embeddings = nn.ModuleDict({k: nn.Embedding(n, 512) for k, n in sizes.items()})

    def items(self):
        return self.embeddings.items()

    def forward(self, x):
        return {k: emb(x[k]) for k, emb in self.embeddings.items()}

class Model(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.input_embeddings = MultiEmbedding(sizes)

    def log_embeddings(self, logger):
        for name, emb in self.input_embeddings.items():
            logger.add_embedding(emb.weight.data.detach().cpu(), tag=name)
"""),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard(case):
    code, line, source = HAZARDS[case]
    assert (code, line) in found(source)


SAFE = {
    # An optimizer over the parameters, a flag setter through a helper, gradients zeroed in bulk.
    "optimizer-flags-and-gradients": """
def freeze(model):
    for p in model.parameters():
        p.requires_grad_(False)

class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(2)])
        self.register_buffer("running", torch.zeros(1024))
        self.stats = [torch.zeros(4)]

    def forward(self, x):
        return [h(x) for h in self.heads]

    def make_optimizer(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

    def stop(self):
        freeze(self.heads)

    def zero(self):
        torch._foreach_zero_([p.grad for p in self.parameters() if p.grad is not None])

    def decay(self, acts):
        torch._foreach_mul_(self.stats, 0.5)
        torch._foreach_mul_(acts, 0.5)
        self.running.mul_(0.5)
""",
    # An optimizer or a plain stateful object built and then loaded: no module.
    "optimizer-or-stats-loaded": """
class RunningStats:
    def __init__(self):
        self.count = 0

    def load_state_dict(self, state):
        self.count = state["count"]

def restore(opt_cls, params, path):
    optimizer = opt_cls(params)
    optimizer.load_state_dict(torch.load(path))
    stats = RunningStats()
    stats.load_state_dict(torch.load(path))
    return optimizer, stats
""",
    # A model built and loaded inside a gather: the load writes the full tensors.
    "load-inside-a-gather": """
import deepspeed

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)

def build(path):
    model = Net()
    with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=0):
        model.load_state_dict(torch.load(path))
    return model
""",
    # `optimizer.state_dict()` in a save method: not the module's state.
    "optimizer-state-saved": """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)
        self.opt = None

    def forward(self, x):
        return self.fc(x)

    def save(self, path):
        torch.save(self.opt.state_dict(), path)
""",
    # A list of tensors `__init__` leaves `None`, handed to a helper that writes the items of a list it is given.
    "lazy-shadow-list-handed-to-a-writer": """
def lerp_into(shadow, params, w):
    for s, p in zip(shadow, params):
        s.mul_(w).add_(p.detach(), alpha=1 - w)

class Averaged(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1024, 1024)
        self.shadow = None

    def forward(self, x):
        return self.fc(x)

    def step(self, live):
        lerp_into(self.shadow, live, 0.99)
""",
    # Modules built in forward wrapped by a torch container: reported where they are built, not again.
    "container-wraps-modules-built-before": """
class Wrapper(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first = first
        self.second = second

    def forward(self, x):
        head = nn.Sequential(self.first, self.second)
        return head(x)
""",
    # An override of `load_state_dict` that renames the keys it is given and hands them on.
    "load-state-dict-override-renames-keys": """
class Segmenter(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(1024, 1024, 3)

    def forward(self, x):
        return self.head(x)

    def load_state_dict(self, state_dict, strict=True):
        state_dict = {k.replace("model.", ""): v for k, v in state_dict.items()}
        return super().load_state_dict(state_dict, strict=strict)
""",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_safe(case):
    assert found(SAFE[case]) == []


INIT_HELPERS = """
import torch.nn as nn

def initialize_decoder(module):
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_uniform_(m.weight, mode="fan_in", nonlinearity="relu")

def count(module):
    return len(list(module.modules()))
"""

BASE = """
import torch
from . import initialization as init

class SegmentationModel(torch.nn.Module):
    def initialize(self):
        init.initialize_decoder(self.decoder)
        self.n = init.count(self.decoder)

    def forward(self, x):
        return self.decoder(self.encoder(x))
"""


def test_a_base_initialiser_hands_a_child_its_subclasses_build_to_another_files_writer(tmp_path):
    pkg = tmp_path / "seg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "initialization.py").write_text(textwrap.dedent(INIT_HELPERS))
    base = pkg / "model.py"
    base.write_text(textwrap.dedent(BASE))
    found = [(f.code, f.line) for f in check_source(str(base), base.read_text())]
    # `self.decoder` is never assigned in the class: a subclass builds it before `initialize()` runs;
    # `count` only walks the modules, it writes nothing
    assert found == [("ZG103", 7)]


LIBRARY_CHILD = """
from vendor_lib import VisionTransformer

def init_positions(table):
    table.data.copy_(torch.zeros_like(table))

class Wrapper(nn.Module):
    def __init__(self, vit: VisionTransformer):
        super().__init__()
        self.vit = vit
        self.head = nn.Linear(768, 10)
        nn.init.normal_(self.vit.cls_token, std=0.02)
        init_positions(table=self.vit.encoder.pos_embedding)

    def forward(self, x):
        return self.head(self.vit(x))
"""


def test_an_attribute_of_a_library_model_handed_in_is_a_parameter_when_it_is_initialised():
    # the class cannot be read; an initialiser (or a helper written to) given `self.vit.<attr>` says it is one
    assert found(LIBRARY_CHILD) == [("ZG103", 11), ("ZG103", 12)]


LIBRARY_CHILD_SAFE = """
from vendor_lib import VisionTransformer

class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(768, 768)
        self.register_buffer("pos_table", torch.zeros(1, 197, 768))

class Wrapper(nn.Module):
    def __init__(self, vit: VisionTransformer, cfg):
        super().__init__()
        self.vit = vit
        self.cfg = cfg
        self.decoder = Decoder()
        self.vit.running_count.zero_()  # an in-place method alone: a buffer as likely as a parameter
        nn.init.normal_(self.decoder.pos_table)  # the class says it is a buffer
        print(self.cfg.init_std, self.vit.embed_dim)

    def forward(self, x):
        return self.decoder.proj(self.vit(x))
"""


def test_buffers_flags_and_settings_of_a_child_stay_clean():
    assert found(LIBRARY_CHILD_SAFE) == []


HUB_MIXIN = """
from huggingface_hub import PyTorchModelHubMixin
from tokenizers_lib import SavesVocabulary

class HubMixin(PyTorchModelHubMixin):
    def save_pretrained(self, directory, **kwargs):
        self.config["_class"] = type(self).__name__
        return super().save_pretrained(directory, **kwargs)

class Vocabulary(SavesVocabulary):
    def save_pretrained(self, directory):
        return super().save_pretrained(directory)
"""


def test_a_hub_mixins_save_pretrained_serialises_the_module_it_is_mixed_into():
    # the plain class whose base saves something else stays clean
    assert found(HUB_MIXIN) == [("ZG108", 7)]
