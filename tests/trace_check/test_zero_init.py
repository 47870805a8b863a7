"""The simulated `zero.Init`: a module's own parameters are partitioned when its `__init__` returns."""

from __future__ import annotations

import pytest
from trace_helpers import line_of

LM = '''
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        {init}
        self.head = nn.Linear(8, 32)

    def forward(self, input_ids, labels):
        logits = self.head(self.embed(input_ids))
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


def build_model():
    return LM()
'''


def test_a_parent_initialising_a_child_it_built_is_zg103(trace):
    src = LM.format(init="nn.init.normal_(self.embed.weight, std=0.02)  # here")
    found, result = trace(src)
    assert found == [("ZG103", line_of(src, "# here"))]
    assert "`embed.weight`" in result.findings[0].message  # named by its place in the built model


def test_a_size_query_and_a_write_after_the_child_returned(trace):
    src = LM.format(init="self.width = self.embed.weight.shape[1]  # size\n"
                         "        self.embed.weight.data.zero_()  # write")
    found, _ = trace(src)
    assert found == [("ZG101", line_of(src, "# write")), ("ZG102", line_of(src, "# size"))]


def test_a_forward_in_init_is_zg110_at_the_call(trace):
    src = LM.format(init="self.dim = self.embed(torch.zeros(1, dtype=torch.long)).shape[-1]  # probe")
    found, _ = trace(src)
    assert found == [("ZG110", line_of(src, "# probe"))]


def test_deepcopy_of_a_built_child_is_zg105(trace):
    src = LM.format(init="self.embed2 = __import__('copy').deepcopy(self.embed)  # copy")
    found, _ = trace(src)
    assert found == [("ZG105", line_of(src, "# copy"))]


def test_apply_gathers_each_module_for_the_function(trace):
    src = '''
    def init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.head = nn.Linear(8, 32)
            self.apply(init_weights)

        def forward(self, input_ids, labels):
            return F.cross_entropy(self.head(self.embed(input_ids)).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''
    assert trace(src)[0] == []


def test_apply_does_not_gather_a_child_for_its_parent(trace):
    src = '''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.head = nn.Linear(8, 32)
            self.apply(self._init)

        def _init(self, m):
            if m is self:
                nn.init.zeros_(m.head.bias)  # child

        def forward(self, input_ids, labels):
            return F.cross_entropy(self.head(self.embed(input_ids)).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''
    assert trace(src)[0] == [("ZG103", line_of(src, "# child"))]


def test_own_parameters_before_init_returns_and_gathered_parameters_are_fine(trace):
    src = '''
    import deepspeed


    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.empty(8))
            nn.init.ones_(self.w)  # its own, before __init__ returns


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.scale = Scale()
            self.head = nn.Linear(8, 32)
            with deepspeed.zero.GatheredParameters([self.head.weight], modifier_rank=0):
                nn.init.zeros_(self.head.weight)
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)  # torch initialises its out_proj itself

        def forward(self, input_ids, labels):
            h = self.embed(input_ids) * self.scale.w.dtype.itemsize
            h = self.attn(h, h, h, need_weights=False)[0]
            return F.cross_entropy(self.head(h).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''
    assert trace(src)[0] == []


def test_weight_norm_and_load_state_dict_on_a_built_child(trace):
    src = LM.format(init="self.embed.load_state_dict({'weight': torch.zeros(32, 8)})  # load\n"
                         "        nn.utils.parametrizations.weight_norm(self.embed)  # reparam")
    found, _ = trace(src)
    assert found == [("ZG101", line_of(src, "# load")), ("ZG104", line_of(src, "# reparam"))]


def test_an_applied_init_reaching_into_the_modules_children_is_zg103(trace):
    """`apply` gathers the module it calls the function on, not its children: a scaled init over
    `module.named_parameters()` and a write to `module.proj.weight` land in placeholders, whatever the
    function is called; the module's own parameters are fine."""
    src = '''
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)
            self.proj = nn.Linear(8, 8)
            self.scale = nn.Parameter(torch.ones(8))

        def forward(self, x):
            return self.proj(self.qkv(x)[..., :8] * self.scale)


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.attn = Attn()
            self.head = nn.Linear(8, 32)
            self.init_weights()

        def init_weights(self):
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(std=0.02)  # own
            if isinstance(module, Attn):
                module.scale.data.fill_(0.5)  # own too
                for name, p in module.named_parameters():
                    if name == "proj.weight":
                        p.data.normal_(std=0.01)  # scaled
                nn.init.zeros_(module.qkv.bias)  # child

        def forward(self, input_ids, labels):
            return F.cross_entropy(self.head(self.attn(self.embed(input_ids))).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''
    found, result = trace(src)
    assert found == [("ZG103", line_of(src, "# scaled")), ("ZG103", line_of(src, "# child"))]
    assert "`attn.proj.weight`" in result.findings[0].message + result.findings[1].message


def test_an_init_helper_is_named_by_what_the_statement_called(trace):
    """`nn.init.kaiming_normal_` reads the size first: the finding is the initialisation, named as called."""
    src = LM.format(init="for m in self.modules():\n"
                         "            if isinstance(m, nn.Embedding):\n"
                         "                nn.init.kaiming_normal_(m.weight)  # kaiming")
    found, result = trace(src)
    assert found == [("ZG103", line_of(src, "# kaiming"))]
    assert "`kaiming_normal_`" in result.findings[0].message


def test_libraries_beside_torch_are_libraries():
    """`torchvision`, `torchaudio` sit beside `torch` in site-packages: their frames are the statement's."""
    import os

    import torch

    from zgen.plan.frames import is_user_file

    base = os.path.dirname(torch.__file__)
    assert is_user_file(base + "vision" + os.sep + "models" + os.sep + "resnet.py")
    assert not is_user_file(os.path.join(base, "nn", "init.py"))


@pytest.mark.parametrize("scale, severity", [(1, "info"), (2, "error")])
def test_a_rewrite_of_a_parameter_from_its_own_unchanged_values_is_a_note(trace, scale, severity):
    """Tying a head to the embedding and padding the head's bias to the tied weight's size: the bias is
    rewritten from its own values, unchanged (both sizes agree), so nothing is lost: a note, not an error.
    Scaling it too, or copying equal values from another parameter, is an error."""
    src = '''
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.decoder = nn.Linear(8, 32)


    class Zeros(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = nn.Parameter(torch.zeros(32))

        def forward(self, x):
            return x + self.b


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.head = Head()
            self.z1, self.z2 = Zeros(), Zeros()
            self.head.decoder.weight = self.embed.weight
            dec = self.head.decoder
            dec.bias.data = F.pad(dec.bias.data, (0, dec.weight.shape[0] - dec.bias.shape[0])) * SCALE  # pad
            with torch.no_grad():
                self.z2.b.copy_(self.z1.b)  # same values, taken elsewhere

        def forward(self, input_ids, labels):
            logits = self.z2(self.z1(self.head.decoder(self.embed(input_ids))))
            return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''.replace("SCALE", str(scale))
    _, result = trace(src)
    by_line = {f.line: f.severity.value for f in result.findings}
    assert by_line == {line_of(src, "# pad"): severity, line_of(src, "# same values"): "error"}


def test_a_statement_that_sizes_then_writes_a_parameter_is_named_by_the_write(trace):
    src = LM.format(init="self.embed.weight.data.copy_(torch.zeros(*self.embed.weight.shape))  # both")
    found, result = trace(src)
    assert found == [("ZG101", line_of(src, "# both"))]
    assert "is written (`copy_`)" in result.findings[0].message
