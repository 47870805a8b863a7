"""A module-level function written to be installed as some module's forward (`def lce_forward(self, input_ids,
labels=None)`: its first argument `self`, its name saying forward) runs on a module of a class the file does not
show. Its hooks gather that module's own parameters only: a child's weight handed to a fused kernel
(`fused_loss(hidden, self.lm_head.weight)`) without the child running is read ungathered (ZG301).

Not such a read: the same weight after the child was called (`self.lm_head(h)` earlier), a norm's weight (a vector
kept gathered), a depthwise filter squeezed of its one input channel (`self.conv1d.weight.squeeze(1)`), and a
function whose first argument is not `self` (a plain helper, judged as before).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

PATCHED = """
import torch
from .losses import fused_linear_cross_entropy


def lce_forward(self, input_ids=None, attention_mask=None, labels=None, logits_to_keep=0, skip_logits=None):
    outputs = self.model(input_ids=input_ids, attention_mask=attention_mask)
    hidden_states = outputs[0]
    if skip_logits:
        loss = fused_linear_cross_entropy(hidden_states, self.lm_head.weight, labels)
        logits = None
    else:
        logits = self.lm_head(hidden_states)
        loss = None
    return loss, logits
"""

LOOK_ALIKES = """
import torch
from .kernels import causal_conv1d_fn, rms_norm_fn


def gated_forward(self, hidden_states=None, mask=None):
    h = self.in_proj(hidden_states)
    out = h @ self.in_proj.weight
    conv = causal_conv1d_fn(h, self.conv1d.weight.squeeze(1), self.conv1d.bias)
    return rms_norm_fn(conv + out, self.final_norm.weight)


def project(module, hidden_states, weight_scale=1.0):
    return hidden_states * weight_scale
"""


def _zg3(source: str) -> list[tuple[str, int]]:
    found = check_source("patch.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG3"))


def test_a_childs_weight_handed_to_a_fused_kernel_in_a_patched_forward():
    assert _zg3(PATCHED) == [("ZG301", 10)]


def test_called_children_norms_and_depthwise_filters_are_no_such_reads():
    assert _zg3(LOOK_ALIKES) == []


def test_a_function_whose_first_argument_is_not_self_is_no_patched_forward():
    helper = PATCHED.replace("def lce_forward(self,", "def lce_forward(model,").replace("self.", "model.")
    assert _zg3(helper) == []


GATED = """
from typing import Optional

import torch
from .losses import fused_linear_cross_entropy


def multimodal_forward(
    self,
    input_ids: Optional[torch.LongTensor] = None,
    pixel_values: Optional[torch.FloatTensor] = None,
    labels: Optional[torch.LongTensor] = None,
    skip_logits: Optional[bool] = None,
):
    inputs_embeds = self.get_input_embeddings()(input_ids)
    if pixel_values is not None:
        image_features = self.get_image_features(pixel_values)
        inputs_embeds = inputs_embeds + image_features.mean(1, keepdim=True)
    hidden = self.language_model(inputs_embeds=inputs_embeds)[0]
    logits = None
    if skip_logits and labels is None:
        raise ValueError("skip_logits needs labels")
    if skip_logits is None:
        skip_logits = self.training and labels is not None
    if skip_logits:
        loss = fused_linear_cross_entropy(hidden_states=hidden, lm_head_weight=self.lm_head.weight, labels=labels)
    else:
        logits = self.lm_head(hidden)
        loss = None
    return loss, logits
"""


def _zg2(source: str) -> list[tuple[str, int]]:
    found = check_source("patch.py", textwrap.dedent(source))
    return sorted((f.code, f.line) for f in found if f.code.startswith("ZG2"))


def test_a_tower_a_patched_forward_runs_only_when_its_optional_input_is_given():
    assert _zg2(GATED) == [("ZG205", 16)]


FLAG = """
from .losses import fused_linear_cross_entropy


def causal_forward(self, input_ids=None, pixel_values=None, labels=None, skip_logits=None, **kwargs):
    outputs = self.model(input_ids=input_ids, pixel_values=pixel_values, **kwargs)
    hidden = outputs[0]
    if skip_logits is None:
        skip_logits = self.training and labels is not None
    if skip_logits:
        loss = fused_linear_cross_entropy(hidden_states=hidden, lm_head_weight=self.lm_head.weight, labels=labels)
        logits = None
    else:
        logits = self.lm_head(hidden)
        loss = None
    return loss, logits
"""


def test_a_flag_of_the_calling_convention_is_no_tower_input():
    assert _zg2(FLAG) == []
