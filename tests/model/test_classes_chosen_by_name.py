"""A child built from a class looked up by name (`get_model_trunk(name)(config)`, `TRUNKS[name](config)`) is a module
whose parameters no file shows: a wrapper holding one and calling it in `forward` may gather (vissl's
`FeatureExtractorModel` around a registered trunk). An activation looked up by name is built with no settings."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

WRAPPED_TRUNK = """
from torch import nn

TRUNKS = {}


def get_model_trunk(name):
    return TRUNKS[name]


class FeatureExtractor(nn.Module):
    def __init__(self, config, name):
        super().__init__()
        self.base_model = get_model_trunk(name)(config, name)

    def forward(self, x):
        return self.base_model(x)


class MultiInputModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.trunk = FeatureExtractor(config, config.trunk)
        self.input_keys = config.input_keys

    def single_input_forward(self, x):
        return self.trunk(x)

    def forward(self, batch):
        outputs = []
        for key in self.input_keys:
            if key in batch:
                outputs.append(self.single_input_forward(batch[key]))
        return outputs
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("model.py", textwrap.dedent(source))]


def test_a_trunk_of_a_class_chosen_by_name_runs_only_for_the_keys_the_batch_has():
    assert ("ZG203", 32) in found(WRAPPED_TRUNK)


def test_a_trunk_chosen_from_a_registry_by_key_is_a_module_too():
    source = WRAPPED_TRUNK.replace("get_model_trunk(name)(config, name)", "TRUNKS[name](config, name)")
    assert ("ZG203", 32) in found(source)


def test_an_activation_chosen_by_name_and_built_with_no_settings_holds_no_parameters():
    source = WRAPPED_TRUNK.replace("get_model_trunk(name)(config, name)", "get_model_trunk(name)(inplace=True)")
    assert ("ZG203", 32) not in found(source)
