"""Methods and helpers that run on the built, partitioned model outside forward: what counts as an entry point."""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEAD = """
import deepspeed
import torch
from torch import nn
"""


def codes(source: str) -> list[str]:
    """The codes zgen reports for a file made of `HEAD` and `source`."""
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source))]


HAZARDS = {
    # Its own weight, read in a method neither forward nor __init__ reaches.
    "own-parameter-in-entry-method": ("ZG109", """
class ColumnLinear(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, d))

    def forward(self, x):
        return x @ self.weight.t()

    def master_weight(self):
        return self.weight.data.transpose(0, 1)
"""),
    # A helper shared by an initialiser and an entry point runs on the built model when the entry calls it.
    "helper-shared-by-initialiser-and-entry": ("ZG102", """
class LM(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.embed = nn.Embedding(v, d)
        self.head = nn.Linear(d, v)

    def forward(self, ids):
        return self.head(self.embed(ids))

    def init_weights(self):
        self.tie(self.head, self.embed)

    def resize(self, n):
        self.embed = nn.Embedding(n, 8)
        self.tie(self.head, self.embed)

    def tie(self, out, inp):
        out.weight = inp.weight
        pad = out.weight.shape[0] - 4
        return pad
"""),
    # The child's method computes with the child's own submodule's weight: no hook of either runs.
    "child-method-reads-grandchild": ("ZG303", """
class Codebook(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.embedding = nn.Embedding(k, d)

    def forward(self, z):
        return self.embedding(z)

    def straight_through(self, z):
        return torch.index_select(self.embedding.weight, 0, z)


class Quantiser(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.codebook = Codebook(k, d)
        self.proj = nn.Linear(d, d)

    def forward(self, z):
        return self.proj(self.codebook.straight_through(z))
"""),
    # The branch's class comes from an isinstance test; the weight is computed with through a local.
    "fuse-helper-reads-branch-conv": ("ZG109", """
class ConvBn(nn.Module):
    def __init__(self, c1, c2, k):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k)
        self.bn = nn.BatchNorm2d(c2)

    def forward(self, x):
        return self.bn(self.conv(x))


class RepBlock(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.branch3 = ConvBn(c1, c2, 3)
        self.branch1 = ConvBn(c1, c2, 1)

    def forward(self, x):
        return self.branch3(x) + self.branch1(x)

    def fuse(self):
        k3, b3 = self._fuse_branch(self.branch3)
        k1, b1 = self._fuse_branch(self.branch1)
        return k3 + k1, b3 + b1

    def _fuse_branch(self, branch):
        if isinstance(branch, ConvBn):
            kernel = branch.conv.weight
            std = (branch.bn.running_var + branch.bn.eps).sqrt()
            gamma = branch.bn.weight
        else:
            kernel = 0
        return kernel * (gamma / std).reshape(-1, 1, 1, 1), gamma
"""),
    # A wrapped model taken from the modules passed in; its embedding size read at decode time.
    "wrapped-model-embedding-size": ("ZG102", """
class Searcher(nn.Module):
    def __init__(self, modules, beam):
        super().__init__()
        self.model = modules[0]
        self.beam = beam

    def forward(self, enc):
        n_out = self.vocab_size()
        return enc.new_zeros(self.beam, n_out)

    def vocab_size(self):
        return self.model.model.decoder.embed_tokens.weight.shape[0]
"""),
    # A model loaded with `from_pretrained`: its decoder's token embedding used as the output projection.
    "tied-projection-of-a-loaded-model": ("ZG301", """
class Whisper(nn.Module):
    def __init__(self, source, auto_class):
        super().__init__()
        self.model = auto_class.from_pretrained(source)

    def forward(self, x, tokens):
        h = self.model.decoder(tokens, x)
        return h @ self.model.decoder.embed_tokens.weight.t()
"""),
    # Named for zeroing, not for ZeRO: a method that fills a child's weight on the built model.
    "zero-parameters-method": ("ZG101", """
class Embedding(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.word = nn.Embedding(v, d)

    def forward(self, ids):
        return self.word(ids)

    def zero_parameters(self):
        self.word.weight.data.fill_(0)
        self.word.weight.shared = True
"""),
    # Small parameters outside forward (issue 20): persistence keeps one gathered only once a forward or a step
    # fetched it; `fuse()` run by the training loop (or on a model loaded for inference) reads placeholders.
    "batch-norm-fused-outside-forward": ("ZG109", """
class RepBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)
        self.conv = nn.Conv2d(c, c, 3)

    def forward(self, x):
        return self.conv(x) + self.bn(x)

    def fuse(self):
        return self._fuse_bn(self.bn)

    def _fuse_bn(self, branch):
        std = (branch.running_var + branch.eps).sqrt()
        gamma = branch.weight
        return gamma / std, branch.bias - branch.running_mean * gamma / std
"""),
    # A class token shaped (1, 1, dim), read by a method no forward reaches.
    "class-token-outside-forward": ("ZG109", """
class Vit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.blocks = nn.Linear(d, d)

    def forward(self, x):
        return self.blocks(x)

    def prepend(self, x):
        return torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1)
"""),
    # A penalty over every parameter the module owns, added to the loss by the training loop.
    "own-parameters-walked-for-a-penalty": ("ZG109", """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.body(x))

    def l2_penalty(self):
        return sum((p ** 2).sum() for p in self.parameters())
"""),
    "named-parameters-walked-for-a-norm": ("ZG109", """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)

    def forward(self, x):
        return self.body(x)

    def l1(self):
        total = 0.0
        for name, p in self.named_parameters():
            if "weight" in name:
                total = total + p.abs().sum()
        return total
"""),
}


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_hazard_is_found(case):
    code, source = HAZARDS[case]
    assert code in codes(source), case


SAFE = {
    # A base class's helper that the subclass's forward calls: gathered there.
    "base-helper-called-by-subclass-forward": """
class Router(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, d))

    def gating(self, x):
        return x @ self.weight.data.t()

    def forward(self, x):
        raise NotImplementedError


class TopK(Router):
    def forward(self, x):
        return self.gating(x).topk(2)
""",
    # A forward variant computes with the module's own parameters the way forward does.
    "forward-variant": """
class Vit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.blocks = nn.Linear(d, d)

    def forward(self, x):
        return self.blocks(x)

    def forward_intermediates(self, x):
        return self.blocks(torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1))
""",
    # Another module's forward calls this method (`self.decoder.query(x)`): ZG303's business, not an entry.
    "method-called-from-another-forward": """
class Decoder(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.padding = nn.Parameter(torch.empty(n, d))

    def forward(self, x):
        return x

    def query(self, x):
        return x + self.padding[0]


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.decoder = Decoder(n, d)

    def forward(self, x):
        return self.decoder.query(x)
""",
    # The own parameter is only described (dtype), not read.
    "own-parameter-dtype": """
class Head(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, d))

    def forward(self, x):
        return x @ self.weight

    def cast_input(self, x):
        return x.to(self.weight.dtype)
""",
    # A batch norm's per-channel weight and bias, read by a helper forward calls: gathered in forward context.
    "batch-norm-fused-in-forward": """
class RepBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)
        self.conv = nn.Conv2d(c, c, 3)

    def forward(self, x):
        scale, shift = self._fuse_bn(self.bn)
        return self.conv(x) * scale + shift

    def _fuse_bn(self, branch):
        std = (branch.running_var + branch.eps).sqrt()
        gamma = branch.weight
        return gamma / std, branch.bias - branch.running_mean * gamma / std
""",
    # A class token shaped (1, 1, dim) is small: read by a helper forward calls, it is gathered there.
    "class-token-prepended-in-forward": """
class Vit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.blocks = nn.Linear(d, d)

    def forward(self, x):
        return self.blocks(self.prepend(x))

    def prepend(self, x):
        return torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1)
""",
    # A private forward variant is part of a forward too.
    "private-forward-variant": """
class Head(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, d))

    def forward(self, x):
        return x

    def _forward_logits(self, x):
        return x @ self.weight.t()
""",
    # Settings of an object we cannot read are not submodules; a tokenizer is not a model.
    "settings-of-a-wrapped-model": """
class Wrapper(nn.Module):
    def __init__(self, source, modules):
        super().__init__()
        self.tok = AutoTokenizer.from_pretrained(source)
        self.model = modules[0]

    def forward(self, x):
        return self.model(x) * self.model.config.loss.weight

    def scale(self):
        return self.tok.embeddings.weight.shape[0]
""",
    # Tagging the parameter object with a Python attribute reads nothing.
    "tag-on-the-parameter": """
class Embedding(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.word = nn.Embedding(v, d)

    def forward(self, ids):
        return self.word(ids)

    def mark_shared(self):
        self.word.weight.shared = True
""",
    # Its own parameters walked for their flags, their names, their objects or their devices: no values read.
    "own-parameters-walked-without-reading-values": """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.body(x))

    def freeze(self):
        for p in self.parameters():
            p.requires_grad = False

    def groups(self, wd):
        decay = [p for n, p in self.named_parameters() if not n.endswith("bias")]
        return [{"params": decay, "weight_decay": wd}]

    def trainable(self):
        return filter(lambda p: p.requires_grad, self.parameters())

    def devices(self):
        return {p.device for p in self.parameters()}

    def ids(self):
        return [id(p) for p in self.parameters()]

    def split(self):
        wd, no_wd = [], []
        for name, param in self.named_parameters():
            if name.endswith("weight"):
                wd.append(param)
            else:
                no_wd.append(param)
        return wd, no_wd

    def names(self):
        pairs = (np for np in self.named_parameters())
        return [np[0] for np in pairs if ".head." not in np[0]]
""",
}


@pytest.mark.parametrize("case", sorted(SAFE))
def test_look_alike_is_clean(case):
    found = [c for c in codes(SAFE[case]) if c[:3] == "ZG1" or c == "ZG301"]
    assert found == [], (case, found)


def test_weight_returned_by_a_forward_helper_is_reported_where_it_is_used():
    source = HEAD + textwrap.dedent("""
    class T5(nn.Module):
        def __init__(self, v, d):
            super().__init__()
            self.embedding = nn.Embedding(v, d)
            self.head = Head()

        def forward(self, ids):
            h = self.embedding(ids)
            return self.head(h, self.shared_weight())

        def shared_weight(self):
            return self.embedding.weight
    """)
    found = [(f.code, f.line) for f in check_source("m.py", source) if f.code == "ZG301"]
    call_line = next(i for i, line in enumerate(source.splitlines(), 1) if "self.shared_weight()" in line)
    assert found == [("ZG301", call_line)]


def test_a_lambda_member_that_reads_a_weight_is_still_seen():
    source = """
    class LM(nn.Module):
        def __init__(self, v, d):
            super().__init__()
            self.emb = nn.Embedding(v, d)
            self.to_logits = lambda t: t @ self.emb.weight.t()

        def forward(self, ids):
            return self.to_logits(self.emb(ids))
    """
    assert "ZG301" in codes(source)
