"""An item of a container held in a container (`self.decoder.fc_layers[0][0]` of `nn.Sequential(nn.Sequential(
nn.Linear(...), nn.BatchNorm1d(...)))`) is one of the inner layers: a public method of the built model reading its
weight's values (`get_loadings`) reads a partitioned placeholder (ZG109). Its dtype and device are no values.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

LDVAE = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc_layers = nn.Sequential(nn.Sequential(nn.Linear(n_in, n_out), nn.BatchNorm1d(n_out)))

    def forward(self, z):
        return self.fc_layers(z)


class LinearVAE(nn.Module):
    def __init__(self, n_in, n_latent):
        super().__init__()
        self.decoder = Decoder(n_latent, n_in)

    def forward(self, z):
        return self.decoder(z)

    @torch.inference_mode()
    def get_loadings(self):
        w = self.decoder.fc_layers[0][0].weight
        return w.detach().cpu().numpy()

    def placement(self):
        w = self.decoder.fc_layers[0][0].weight
        return w.dtype, w.device
"""


def test_a_weight_of_an_item_of_a_nested_container_is_read_in_a_public_method():
    found = sorted((f.code, f.line) for f in check_source("vae.py", textwrap.dedent(LDVAE)) if f.code == "ZG109")
    assert found == [("ZG109", 25)]
