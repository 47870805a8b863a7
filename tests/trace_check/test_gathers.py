"""The training step and entries: a partitioned parameter used where no hook gathers it (ZG1xx, ZG3xx)."""

from __future__ import annotations

from trace_helpers import line_of

BUILD = '''

    def build_model():
        return LM()
    '''


def test_a_tied_weight_read_through_another_module_is_zg301(trace):
    src = '''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.block = nn.Linear(8, 8)

        def forward(self, input_ids, labels):
            h = self.block(self.embed(input_ids))
            logits = F.linear(h, self.embed.weight)  # tied
            return F.cross_entropy(logits.flatten(0, 1), labels.flatten())
    ''' + BUILD
    found, result = trace(src)
    assert found == [("ZG301", line_of(src, "# tied"))]
    assert "register_external_parameter" in result.findings[0].help


def test_lookalikes_tied_head_called_as_a_module_own_parameters_and_metadata(trace):
    src = '''
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(8))

        def forward(self, x):
            return x * self.weight / self.weight.norm()  # its own parameter


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.norm = Norm()
            self.head = nn.Linear(8, 32, bias=False)
            self.head.weight = self.embed.weight  # tied, and called as a module

        def forward(self, input_ids, labels):
            h = self.embed(input_ids).to(self.head.weight.dtype)  # metadata only
            if self.head.weight.requires_grad and self.norm.weight.device.type == "cpu":
                h = self.norm(h)
            mask = h.new_zeros(h.shape[:-1]).to(self.embed.weight)
            return F.cross_entropy(self.head(h).flatten(0, 1), labels.flatten()) + mask.sum()
    ''' + BUILD
    assert trace(src)[0] == []


def test_nothing_stands_in_for_an_absent_deepspeed(trace, monkeypatch):
    """Libraries probe `importlib.util.find_spec("deepspeed")`: a stand-in module without an import spec made
    that raise (transformers failed to import), so an absent DeepSpeed stays absent."""
    import sys

    for name in [m for m in sys.modules if m == "deepspeed" or m.startswith("deepspeed.")]:
        monkeypatch.delitem(sys.modules, name)
    src = '''
    import importlib.util

    importlib.util.find_spec("deepspeed")  # raised ValueError on a stand-in without __spec__


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Linear(8, 8)
            self.embed = nn.Embedding(32, 8)

        def forward(self, input_ids, labels):
            logits = F.linear(self.block(self.embed(input_ids)), self.embed.weight)
            return F.cross_entropy(logits.flatten(0, 1), labels.flatten())
    ''' + BUILD
    findings = trace(src)[0]
    assert "deepspeed" not in sys.modules
    assert [code for code, _ in findings] == ["ZG301"]  # the unregistered tied read, seen as usual


def test_forward_called_directly_is_zg302_and_a_child_method_zg303(trace):
    src = '''
    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(32, 8))

        def forward(self, ids):
            return self.weight[ids]

        def attend(self, h):
            return h @ self.weight.T


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = Embed()
            self.block = nn.Linear(8, 8)

        def forward(self, input_ids, labels):
            h = self.block.forward(self.embed(input_ids))  # bypass
            logits = self.embed.attend(h)  # method
            return F.cross_entropy(logits.flatten(0, 1), labels.flatten())
    ''' + BUILD
    found, result = trace(src)
    assert found == [("ZG302", line_of(src, "# bypass")), ("ZG303", line_of(src, "# method"))]
    assert "call the module itself" in result.findings[0].help


def test_small_parameters_stay_gathered_above_the_threshold(trace):
    src = '''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)

        def forward(self, input_ids, labels):
            logits = F.linear(self.embed(input_ids), self.embed.weight)  # 256 elements
            return F.cross_entropy(logits.flatten(0, 1), labels.flatten())
    ''' + BUILD
    assert trace(src, threshold=256)[0] == []
    assert trace(src, threshold=255)[0] == [("ZG301", line_of(src, "# 256 elements"))]


def test_entries_after_the_step_ema_state_dict_clip_and_size(trace):
    src = '''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels):
            return F.cross_entropy(self.head(self.embed(input_ids)).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()


    def ema(model, batch):
        shadow = [p.detach().clone() for p in model.parameters()]  # ema


    def save(model, batch):
        sd = model.state_dict()  # save
        n = sum(p.numel() for p in model.parameters())  # count
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip
    '''
    found, _ = trace(src, entries=("ema", "save"))
    assert found == [("ZG102", line_of(src, "# count")), ("ZG107", line_of(src, "# clip")),
                     ("ZG108", line_of(src, "# save")), ("ZG109", line_of(src, "# ema"))]


def test_a_parameter_created_in_forward_is_zg106(trace):
    src = '''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.head = None

        def forward(self, input_ids, labels):
            h = self.embed(input_ids)
            if self.head is None:
                self.head = nn.Linear(8, 32)  # lazy
            return F.cross_entropy(self.head(h).flatten(0, 1), labels.flatten())
    ''' + BUILD
    assert ("ZG106", line_of(src, "# lazy")) in trace(src)[0]


def test_a_write_or_size_query_inside_a_forward_is_zg1_not_zg3(trace):
    src = '''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.proj = nn.Linear(8, 8)
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels):
            with torch.no_grad():
                self.proj.weight.data.clamp_(-1.0, 1.0)  # write
            h = self.proj(self.embed(input_ids)).view(-1, self.proj.weight.shape[0])  # size
            return F.cross_entropy(self.head(h), labels.flatten())
    ''' + BUILD
    assert trace(src)[0] == [("ZG101", line_of(src, "# write")), ("ZG102", line_of(src, "# size"))]


NOTATION = '''
def repeat(t, n):
    """A tensor-notation helper of another package: handed a tensor, it sizes and expands it."""
    return _expand(t, n)


def _expand(t, n):
    shape = t.shape
    return t.unsqueeze(0).expand(n, *shape)
'''


def test_a_helper_of_another_package_handed_the_parameter_is_not_the_statement(trace, tmp_path, monkeypatch):
    """The read happens inside `notation.repeat`; the statement to change is the one that handed it the
    parameter. A helper of the model's own package that reads it (`inplace_copy`) is the statement."""
    (tmp_path / "notation").mkdir()
    (tmp_path / "notation" / "__init__.py").write_text(NOTATION)
    monkeypatch.syspath_prepend(str(tmp_path))
    src = '''
    import notation


    def inplace_copy(tgt, src):
        tgt.copy_(src)  # own helper


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.pos = nn.Parameter(torch.zeros(8))
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels):
            h = self.embed(input_ids) + self.pos
            return F.cross_entropy(self.head(h).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()


    def entry(model, batch):
        rows = notation.repeat(model.pos, 2)  # handed
        with torch.no_grad():
            inplace_copy(model.head.bias, torch.zeros(32))
    '''
    found, _ = trace(src, entries=("entry",))
    assert found == [("ZG101", line_of(src, "# own helper")), ("ZG102", line_of(src, "# handed"))]


def test_forward_called_directly_from_another_method_is_zg302_even_for_a_size_query(trace):
    """`self.forward(...)` from `sample` (an entry's call) skips the hooks: the owner's own parameters it
    sizes and reads are ungathered, reported once at the direct call. `self(...)` gathers."""
    src = '''
    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.null = nn.Parameter(torch.zeros(8))
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels=None, drop=False):
            h = self.embed(input_ids)
            if drop:
                h = self.null.expand(*h.shape[:-1], self.null.shape[0])
            logits = self.head(h)
            if labels is None:
                return logits
            return F.cross_entropy(logits.flatten(0, 1), labels.flatten())

        def guided(self, ids):
            cond = self(ids, drop=True)  # through the hooks
            null = self.forward(ids, drop=True)  # direct
            return cond + null


    def build_model():
        return Denoiser()


    def entry(model, batch):
        model.guided(batch["input_ids"])
    '''
    found, result = trace(src, entries=("entry",))
    assert found == [("ZG302", line_of(src, "# direct"))]
    assert "call the module itself" in result.findings[0].help
