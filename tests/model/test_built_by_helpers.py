"""Modules a constructor builds through something other than a plain constructor call: a `dict(...)` of keyword
layers in a `ModuleDict`, a function nested in `__init__`, a model builder of any model kind (`build_ts_model`), and
a child handed by keyword to a function that runs it. Each is partitioned once built under `zero.Init`, so what
`__init__` then does to it is a hazard; the look-alikes touch only what is not built yet."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source))]


# minGPT as rllib and others vendor it: every child sits in a `ModuleDict(dict(...))` of keyword layers.
KEYWORD_DICT = """
import math
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_proj = nn.Linear(64, 64)

    def forward(self, x):
        return self.c_proj(x)

class GPT(nn.Module):
    def __init__(self, n_layer):
        super().__init__()
        self.transformer = nn.ModuleDict(
            dict(drop=nn.Dropout(0.1), h=nn.ModuleList([Block() for _ in range(n_layer)]), ln_f=nn.LayerNorm(64))
        )
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, x):
        for block in self.transformer.h:
            x = block(x)
        return self.transformer.ln_f(x)
"""


def test_layers_given_to_a_module_dict_by_keyword_are_children():
    assert found(KEYWORD_DICT) == [("ZG103", 22)]


def test_a_module_dict_of_parameterless_layers_only_is_no_child_with_parameters():
    source = KEYWORD_DICT.replace("h=nn.ModuleList([Block() for _ in range(n_layer)]), ln_f=nn.LayerNorm(64)",
                                  "act=nn.GELU()")
    assert [code for code, _ in found(source) if code == "ZG103"] == []


# A local helper of `__init__` builds each embedding table; the forward reads one table's weight unhooked.
NESTED_BUILDER = """
from torch import nn

class Embed(nn.Embedding):
    pass

class MemNN(nn.Module):
    def __init__(self, n, d):
        super().__init__()

        def embedding():
            return Embed(n, d)

        self.query_lt = embedding()
        self.answer_embedder = embedding()

    def forward(self, xs, cands=None):
        state = self.query_lt(xs)
        if cands is not None:
            return state, self.answer_embedder(cands)
        return state, self.answer_embedder.weight
"""


def test_a_function_nested_in_init_builds_the_module_it_returns():
    assert ("ZG301", 21) in found(NESTED_BUILDER)


def test_a_nested_function_returning_a_value_builds_no_module():
    source = NESTED_BUILDER.replace("return Embed(n, d)", "return n * d").replace(
        "return state, self.answer_embedder.weight", "return state, None")
    assert [code for code, _ in found(source) if code.startswith("ZG3")] == []


def test_what_a_function_inside_the_nested_builder_returns_is_not_what_the_builder_builds():
    # the inner `size()` returns a number; the builder itself still returns the table it built
    source = NESTED_BUILDER.replace("""        def embedding():
            return Embed(n, d)""", """        def embedding():
            def size():
                return n * d

            return Embed(n, d)""")
    assert ("ZG301", 24) in found(source)


# A model builder of another file (`build_ts_model`), the built model's first stage run on a probe input to size
# a head; and a child handed by keyword to a function that runs it.
PROBED = """
import torch
from torch import nn
from .core import build_ts_model

def out_dim(c: int, model_cnn: nn.Module) -> int:
    with torch.no_grad():
        return model_cnn(torch.zeros(1, c, 8, 8)).flatten().shape[0]

class Multi(nn.Module):
    def __init__(self, feats, c_out):
        super().__init__()
        nf = 0
        for feat in feats:
            m = build_ts_model(feat, c_out)
            with torch.no_grad():
                nf += m[0](torch.randn(1, feat, 10)).shape[1]
        self.head = nn.Linear(nf, c_out)

class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(c, 4, 3), nn.ReLU())
        self.dim = out_dim(c=c, model_cnn=self.cnn)
        self.fc = nn.Linear(self.dim, 1)
"""


def test_a_built_model_or_child_run_on_a_probe_in_init():
    assert found(PROBED) == [("ZG110", 17), ("ZG110", 24)]


def test_a_builder_of_something_else_or_a_child_handed_to_a_sizer_is_no_run():
    source = PROBED.replace("build_ts_model(feat, c_out)", "get_ts_config(feat, c_out)").replace(
        "return model_cnn(torch.zeros(1, c, 8, 8)).flatten().shape[0]", "return c * 8")
    assert found(source) == []


# A helper handed a layer built right there, written over two lines: reported from the helper's call.
OVER_LINES = """
import torch
from torch import nn

def layer_init(layer, std=1.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    return layer

class Policy(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.decoder = layer_init(
            nn.Linear(d, n), std=0.01)
"""


def test_a_helper_call_over_two_lines_spans_both():
    [finding] = [f for f in check_source("m.py", textwrap.dedent(OVER_LINES)) if f.code == "ZG103"]
    assert (finding.line, finding.end_line) == (12, 13)


def test_a_nested_function_calling_itself_is_read_without_end():
    source = """
    from torch import nn

    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()

            def build(k):
                return build(k - 1) if k else nn.Linear(4, 4)

            self.a = build(n)
    """
    assert found(source) == []


def test_a_function_returning_a_factory_builds_no_module_itself():
    # `get_subnet_constructor` returns its nested `subnet`, a factory: calling what it returns builds, runs nothing
    source = """
    from torch import nn

    def get_subnet_constructor(reduction):
        def subnet(dims_in, dims_out):
            return nn.Sequential(nn.Linear(dims_in, dims_in // reduction), nn.Linear(dims_in // reduction, dims_out))

        return subnet

    class Coupling(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.split = channels // 2
            make = get_subnet_constructor(2)
            self.f = make(self.split, channels - self.split)
    """
    assert found(source) == []


# A layer `__init__` built into a local and handed to a library initialiser: by a name that says so, or any public
# function of a library module named for initialisers (fvcore's `weight_init`).
LOCAL_INIT = """
import fvcore.nn.weight_init as weight_init
from mmcv.cnn import normal_init
from torch import nn

class FPN(nn.Module):
    def __init__(self, in_channels, d):
        super().__init__()
        self.laterals = nn.ModuleList()
        for c in in_channels:
            lateral = nn.Conv2d(c, d, 1)
            weight_init.c2_xavier_fill(lateral)
            self.laterals.append(lateral)
        out = nn.Conv2d(d, d, 3, padding=1)
        normal_init(out, std=0.01)
        self.out = out

    def forward(self, xs):
        return [self.out(conv(x)) for conv, x in zip(self.laterals, xs)]
"""


def test_a_local_layer_handed_to_an_initialiser_after_it_was_built():
    assert found(LOCAL_INIT) == [("ZG103", 12), ("ZG103", 15)]


def test_a_local_layer_handed_to_something_else_is_not_initialised():
    source = LOCAL_INIT.replace("weight_init.c2_xavier_fill(lateral)", "weight_init._check(lateral)")
    assert found(source.replace("normal_init(out, std=0.01)", "describe(out)")) == []


# An agent builds its model and hands an embedding table to a method of its own that writes pretrained rows in.
AGENT = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.embeddings = nn.Embedding(n, d)

    def forward(self, x):
        return self.embeddings(x)

class Agent:
    def __init__(self, opt):
        self.opt = opt
        self.model = self.build_model()

    def _copy_embeddings(self, weight, kind):
        for i in range(10):
            weight.data[i] = torch.zeros(8)

    def build_model(self):
        model = Model(100, 8)
        if self.opt["embedding_type"] != "random":
            self._copy_embeddings(model.embeddings.weight, self.opt["embedding_type"])
        return model
"""


def test_a_built_models_parameter_handed_to_an_own_method_that_writes_it():
    assert found(AGENT) == [("ZG101", 25)]


def test_an_own_method_that_only_logs_what_it_is_handed_writes_nothing():
    assert found(AGENT.replace("weight.data[i] = torch.zeros(8)", "print(kind, i)")) == []


# A factory function defines the model class it returns (pyod's GAAL discriminators): checked like any other class.
FACTORY_CLASS = """
from torch import nn

def create_discriminator(latent_size, data_size):
    class Discriminator(nn.Module):
        def __init__(self, latent_size, data_size):
            super().__init__()
            self.layer1 = nn.Linear(latent_size, data_size)
            nn.init.kaiming_normal_(self.layer1.weight)

        def forward(self, x):
            return self.layer1(x)

    return Discriminator(latent_size, data_size)
"""


def test_a_model_class_defined_in_a_factory_function_is_checked():
    assert found(FACTORY_CLASS) == [("ZG103", 9)]


def test_a_class_in_a_function_initialising_its_own_parameter_is_fine():
    source = FACTORY_CLASS.replace("self.layer1 = nn.Linear(latent_size, data_size)",
                                   "self.w = nn.Parameter(torch.empty(latent_size, data_size))")
    source = source.replace("nn.init.kaiming_normal_(self.layer1.weight)", "nn.init.kaiming_normal_(self.w)")
    source = source.replace("return self.layer1(x)", "return x @ self.w").replace("from torch import nn",
                                                                                   "import torch\nfrom torch import nn")
    assert found(source) == []


# A child's parameter kept under a second name (`self.weight = self.linear.weight`) and initialised through it.
TIED_INIT = """
import torch
from torch import nn

class IdentityInitLinear(nn.Module):
    def __init__(self, insize, outsize):
        super().__init__()
        self.linear = nn.Linear(insize, outsize, bias=False)
        self.weight = self.linear.weight
        torch.nn.init.eye_(self.weight)

    def forward(self, x):
        return self.linear(x)
"""


def test_a_childs_parameter_initialised_under_a_second_name():
    assert found(TIED_INIT) == [("ZG103", 10)]


def test_a_childs_parameter_kept_under_a_second_name_and_left_alone():
    assert found(TIED_INIT.replace("        torch.nn.init.eye_(self.weight)\n", "")) == []


def test_a_parameter_handed_in_a_list_to_an_initialiser_names_its_module_as_the_one_built():
    source = """
from torch import nn

def zero_(params):
    for p in params:
        p.data.fill_(0)

class WorldModel(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.reward = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))
        zero_([self.reward[-1].weight])

    def forward(self, x):
        return self.reward(x)
"""
    messages = [f.message for f in check_source("m.py", textwrap.dedent(source)) if f.code == "ZG103"]
    assert len(messages) == 1 and "after `self.reward[-1]` was built" in messages[0]


# ImageBind: a preprocessor handed one of two built stems sizes its tokens by running the stem's layers on a probe.
STEM_PROBED = """
from typing import Optional
import torch
from torch import nn


class PatchEmbed(nn.Module):
    def __init__(self, c, d):
        super().__init__()
        self.proj = nn.Conv2d(c, d, 16, 16)
        self.size = 16

    def get_patch_layout(self, img_size):
        with torch.no_grad():
            out = self.proj(torch.zeros([1, *img_size]))
        return tuple(out.shape[2:]), out.shape[1]

    def stride(self):
        return self.size

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Preprocessor(nn.Module):
    def __init__(self, rgb_stem: PatchEmbed, depth_stem: Optional[PatchEmbed], img_size=(3, 224, 224)):
        super().__init__()
        stem = rgb_stem if rgb_stem is not None else depth_stem
        self.layout, self.dim = stem.get_patch_layout(img_size)
        self.rgb_stem = rgb_stem
        self.depth_stem = depth_stem

    def forward(self, x):
        return self.rgb_stem(x)
"""


def test_a_method_of_a_handed_module_running_its_layers_on_a_probe_in_init():
    assert ("ZG110", 29) in found(STEM_PROBED)


def test_a_method_of_a_handed_module_that_runs_no_layer_is_no_forward():
    source = STEM_PROBED.replace("self.layout, self.dim = stem.get_patch_layout(img_size)",
                                 "self.layout = stem.stride()")
    assert [code for code, _ in found(source) if code == "ZG110"] == []
