"""Models a factory object builds: asked on the spot (`model = DitModelFactory(path=p).get_model(rank=0).train()`),
the product is a built model whose gradients the script then clips; a factory's method that opens by importing the
class it builds (`def get_model(self): from .dit import AsymmDiTJoint`), then loads a checkpoint into it; and a
library's loader (`model, preprocess = clip.load("ViT-B/32")`) given a checkpoint after. Under `zero.Init` all
three are partitioned once their constructors returned. An import under a test, after the method's first
statement, stays unread (a component built lazily, on some configurations only)"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found, found_in_package

DIT = '''
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(3072, 12)

    def forward(self, x):
        return self.out(x)


class AsymmDiTJoint(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(3072, 3072) for _ in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
'''

PIPELINES = '''
import torch


class DitModelFactory:
    def __init__(self, *, model_path):
        self.model_path = model_path

    def get_model(self, *, depth=48):
        from pkg.dit import AsymmDiTJoint

        model = AsymmDiTJoint(depth=depth)
        model.load_state_dict(torch.load(self.model_path))
        return model

    def get_vae(self, *, lazy=False):
        if lazy:
            from pkg.dit import Decoder
            vae = Decoder()
            vae.load_state_dict(torch.load(self.model_path))
            return vae
        return None
'''

TRAIN = '''
import torch

from pkg.pipelines import DitModelFactory


def main(path, loader, grad_clip):
    model = (
        DitModelFactory(model_path=path)
        .get_model(depth=48)
        .train()
    )
    optimizer = torch.optim.AdamW(model.parameters())
    for x in loader:
        model(x).mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=grad_clip)
        optimizer.step()
'''


def test_a_factory_method_opening_with_the_import_of_what_it_builds(tmp_path: Path) -> None:
    files = {"dit.py": DIT, "pipelines.py": PIPELINES}
    assert found_in_package(tmp_path, files, "pipelines.py", prefix="ZG1") == [("ZG108", 13)]


def test_a_model_asked_of_a_factory_object_made_on_the_spot(tmp_path: Path) -> None:
    files = {"dit.py": DIT, "pipelines.py": PIPELINES, "train.py": TRAIN}
    assert found_in_package(tmp_path, files, "train.py", prefix="ZG1") == [("ZG107", 16)]


CLIP = '''
import clip
import torch


def build(path):
    model, preprocess = clip.load("ViT-B/32", device="cpu")
    model.load_state_dict(torch.load(path))
    tokens = clip.tokenize(["a photo"])
    tokens.copy_(torch.load(path + ".tokens"))
    return model, preprocess
'''


def test_a_model_loaded_by_a_library_loader_then_given_a_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "build.py"
    path.write_text(CLIP)
    assert found(path, "ZG1") == [("ZG108", 8)]
