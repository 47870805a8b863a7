"""An argument named like parameters (`bnn_prior_parameters`) that the code keys by strings (`params["type"]`) is a
mapping of settings: an iterable of parameters is never indexed by a name. Handed on to a helper that reads
`params["prior_mu"]`, it reads no parameter. The same helper walking a `model_parameters` iterable it was handed
(`for p in params: p.data.mul_(0.5)`) writes partitioned placeholders (ZG101).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

CONVERTER = """
import torch
from torch import nn


def bnn_linear_layer(params, d):
    kind = d.__class__.__name__ + params["type"]
    layer = make_layer(kind, d.in_features, d.out_features, prior_mean=params["prior_mu"])
    if params["moped_enable"]:
        layer.mu_weight.data.copy_(torch.ones(d.out_features, d.in_features))
    return layer


def dnn_to_bnn(m, bnn_prior_parameters):
    for name, value in list(m._modules.items()):
        if m._modules[name]._modules:
            dnn_to_bnn(m._modules[name], bnn_prior_parameters)
        elif "Linear" in m._modules[name].__class__.__name__:
            setattr(m, name, bnn_linear_layer(bnn_prior_parameters, m._modules[name]))
"""

SHRINK = """
import torch


def shrink(params, factor):
    for p in params:
        p.data.mul_(factor)


def shrink_model(model_parameters):
    shrink(model_parameters, 0.5)
"""


def _found(source: str) -> list[tuple[str, int]]:
    found = check_source("convert.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG1"))


def test_a_mapping_of_settings_named_like_parameters_reads_no_parameter():
    assert _found(CONVERTER) == []


def test_an_iterable_of_parameters_handed_to_a_writer_is_written():
    assert [code for code, _line in _found(SHRINK)] == ["ZG101"]
