"""Which modules a call runs, decided by what this rank's call holds: a module picked by the value an input tensor
holds, a layer list that drops layers when iterated (reported where it decides, too), a mask prompt run through a
layer, an encoder a base class's subclasses build that a cached input stands in for, a beam loop of a model alias
unwrapped from its wrapper, and a module handed to another module's forward whose parameters it reads as a dict."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source))]


ENSEMBLE = """
from torch import nn

class Ensemble(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.models = nn.ModuleList([nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64)) for _ in range(n)])

    def forward(self, x, z):
        index = int(z.item())
        return self.models[index](x)
"""


def test_a_module_picked_by_the_value_an_input_tensor_holds():
    assert found(ENSEMBLE) == [("ZG203", 11)]


def test_a_module_picked_by_a_setting_is_the_same_everywhere():
    assert found(ENSEMBLE.replace("int(z.item())", "self.active")) == []


# A LayerDrop list on its own (its users in other files): the decision inside `__iter__` is reported.
LAYER_DROP = """
import torch
from torch import nn

class LayerDropModuleList(nn.ModuleList):
    def __init__(self, p, modules=None):
        super().__init__(modules)
        self.p = p

    def __iter__(self):
        dropout_probs = torch.empty(len(self)).uniform_()
        for i, m in enumerate(super().__iter__()):
            if not self.training or (dropout_probs[i] > self.p):
                yield m
"""


def test_a_layer_list_dropping_layers_when_iterated_is_reported_where_it_decides():
    assert found(LAYER_DROP) == [("ZG202", 13)]


def test_a_layer_list_filtering_by_a_setting_is_not():
    source = LAYER_DROP.replace("(dropout_probs[i] > self.p)", "(i % 2 == 0)")
    assert found(source.replace("torch.empty(len(self)).uniform_()", "None")) == []


# A mask prompt runs through the mask encoder only when given (SAM's prompt encoder); an attention mask handed on
# is the calling convention.
PROMPTS = """
from torch import nn

class PromptEncoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mask_downscaling = nn.Sequential(nn.Conv2d(1, 4, 2), nn.GELU(), nn.Conv2d(4, d, 1))
        self.no_mask_embed = nn.Embedding(1, d)

    def _embed_masks(self, masks):
        return self.mask_downscaling(masks)

    def forward(self, points, masks=None):
        if masks is not None:
            dense = self._embed_masks(masks)
        else:
            dense = self.no_mask_embed.weight.reshape(1, -1, 1, 1)
        return points, dense
"""


def test_a_mask_prompt_run_through_a_layer_only_when_given():
    assert ("ZG205", 14) in found(PROMPTS)


def test_an_attention_mask_tested_for_presence_is_the_convention():
    source = PROMPTS.replace("masks", "attention_mask")
    assert [code for code, _ in found(source) if code == "ZG205"] == []


# A base class whose subclasses build the encoder: a cached encoding passed in skips it.
CACHED = """
from torch import nn

class GeneratorModel(nn.Module):
    def forward(self, *xs, ys=None, prev_enc=None):
        encoder_states = prev_enc if prev_enc is not None else self.encoder(*xs)
        return self.decoder(encoder_states, ys)
"""


def test_a_cached_input_standing_in_for_an_encoder_a_subclass_builds():
    assert found(CACHED) == [("ZG205", 6)]


def test_an_attribute_not_named_as_a_module_is_not_taken_for_one():
    assert found(CACHED.replace("self.encoder(", "self.prepare(")) == []


# A beam search of an agent holding the model, unwrapped from its data-parallel wrapper first.
BEAMS = """
import torch
from torch import nn

class Beam:
    def __init__(self):
        self.finished = False

    def advance(self, logprobs):
        self.finished = bool(logprobs.argmax() == 2)

    def is_done(self):
        return self.finished

class Agent:
    def __init__(self, model: nn.Module):
        self.model = model

    def generate(self, x, bsz, max_ts):
        model = self.model
        if isinstance(model, torch.nn.parallel.DistributedDataParallel):
            model = self.model.module
        beams = [Beam() for _ in range(bsz)]
        for _ts in range(max_ts):
            if all(b.is_done() for b in beams):
                break
            score = model.decoder(x)
            for i, b in enumerate(beams):
                b.advance(score[i])
        return x
"""


def test_a_beam_loop_of_a_model_unwrapped_from_its_wrapper_stops_per_rank():
    assert found(BEAMS) == [("ZG204", 25)]


def test_a_local_bound_again_to_another_value_is_no_longer_the_model():
    assert found(BEAMS.replace("model = self.model.module", "model = make_scorer(x)")) == []


# An EMA module whose forward is handed the online model and reads its parameters as a dict.
EMA = """
import torch
from torch import nn

class LitEma(nn.Module):
    def __init__(self, decay=0.999):
        super().__init__()
        self.decay = decay

    def forward(self, model):
        with torch.no_grad():
            m_param = dict(model.named_parameters())
            shadow = dict(self.named_buffers())
            for key in m_param:
                shadow[key].sub_((1 - self.decay) * (shadow[key] - m_param[key]))
"""


def test_a_forward_reading_the_parameters_of_a_model_it_is_handed():
    # (the handed model's own pass is not running: its parameters are partitioned data, read outside any gather)
    assert found(EMA) == [("ZG109", 15)]


def test_a_forward_reading_its_own_parameters_as_a_dict():
    assert found(EMA.replace("model.named_parameters()", "self.named_parameters()")) == []
