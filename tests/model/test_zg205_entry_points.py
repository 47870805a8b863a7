"""ZG205 beyond `forward`'s own names: inference entry points, exclusive alternatives, VAEs handed in.

* A public method run without gradients (`@torch.no_grad() def generate_images(self, text, img=None)`) is called on
  the built model with this call's inputs, as `forward` is: a presence test there decides whether a tower gathers.
  Other public methods (`fit(train, test=None)`, `normalize(x, reference=None)`) mostly take settings: left alone.
* `assert exists(images) ^ exists(image_token_ids)`: exactly one is given, so a test of the ids (a name the
  convention lists leave alone) is a test of the images.
* An input defaulting to an empty list (`conditions=[]`) is optional as one defaulting to `None` is.
* A method called with data on a whole network handed in (`self.vae = vae`, `self.vae.encode(images)`) runs it.
"""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_package

_HEAD = """
import torch
from torch import nn


def exists(v):
    return v is not None


class Tower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, 1024)
        self.b = nn.Linear(1024, d)

    def forward(self, x):
        return self.b(self.a(x))

    def encode(self, x):
        return self.b(self.a(x))


"""


def _found(tmp_path: Path, source: str) -> list[int]:
    return [line for _, line in found_in_package(tmp_path, {"model.py": _HEAD + source}, "model.py", prefix="ZG205")]


def test_a_generation_method_given_a_priming_image(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class DALLE(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.vae = Tower(d)
        self.tr = Tower(d)

    def forward(self, x):
        return self.tr(x)

    @torch.no_grad()
    def generate_images(self, text, *, img=None, temperature=1.0):
        vae, n = self.vae, 4
        out = text
        if exists(img):
            out = torch.cat((out, vae.encode(img)), dim=-1)
        return self.tr(out)
""")
    assert lines == [37]


def test_a_sampling_method_that_fills_the_latent_from_the_prior(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class VAE(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.prior = Tower(d)
        self.dec = Tower(d)

    def forward(self, x):
        return self.dec(x)

    @torch.inference_mode()
    def decode(self, cond, z=None):
        if z is None:
            z = self.prior(cond)
        return self.dec(z + cond)
""")
    assert lines == [35]


def test_look_alikes_of_entry_points_stay_clean(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.vae = Tower(d)
        self.lm = Tower(d)

    def forward(self, x):
        return self.lm(x)

    @torch.no_grad()
    def sample(self, x, temperature=None, image=None):
        logits = self.lm(x)
        if temperature is not None:
            logits = logits / temperature
        if image is None:
            image = torch.zeros_like(x)
        return logits + self.vae(image)

    def evaluate(self, loader, test_loader=None):
        if test_loader is not None:
            return [self.vae(b) for b in test_loader]
        return [self.lm(b) for b in loader]
""")
    assert lines == []


def test_ids_given_instead_of_images(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Parti(nn.Module):
    def __init__(self, d, vae=None):
        super().__init__()
        self.vae = vae
        self.tr = Tower(d)

    def forward(self, texts, images=None, image_token_ids=None):
        assert exists(images) ^ exists(image_token_ids)
        if not exists(image_token_ids):
            with torch.no_grad():
                image_token_ids = self.vae.encode(images)
        return self.tr(texts + image_token_ids)
""")
    assert lines == [32]


def test_an_alternative_computed_without_a_module_stays_clean(tmp_path: Path) -> None:
    lines = _found(tmp_path, """
class Parti(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.tr = Tower(d)

    def forward(self, texts, probs=None, image_token_ids=None):
        assert (probs is None) != (image_token_ids is None)
        if image_token_ids is None:
            image_token_ids = probs.argmax(-1)
        return self.tr(texts + image_token_ids)
""")
    assert lines == []


def test_an_input_defaulting_to_an_empty_list_is_optional(tmp_path: Path) -> None:
    # `conditions=[]`: a caller that gives none gives an empty list, and `if conditions:` runs the conditioner only
    # on the ranks that were given some
    source = """
class LM(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.conditioner = Tower(d)
        self.tr = Tower(d)

    def forward(self, x):
        return self.tr(x)

    @torch.no_grad()
    def generate(self, prompt, conditions=[], steps=8):
        cond = None
        if conditions:
            cond = self.conditioner(torch.stack(conditions))
        {after}
        return self.tr(prompt)
"""
    assert len(_found(tmp_path, source.format(after="pass"))) == 1
    # the same test around what runs no module: nothing to skip
    quiet = source.replace("cond = self.conditioner(torch.stack(conditions))", "cond = torch.stack(conditions)")
    assert _found(tmp_path, quiet.format(after="pass")) == []
