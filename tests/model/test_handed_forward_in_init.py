"""A module handed to the constructor, run there (blind10 perfusion embedding.py:104).

The fact: a module argument of `__init__` that the constructor keeps as a child or whose weights it reads is a
module its caller built, so under `deepspeed.zero.Init` it is partitioned before this `__init__` runs; calling it
there (`embed(ids)`, `backbone(probe)`) runs its forward on placeholders, with no hook to gather them: ZG110.

Safe look-alikes: a layer class or factory handed in and called to build a layer (`norm_layer(dim)`), a call inside
`GatheredParameters`, a callable that is no module (`tokenize(texts)`).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = textwrap.dedent("""
    from typing import Type

    import deepspeed
    import torch
    import torch.nn as nn


    class Wrapper(nn.Module):
        def __init__(self, embed: nn.Embedding, ids=None):
            super().__init__()
            self.embed = embed
            self.concepts = nn.Parameter(torch.zeros(1, 8))
            if ids is not None:
                vecs = embed(torch.tensor(list(ids)))
                self.concepts.data.copy_(vecs)


    class Probe(nn.Module):
        def __init__(self, backbone, n):
            super().__init__()
            self.backbone = backbone
            feat = backbone(torch.zeros(1, 3, 32, 32))
            self.head = nn.Linear(feat.shape[1], n)


    class Factories(nn.Module):
        def __init__(self, dim, norm_layer: nn.Module = nn.LayerNorm, block: Type[nn.Module] = nn.Linear):
            super().__init__()
            self.norm = norm_layer(dim)
            self.block = block(dim, dim)


    class Gathered(nn.Module):
        def __init__(self, encoder: nn.Module, n):
            super().__init__()
            self.encoder = encoder
            with deepspeed.zero.GatheredParameters(list(encoder.parameters())):
                d = encoder(torch.zeros(1, 3)).shape[-1]
            self.head = nn.Linear(d, n)


    class Tokens(nn.Module):
        def __init__(self, tokenize, embed: nn.Embedding):
            super().__init__()
            self.embed = embed
            self.ids = tokenize(["a photo"])
""")


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(SOURCE.splitlines(), 1) if needle in text)


def test_handed_modules_run_in_init_are_found() -> None:
    got = {(f.code, f.line) for f in check_source("m.py", SOURCE) if f.code == "ZG110"}
    assert got == {("ZG110", _line("vecs = embed(")), ("ZG110", _line("feat = backbone("))}


def test_a_factory_kept_on_self_stays_clean() -> None:
    # torchvision's ResNet blocks: `norm_layer` defaults to None, is rebound to a class, kept as `self._norm_layer`
    # and called to build children (blind12 pl_bolts swav_resnet.py:177)
    source = textwrap.dedent("""
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self, planes, norm_layer: nn.Module = None):
                super().__init__()
                if norm_layer is None:
                    norm_layer = nn.BatchNorm2d
                self._norm_layer = norm_layer
                self.conv = nn.Conv2d(planes, planes, 3)
                self.bn1 = norm_layer(planes)
    """)
    assert [f for f in check_source("m.py", source) if f.code == "ZG110"] == []
