"""ZG205 in a module's public methods other than `forward`: entry points a caller runs on the built model.

`vae.decode(conditions, z=None, n=None)` samples the prior networks only when the call left the latent out
(robomimic's VAE): ranks whose calls differ run different gathers, as with an optional input of `forward`. A public
method without `@torch.no_grad()` often takes settings too (`sample(x, steps=None)`), so there only a tower run on
the optional input, or one whose output the input stands in for, counts. Look-alikes: an optional setting that
decides whether a tower runs on the required input, and an optional name that runs nothing.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

MODEL = """
from torch import nn

def exists(v):
    return v is not None

class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.b(self.a(x))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Tower()
        self.prior = Tower()
        self.cond_net = Tower()
        self.refiner = Tower()
        self.decoder = Tower()

    def encode(self, x):
        return self.encoder(x)

    def forward(self, x):
        return self.decoder(self.encode(x))

{method}
"""

LATENT_STANDS_IN = """
    def reconstruct(self, x, latents=None):
        if latents is None:
            latents = self.encode(x)
        return self.decoder(latents)"""

CONDITION_RUN = """
    def sample(self, noise, cond=None):
        if cond is not None:
            noise = noise + self.cond_net(cond)
        return self.decoder(noise)"""

HELPER_TEST = """
    def embed(self, x, audio=None):
        if exists(audio):
            x = x + self.cond_net(audio)
        return self.decoder(x)"""

EXPRESSION = """
    def sample(self, noise, cond=None):
        c = self.cond_net(cond) if cond is not None else 0
        return self.decoder(noise + c)"""

SETTING = """
    def sample(self, x, steps=None):
        if steps is None:
            x = self.refiner(x)
        return self.decoder(x)"""

NAME_ONLY = """
    def describe(self, x, name=None):
        if name is None:
            name = "net"
        return name, self.decoder(x)"""


def _codes(method: str) -> list[str]:
    source = textwrap.dedent(MODEL).format(method=textwrap.indent(textwrap.dedent(method).strip("\n"), " " * 4))
    return [f.code for f in check_source("net.py", source)]


def test_a_tower_an_optional_latent_stands_in_for_is_a_gate():
    assert "ZG205" in _codes(LATENT_STANDS_IN)


def test_a_tower_run_on_an_optional_condition_is_a_gate():
    assert "ZG205" in _codes(CONDITION_RUN)


def test_a_presence_helper_in_a_public_method_is_a_gate():
    assert "ZG205" in _codes(HELPER_TEST)


def test_a_conditional_expression_in_a_public_method_is_a_gate():
    assert "ZG205" in _codes(EXPRESSION)


def test_an_optional_setting_deciding_a_tower_on_the_required_input_is_no_gate():
    assert "ZG205" not in _codes(SETTING)


def test_an_optional_name_that_runs_nothing_is_no_gate():
    assert "ZG205" not in _codes(NAME_ONLY)


FIT = """
    def fit(self, train_loader, test_loader=None):
        for x in train_loader:
            self.decoder(x)
        if test_loader is not None:
            self.evaluate(test_loader)

    def evaluate(self, loader):
        return [self.cond_net(x) for x in loader]"""


def test_a_procedure_walking_a_loader_takes_its_optional_loader_as_a_setting():
    assert "ZG205" not in _codes(FIT)
