"""A constructor asking a module its caller built for its output size, through a method that runs it on a probe.

diffusion_policy's image policies take `obs_encoder` built by the config and call `obs_encoder.output_shape()` in
their `__init__`: the method builds a zero observation and runs `self.forward` on it. Under `zero.Init` the encoder
was partitioned when its constructor returned and nothing gathers it in another module's constructor: ZG110. A method
that only reads a setting (`obs_encoder.feature_dim()`) runs nothing.
"""

from __future__ import annotations

from zgen.model import check_source

POLICY = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.d = d
        self.fc = nn.Linear(d, 512)

    def forward(self, x):
        return self.fc(x)

    def output_shape(self):
        example = torch.zeros(1, self.d)
        return self.forward(example).shape[1:]

    def feature_dim(self):
        return self.d


class Policy(nn.Module):
    def __init__(self, obs_encoder: Encoder):
        super().__init__()
        dim = obs_encoder.output_shape()[0]
        width = obs_encoder.feature_dim()
        self.obs_encoder = obs_encoder
        self.head = nn.Linear(dim + width, 4)

    def forward(self, x):
        return self.head(self.obs_encoder(x))
"""


def test_a_probe_run_by_a_method_of_a_handed_module():
    found = [(f.code, f.line) for f in check_source("policy.py", POLICY) if f.code.startswith("ZG1")]
    assert found == [("ZG110", 26)]
