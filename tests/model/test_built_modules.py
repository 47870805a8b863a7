"""Modules that are already built when code touches them: under `zero.Init` a child is partitioned once its
constructor returns, and a module passed in or handed to a helper was built (and partitioned) by the caller."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import copy
import deepspeed
import torch
from torch import nn
from torch.nn.utils import weight_norm
"""


def codes(body: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(body))]


HAZARDS = {
    # A subclass of a torch layer registers the layer's parameters through its base.
    "torch-layer-subclass-in-a-list": ("ZG103", """
class ScaledEmbedding(nn.Embedding):
    def __init__(self, *args, lr=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lr = lr


def init_layer(m, method):
    init_fn = get_init_fn(method)
    init_fn(m.weight)


class LM(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.emb = nn.ModuleList([ScaledEmbedding(1000, d) for _ in range(n)])
        for emb in self.emb:
            init_layer(emb, method="gaussian")
"""),
    # A module method that returns the module keeps it a module.
    "module-returned-by-requires-grad": ("ZG103", """
class DFL(nn.Module):
    def __init__(self, c1=16):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1).view(1, c1, 1, 1)
"""),
    # A member holding a parameter of a module built into a local.
    "parameter-of-a-local-module": ("ZG103", """
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        in_proj = nn.Linear(d, 3 * d)
        self.in_proj_weight = in_proj.weight
        self.in_proj_bias = in_proj.bias
        self.in_proj_bias.data.zero_()
"""),
    # A helper that re-parametrises its argument, two functions deep.
    "helper-applies-weight-norm": ("ZG104", """
def _norm(module, kind):
    if kind == "weight_norm":
        return weight_norm(module)
    return module


def apply_norm(module, kind="none"):
    return _norm(module, kind)


class NormConv(nn.Module):
    def __init__(self, *args, norm="none", **kwargs):
        super().__init__()
        self.conv = apply_norm(nn.Conv1d(*args, **kwargs), norm)
"""),
    # A helper that deep-copies a module passed into the constructor.
    "helper-clones-a-module-passed-in": ("ZG105", """
def _get_clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class Decoder(nn.Module):
    def __init__(self, decoder_layer, num_layers):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
"""),
}

# The helper re-parametrises the layer it builds itself: a layer factory. Under `zero.Init` the layer is
# partitioned when its own constructor returns, before `weight_norm` reads its weight (`built.layer_factory`;
# once listed as a look-alike, for the helper is handed no module).
HAZARDS["helper-builds-then-normalises"] = ("ZG104", """
def make_conv(c):
    return weight_norm(nn.Conv1d(c, c, 3))


class Net(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = make_conv(c)
""")

@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, body = HAZARDS[case]
    assert code in codes(body), case


SAFE = {
    # The subclass's own parameter, read in its own forward.
    "torch-layer-subclass-own-forward": """
class ScaledEmbedding(nn.Embedding):
    def forward(self, x):
        return super().forward(x) * self.weight.shape[1]
""",
    "parameter-of-a-local-module-read-in-forward": """
class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        in_proj = nn.Linear(d, 3 * d)
        self.in_proj_weight = in_proj.weight

    def forward(self, x):
        return x @ self.in_proj_weight[: self.in_proj_weight.shape[0] // 3].t()
""",
    # The helper deep-copies a config, not a module; a layer class passed in is called, not copied.
    "helper-copies-a-config": """
def _clones(cfg, n):
    return [copy.deepcopy(cfg) for _ in range(n)]


class Net(nn.Module):
    def __init__(self, layer_cfg, block, n):
        super().__init__()
        self.cfgs = _clones(layer_cfg, n)
        self.blocks = nn.ModuleList([block(4) for _ in range(n)])
""",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_look_alike_is_clean(case):
    assert [c for c in codes(SAFE[case]) if c.startswith("ZG1")] == [], case


FUNCTIONS = {
    # A function that walks the parameters of the model it is given.
    "function-initialises-the-model-it-is-given": ("ZG103", """
def initialize(model, init):
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p.data)
"""),
    "function-branches-on-the-dim-of-model-parameters": ("ZG102", """
def initialize(model):
    for p in model.parameters():
        if p.dim() == 1:
            p.data.zero_()
"""),
    "function-writes-through-the-model-modules": ("ZG101", """
def initialize(model):
    for mod in model.modules():
        if isinstance(mod, nn.Embedding):
            mod.weight.data.normal_(0, 1)
"""),
    # A construction helper (called from a module's __init__) counts a module it built.
    "construction-helper-counts-a-module-it-built": ("ZG102", """
def parse_model(spec):
    layers = []
    for n in spec:
        m = nn.Linear(n, n)
        m.np = sum(x.numel() for x in m.parameters())
        layers.append(m)
    return nn.Sequential(*layers)


class Model(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.model = parse_model(spec)
"""),
    # A function (a plain class's method) that builds a model and walks it to initialise it: under `zero.Init`
    # (which the function does not set up itself) the model was partitioned when its constructor returned.
    "method-builds-then-initialises-by-walk": ("ZG103", """
class Forest:
    def fit(self, d, n):
        for _ in range(n):
            net = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
            for m in net.modules():
                if isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, mean=0.0, std=1.0)
        return self
"""),
}


@pytest.mark.parametrize("case", sorted(FUNCTIONS))
def test_function_given_or_building_a_model(case):
    code, body = FUNCTIONS[case]
    assert code in codes(body), case


FUNCTIONS_SAFE = {
    # A callback handed to `apply`: judged where it is applied, not in its body.
    "apply-callback": """
def init_weights(m):
    for p in m.parameters():
        nn.init.normal_(p)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.apply(init_weights)
""",
    # Only metadata of the model's parameters.
    "metadata-only": """
def freeze(model):
    for p in model.parameters():
        p.requires_grad = False
    return next(model.parameters()).dtype
""",
    # A script that builds a model outside zero.Init and counts it before deepspeed.initialize.
    "script-counts-before-wrapping": """
def main(cfg):
    model = nn.Linear(4096, 4096)
    n = sum(p.numel() for p in model.parameters())
    engine, *_ = deepspeed.initialize(model=model, config=cfg)
    return engine, n
""",
    # A converter that copies weights into a module it puts in place itself.
    "replacing-a-child-module": """
def replace_linear(model, cls):
    for name, module in model.named_children():
        model._modules[name] = cls(module.in_features, module.out_features)
        model._modules[name].weight.data.fill_(0.0)
""",
}


@pytest.mark.parametrize("case", sorted(FUNCTIONS_SAFE))
def test_function_look_alike_is_clean(case):
    assert [c for c in codes(FUNCTIONS_SAFE[case]) if c.startswith("ZG1")] == [], case


LATE = {
    # An initialiser a parent's __init__ runs on this built module (`self.model[-1].bias_init()`).
    "initialiser-run-by-the-parent": ("ZG103", """
class Detect(nn.Module):
    def __init__(self, nc, ch):
        super().__init__()
        self.cv2 = nn.ModuleList(nn.Sequential(nn.Conv2d(x, 64, 3), nn.Conv2d(64, 64, 1)) for x in ch)
        self.cv3 = nn.ModuleList(nn.Sequential(nn.Conv2d(x, nc, 3), nn.Conv2d(nc, nc, 1)) for x in ch)

    def forward(self, x):
        return [a(t) + b(t) for a, b, t in zip(self.cv2, self.cv3, x)]

    def bias_init(self):
        m = self
        for a, b in zip(m.cv2, m.cv3):
            a[-1].bias.data[:] = 1.0
"""),
    # A base class's setup helper writes a child that only its subclasses build.
    "setup-helper-of-a-base-class": ("ZG103", """
class LanguageModule(nn.Module):
    def setup_output_layer(self):
        if self.share:
            self.output_layer.weight.data.fill_(0)
"""),
}


@pytest.mark.parametrize("case", sorted(LATE))
def test_initialiser_run_on_the_built_module(case):
    code, body = LATE[case]
    assert code in codes(body), case


LATE_SAFE = {
    # Called from its own __init__ before the child exists: nothing is partitioned yet.
    "initialiser-called-before-the-child-is-built": """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d, d))
        self.reset_parameters()
        self.proj = nn.Linear(d, d)

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.weight)
""",
    # An `apply` callback: the visited module's own parameters, gathered by zero.Init's apply.
    "apply-callback-method": """
class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)
""",
    # The module's own parameter only, the method run by a subclass's `__init__` on the object it is building
    # (with no caller building the object first, it runs on the built module: `test_late_own_initialisers.py`).
    "initialiser-of-own-parameter": """
class Scale(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(d))
        self.proj = nn.Linear(d, d)

    def reset_parameters(self):
        self.alpha.data = torch.ones(1)


class Reset(Scale):
    def __init__(self, d):
        super().__init__(d)
        self.reset_parameters()
""",
    # An override of the method torch's layer constructor calls on `self`: it runs while the layer is built.
    "override-torch-layers-constructor-calls": """
class Dense(nn.Linear):
    def __init__(self, a, b, weight_init=nn.init.xavier_uniform_):
        self.weight_init = weight_init
        super().__init__(a, b)

    def reset_parameters(self):
        nn.init.zeros_(self.weight)
        nn.init.zeros_(self.bias)
""",
}


@pytest.mark.parametrize("case", sorted(LATE_SAFE))
def test_initialiser_look_alike_is_clean(case):
    assert [c for c in codes(LATE_SAFE[case]) if c.startswith("ZG1")] == [], case


GIVEN = {
    # A head sized from a parameter of the backbone, handed through two constructors.
    "parameter-handed-through-constructors": ("ZG102", """
class PredictionHead(nn.Module):
    def __init__(self, config, embedding_weights):
        super().__init__()
        self.decoder = nn.Linear(embedding_weights.size(1), embedding_weights.size(0), bias=False)
        self.decoder.weight = embedding_weights


class Heads(nn.Module):
    def __init__(self, config, embedding_weights):
        super().__init__()
        self.predictions = PredictionHead(config, embedding_weights)


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab, config.d)
        self.cls = Heads(config, self.embed.weight)
"""),
    # An argument annotated as a parameter.
    "annotated-parameter": ("ZG102", """
class Softmax(nn.Module):
    def __init__(self, proj_weight: nn.Parameter):
        super().__init__()
        out_dim, in_dim = proj_weight.shape
        self.fc = nn.Linear(in_dim, out_dim, bias=False)
        self.fc.weight = proj_weight
"""),
}


@pytest.mark.parametrize("case", sorted(GIVEN))
def test_parameter_handed_to_a_constructor(case):
    code, body = GIVEN[case]
    assert code in codes(body), case


def test_parameter_handed_in_used_only_for_tying_and_dtype_is_clean():
    body = GIVEN["parameter-handed-through-constructors"][1].replace(
        "nn.Linear(embedding_weights.size(1), embedding_weights.size(0), bias=False)",
        "nn.Linear(config.d, config.vocab, bias=embedding_weights.dtype is None)",
    )
    assert [c for c in codes(body) if c.startswith("ZG1")] == []


def test_a_tensor_handed_to_a_constructor_is_not_a_parameter():
    body = """
class Loss(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.n = weight.shape[0]


class Model(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.loss = Loss(torch.tensor(weights))
"""
    assert [c for c in codes(body) if c.startswith("ZG1")] == []


LOADED = {
    # Statistics of an embedding passed in, by a torch function.
    "statistics-of-a-module-passed-in": ("ZG109", """
class Expanded(nn.Module):
    def __init__(self, orig, extra):
        super().__init__()
        self.orig = orig
        std, mean = torch.std_mean(orig.weight)
        self.add = nn.Embedding(extra, orig.embedding_dim)
"""),
    # A child of a module we cannot see (loaded, copied), re-initialised after a new child is put in.
    "child-of-a-loaded-module": ("ZG103", """
class Decoder(nn.Module):
    def __init__(self, vocab, name):
        super().__init__()
        loaded = load_model(name)
        self.decoders = copy.deepcopy(loaded.decoder)
        d = self.decoders.token_embedding.embedding_dim
        self.decoders.token_embedding = nn.Embedding(vocab, d)
        nn.init.normal_(self.decoders.token_embedding.weight, 0.0, 0.02)
"""),
    # A weight from a local module, converted by a torch function.
    "local-module-weight-through-a-torch-function": ("ZG109", """
class ComplexConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        conv = nn.Conv2d(c, c, 3, dtype=torch.complex64)
        self.weight = nn.Parameter(torch.view_as_real(conv.weight))
"""),
}


@pytest.mark.parametrize("case", sorted(LOADED))
def test_modules_built_elsewhere(case):
    code, body = LOADED[case]
    assert code in codes(body), case


def test_tying_a_weight_passed_in_is_clean():
    body = """
class Head(nn.Module):
    def __init__(self, embed, d):
        super().__init__()
        self.decoder = nn.Linear(d, embed.num_embeddings, bias=False)
        self.decoder.weight = embed.weight
        self.tied = nn.Parameter(embed.weight) if d else None
"""
    assert [c for c in codes(body) if c.startswith("ZG1")] == []


FORWARD = {
    # A module handed in, run on a probe input by a helper of __init__.
    "probe-forward-of-a-backbone-handed-in": """
class HybridEmbed(nn.Module):
    def __init__(self, backbone, img_size=224):
        super().__init__()
        self.backbone = backbone
        self.feature_size = self._probe(img_size)

    def _probe(self, img_size):
        with torch.no_grad():
            o = self.backbone(torch.zeros(1, 3, img_size, img_size))
        return o.shape[-2:]
""",
    # The whole model, through a lambda, after a tuple-returning builder made its layers.
    "forward-of-the-whole-model-through-a-lambda": """
def parse_model(spec):
    layers = [nn.Conv2d(3, c, 3) for c in spec]
    return nn.Sequential(*layers), [0]


class Detector(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.model, self.save = parse_model(spec)
        run = lambda x: self.forward(x)[0]
        self.stride = torch.tensor([256 / x.shape[-2] for x in run(torch.zeros(1, 3, 256, 256))])

    def forward(self, x):
        return self.model(x)
""",
    # A local conv stack built in __init__ and run on a dummy input to size the head.
    "probe-forward-of-a-local-conv-stack": """
class Atari(nn.Module):
    def __init__(self, c, h, w, n):
        super().__init__()
        net = nn.Sequential(nn.Conv2d(c, 32, 8, stride=4), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            dim = net(torch.zeros(1, c, h, w)).shape[1]
        self.net = nn.Sequential(net, nn.Linear(dim, n))

    def forward(self, x):
        return self.net(x)
""",
}


def test_probe_of_a_local_module_without_parameters_is_clean():
    body = """
class Atari(nn.Module):
    def __init__(self, c, h, w, n):
        super().__init__()
        pool = nn.Sequential(nn.AvgPool2d(4), nn.Flatten())
        dim = pool(torch.zeros(1, c, h, w)).shape[1]
        self.net = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), pool, nn.Linear(dim, n))

    def forward(self, x):
        return self.net(x)
"""
    assert "ZG110" not in codes(body)


@pytest.mark.parametrize("case", sorted(FORWARD))
def test_forward_in_init(case):
    assert "ZG110" in codes(FORWARD[case]), case


def test_forward_of_an_activation_or_a_config_callable_is_clean():
    body = """
class Net(nn.Module):
    def __init__(self, act_fn, d):
        super().__init__()
        self.act_fn = act_fn
        self.norm = nn.Identity()
        self.gain = self.act_fn(torch.ones(1)) / self.norm(torch.ones(1))
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x) * self.gain
"""
    assert "ZG110" not in codes(body)


def test_bias_of_a_torch_layer_subclass_stays_gathered():
    # A 1-D bias is below the persistence threshold: reading its size in forward is free.
    body = """
class Linear(nn.Linear):
    def __init__(self, d_in, d_out, init="default"):
        super().__init__(d_in, d_out)
        self.init = init


class Gate(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear_g = Linear(d, d, init="gating")

    def forward(self, x):
        return x[..., : self.linear_g.bias.shape[-1]] * self.linear_g(x)
"""
    assert [c for c in codes(body) if c.startswith("ZG1")] == []


def test_calling_a_stored_layer_factory_is_not_a_forward():
    body = """
import functools


class Head(nn.Module):
    def __init__(self, d, n, layers):
        super().__init__()
        self.class_embed = functools.partial(nn.Linear, d, n)
        self.class_embed = nn.ModuleList([self.class_embed() for _ in range(layers)])
"""
    assert "ZG110" not in codes(body)


def test_helper_that_sizes_a_built_child_is_a_size_query():
    body = """
def fan_in(module):
    return module.weight.shape[1]


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.scale = fan_in(self.proj) ** -0.5
"""
    assert "ZG102" in codes(body)
    assert "ZG102" not in codes(body.replace("module.weight.shape[1]", "module.in_features"))


def test_helper_applying_a_callable_it_is_given_to_the_weight_initialises_it():
    body = """
def init_with(layer, fn):
    fn(layer.weight)
    return layer


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        init_with(self.proj, nn.init.orthogonal_)
"""
    assert "ZG103" in codes(body)
    assert "ZG103" not in codes(body.replace("fn(layer.weight)", "fn(layer.in_features)"))


APPLIED = """
from functools import partial


def {name}(m{extra}):
    if isinstance(m, Block):
        nn.init.normal_({target}, std=0.02)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4096)
        self.weight = nn.Parameter(torch.empty(4096, d))


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(4)])
        self.apply({callback})
"""


@pytest.mark.parametrize(
    "name, extra, callback", [("init_fn", "", "init_fn"), ("init_std", ", std", "partial(init_std, std=0.02)")]
)
def test_module_level_function_applied_writes_a_child_of_the_visited_module(name, extra, callback):
    # zero.Init's `apply` gathers the visited module's own parameters only: `m.fc.weight` stays partitioned
    body = APPLIED.format(name=name, extra=extra, callback=callback, target="m.fc.weight")
    assert "ZG103" in codes(body)


def test_module_level_function_applied_writes_the_visited_modules_own_weight():
    body = APPLIED.format(name="init_fn", extra="", callback="partial(init_fn)", target="m.weight")
    assert [c for c in codes(body) if c.startswith("ZG1")] == []
