"""Instance typing and what a class's methods do to its own parameters (issue 20, h-pcls): ZG303 for a call
`v.m(...)` whose `v` is typed by a constructor, an annotation or a typed `__init__` argument, dispatched to the
subclasses that override `m`; and a module with no forward, whose small parameters no hook ever fetches."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found, write_package

BASES = """
import torch
from torch import nn

class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.d = d

    def update(self, h):
        raise NotImplementedError

    def sizes(self):
        raise NotImplementedError

class GaussianHead(Head):
    def __init__(self, d):
        super().__init__(d)
        self.std = nn.Parameter(torch.ones(d))

    def update(self, h):
        self.scale = self.std.clamp(1e-6, 1e6)
        return h * self.scale

    def sizes(self):
        return self.std.shape

class Projection(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.table = nn.Parameter(torch.empty(4096, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return x @ self.table.T

    def attend(self, h):
        return h @ self.table.T

    def normed(self, h):
        return self.norm(h)
"""


def _package(tmp_path, model: str):
    return write_package(tmp_path, {"heads.py": BASES, "model.py": model}, "lib") / "model.py"


def _found(tmp_path, model: str) -> list[tuple[str, int]]:
    return found(_package(tmp_path, model), "ZG3")


ANNOTATED = """
from torch import nn
from .heads import Head, Projection

class Policy(nn.Module):
    def __init__(self, d, head_class, cfg):
        super().__init__()
        self.mlp = nn.Linear(d, d)
        self.head: Head | None = head_class(d, **cfg)

    def forward(self, x):
        h = self.mlp(x)
        return self.head.update(h)
"""


def test_an_annotated_attribute_dispatches_to_the_subclass_that_reads_its_own_parameter(tmp_path):
    # the annotation names the base, whose `update` raises; the subclass of the same file overrides it and
    # clamps its own `std`, a vector ZeRO-3 would keep gathered, but the head has no forward: no hook ever ran
    assert _found(tmp_path, ANNOTATED) == [("ZG303", 13)]


def test_a_method_of_the_annotated_instance_that_only_reads_sizes_of_a_gathered_module_is_clean(tmp_path):
    safe = ANNOTATED.replace("self.head: Head | None", "self.head: Projection").replace(".update(h)", ".normed(h)")
    assert _found(tmp_path, safe) == []


TYPED_ARGUMENT = """
from torch import nn
from .heads import Projection

class Decoder(nn.Module):
    def __init__(self, proj: Projection):
        super().__init__()
        self.proj = proj
        self.blocks = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj.attend(self.blocks(x))
"""


def test_a_module_handed_to_init_through_an_annotated_argument_is_typed_by_it(tmp_path):
    assert _found(tmp_path, TYPED_ARGUMENT) == [("ZG303", 12)]


def test_the_same_instance_run_as_a_module_or_through_a_method_that_runs_children_is_clean(tmp_path):
    assert _found(tmp_path, TYPED_ARGUMENT.replace("self.proj.attend(", "self.proj(")) == []
    assert _found(tmp_path, TYPED_ARGUMENT.replace("self.proj.attend(", "self.proj.normed(")) == []


NO_FORWARD_LOCAL = """
import torch
from torch import nn

class Scale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(d))

    def apply_to(self, h):
        return h * self.log_scale.exp()

class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.scale = Scale(d)

    def forward(self, x):
        return self.scale.apply_to(self.fc(x))
"""


def test_a_child_with_no_forward_never_gathers_even_a_small_parameter(tmp_path):
    assert _found(tmp_path, NO_FORWARD_LOCAL) == [("ZG303", 20)]


def test_a_small_parameter_of_a_child_with_a_forward_stays_gathered(tmp_path):
    with_forward = NO_FORWARD_LOCAL.replace(
        "    def apply_to(self, h):", "    def forward(self, h):\n        return h\n\n    def apply_to(self, h):"
    )
    assert _found(tmp_path, with_forward) == []


LIBRARY = {
    "fakeclip/__init__.py": "from .factory import create_model_and_transforms\n",
    "fakeclip/factory.py": """
from .model import CLIP

def create_model(name):
    model = CLIP(512)
    return model

def create_model_and_transforms(name, pretrained=None):
    model = create_model(name)
    return model, None, None
""",
    "fakeclip/model.py": """
import torch
from torch import nn

class TextTower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.transformer = nn.Linear(d, d)
        self.positional_embedding = nn.Parameter(torch.empty(4096, d))

class CLIP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.visual = nn.Linear(d, d)
        text = TextTower(d)
        self.transformer = text.transformer
        self.positional_embedding = text.positional_embedding

    def forward(self, image, text):
        return self.encode_image(image), self.encode_text(text)

    def encode_text(self, t):
        return self.transformer(t + self.positional_embedding)

    def encode_image(self, x):
        return self.visual(x)
""",
    "app/__init__.py": "",
    "app/adapter.py": """
import fakeclip
from torch import nn

class Adapter:
    def __init__(self, name):
        clip, _, preprocess = fakeclip.create_model_and_transforms(name)
        clip = clip.cuda()
        self.clip = clip

    def embed_text(self, t):
        return self.clip.encode_text(t)

    def embed_image(self, x):
        return self.clip.encode_image(x)

class ClipModule(nn.Module):
    def __init__(self, name):
        super().__init__()
        clip, _, preprocess = fakeclip.create_model_and_transforms(name)
        self.clip = clip

    def embed_texts(self, t):
        return self.clip.encode_text(t)

    def embed_images(self, x):
        return self.clip.encode_image(x)

class Generator(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.enc = ClipModule(name)
        self.out = nn.Linear(512, 512)

    def forward(self, t, x):
        return self.out(self.enc.embed_texts(t) + self.enc.embed_images(x))
""",
}


def test_a_model_a_library_factory_returns_in_a_tuple_is_typed_through_its_files(tmp_path):
    # the factory's chain (a tuple, a second factory, `clip.cuda()`) types `self.clip` as the library's CLIP, whose
    # `encode_text` reads a parameter it took from a module it built; `encode_image` only runs a child
    for name, text in LIBRARY.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    path = tmp_path / "app" / "adapter.py"
    found = [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code.startswith("ZG3")]
    # the plain holder's call, and the parent's forward calling the child's method, which reaches CLIP's
    # parameter through CLIP's method; the image paths stay clean
    assert found == [("ZG303", 12), ("ZG303", 36)]


EXPOSED = """
from copy import deepcopy
from torch import nn

class Averaged(nn.Module):
    def __init__(self, model: nn.Module, method_names=(), settings=None):
        super().__init__()
        self.model = model
        self.settings = settings
        self.copy = None
        self.method_names = method_names

    def start(self):
        self.copy = deepcopy(self.model)
        for name in self.method_names:
            fn = getattr(self.copy, name)
            setattr(self, name, fn)

    def configure(self, keys):
        for key in keys:
            setattr(self, key, getattr(self.settings, key))

    def forward(self, x):
        return self.copy(x)
"""


def test_methods_of_a_held_model_exposed_by_a_run_time_name_bypass_its_hooks(tmp_path):
    path = tmp_path / "ema.py"
    path.write_text(textwrap.dedent(EXPOSED))
    found = [(f.code, f.line) for f in check_source(str(path), path.read_text()) if f.code.startswith("ZG3")]
    # the copy of the held model exposes its methods; the settings object's values are no module's methods
    assert found == [("ZG302", 17)]


def test_a_receiver_bound_through_a_property_a_conditional_or_an_unpacking_keeps_its_class(tmp_path):
    model = ANNOTATED.replace(
        "        return self.head.update(h)\n",
        "        return self.main.update(h)\n\n"
        "    @property\n    def main(self):\n        return self.head\n\n"
        "    def sample(self, h, slow=False):\n        head, n = (self.head if slow else self.main), 2\n"
        "        return head.update(h) * n\n",
    )
    assert _found(tmp_path, model) == [("ZG303", 13), ("ZG303", 21)]
