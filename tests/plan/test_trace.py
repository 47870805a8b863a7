"""The meta-device trace: run order, aliases, parameter reads, and what it reports instead of crashing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from zgen.errors import ZgenError
from zgen.plan.trace import (
    DATA_DEPENDENT_CODE,
    DataDependentTrace,
    build_meta_model,
    load_callable,
    parse_target,
    trace_model,
)

REPO = Path(__file__).resolve().parents[2]


def _line(path: Path, needle: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def trace(spec: str, root: Path = REPO, seq_len: int = 8, inputs=None):
    t = parse_target(spec, "--model")
    model = build_meta_model(load_callable(t, root), t)
    return model, trace_model(model, root=root, batch_size=1, seq_len=seq_len, inputs=inputs)


def test_llama_order_aliases_and_no_external_reads():
    model, tr = trace("examples/llama/model.py:build_tiny_model")
    blocks = [m for m in tr.forward_calls if m.count(".") == 1 and m.startswith("layers.")]
    assert tr.forward_calls[0] == ""  # the root starts first
    assert blocks == ["layers.0", "layers.1", "layers.2"]
    bwd_blocks = [m for m in tr.backward_calls if m.count(".") == 1 and m.startswith("layers.")]
    assert tr.backward_calls[0] == "" and bwd_blocks == ["layers.2", "layers.1", "layers.0"]
    tied = tr.param("embed_tokens.weight")
    assert tied.aliases == ("lm_head.weight",) and tied.shape == (256, 64)
    assert tr.total_params == sum(p.numel() for p in model.parameters())
    assert tr.external_reads() == []  # the tied head is called as a module: it holds the weight itself
    assert tr.vocab_size == 256 and tr.unused == ()


def test_reads_of_a_childs_weight_are_recorded_with_the_users_line():
    _, tr = trace("examples/models/child_weight.py:build_model")
    src = REPO / "examples/models/child_weight.py"
    ext = {(r.module, r.param, r.path, r.line) for r in tr.external_reads()}
    assert ("", "blocks.0.proj.weight", "examples/models/child_weight.py", _line(src, "x = F.linear(x, self.blocks")) in ext
    own = _line(src, "F.linear(h, self.proj.weight)")
    assert {("blocks.1", "blocks.1.proj.weight", "examples/models/child_weight.py", own)} <= ext


def test_data_dependent_routing_is_a_finding_at_the_users_line():
    with pytest.raises(DataDependentTrace) as e:
        trace("examples/models/hit_only_moe.py:build_model")
    f = e.value.finding
    src = REPO / "examples/models/hit_only_moe.py"
    assert (f.code, f.path, f.line) == (DATA_DEPENDENT_CODE, "examples/models/hit_only_moe.py",
                                        _line(src, "rows = torch.where(choice == i)"))
    assert "`torch.nonzero()` needs them" in f.message and f.help


def test_item_in_forward_is_a_finding(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 4)
                self.a = nn.Linear(4, 4)
                self.b = nn.Linear(4, 4)

            def forward(self, input_ids, labels):
                x = self.embed(input_ids)
                if x.sum() > 0:
                    x = self.a(x)
                return self.b(x).mean()

        def build():
            return M()
    """))
    with pytest.raises(DataDependentTrace) as e:
        trace("m.py:build", root=tmp_path)
    assert (e.value.finding.path, e.value.finding.line) == ("m.py", 14)
    assert "`Tensor.item()` needs them" in e.value.finding.message


def test_user_inputs_function_is_called_with_batch_seq_and_generator(tmp_path):
    (tmp_path / "inputs.py").write_text(textwrap.dedent("""
        import torch

        def make(batch_size, seq_len, generator):
            ids = torch.randint(0, 256, (batch_size, seq_len), generator=generator)
            return (ids, ids)
    """))
    t = parse_target("inputs.py:make", "--inputs")
    _, tr = trace("examples/llama/model.py:build_tiny_model", inputs=(load_callable(t, tmp_path), t))
    assert tr.forward_calls[0] == ""


@pytest.mark.parametrize(
    "spec, message",
    [
        ("examples/llama/model.py", "is not `path/to/file.py:function`"),
        ("examples/llama/ds_config.json:f", "is not a Python file"),
        ("examples/llama/model.py:1abc", "is not a Python identifier"),
    ],
)
def test_bad_target_syntax(spec, message):
    with pytest.raises(ZgenError, match=message):
        parse_target(spec, "--model")


def test_missing_file_and_function():
    with pytest.raises(ZgenError, match="does not exist"):
        load_callable(parse_target("nope/model.py:build", "--model"), REPO)
    with pytest.raises(ZgenError, match="has no `build_tiny`") as e:
        load_callable(parse_target("examples/llama/model.py:build_tiny", "--model"), REPO)
    assert "build_tiny_model" in e.value.help


def test_factory_raising_and_forward_without_loss(tmp_path):
    (tmp_path / "bad.py").write_text(textwrap.dedent("""
        from torch import nn

        def raises():
            raise ValueError("no config file")

        def not_a_module():
            return 3

        def logits():
            return nn.Sequential(nn.Embedding(8, 4), nn.Linear(4, 8))
    """))
    with pytest.raises(ZgenError, match=r"factory raised ValueError: no config file \(at .*bad.py:5\)"):
        trace("bad.py:raises", root=tmp_path)
    with pytest.raises(ZgenError, match="returned a int, not an `nn.Module`"):
        trace("bad.py:not_a_module", root=tmp_path)
    # Sequential takes one positional argument: the synthesized kwargs do not fit, which is reported plainly.
    with pytest.raises(ZgenError, match="tracing the model on the meta device raised TypeError"):
        trace("bad.py:logits", root=tmp_path)


def test_forward_returning_logits_is_not_a_loss(tmp_path):
    (tmp_path / "lm.py").write_text(textwrap.dedent("""
        from torch import nn

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(8, 4)
                self.head = nn.Linear(4, 8)

            def forward(self, input_ids, labels=None):
                return self.head(self.embed(input_ids))

        def build():
            return LM()
    """))
    with pytest.raises(ZgenError, match=r"returned a tensor of shape \(1, 8, 8\), not a loss"):
        trace("lm.py:build", root=tmp_path)


def test_autocast_on_the_input_device_falls_back_to_fake_tensors():
    """`torch.autocast(device_type=x.device.type)` rejects `meta`; fake CPU tensors run it."""
    _, tr = trace("examples/models/nested_layers.py:build_model")
    assert tr.mode == "fake float32"
    assert [m for m in tr.forward_calls if m.count(".") == 2 and m.endswith(".1")] == [f"layers.{i}.1" for i in range(4)]


def test_compute_dtype_from_the_config_is_traced(tmp_path):
    t = parse_target("examples/llama/model.py:build_tiny_model", "--model")
    model = build_meta_model(load_callable(t, REPO), t)
    tr = trace_model(model, root=REPO, batch_size=1, seq_len=8, dtype="bfloat16")
    assert tr.mode == "meta bfloat16" and tr.dtype == "bfloat16"
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the stand-ins are put back


def test_a_failure_names_the_op_and_the_users_line(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 4)

            def forward(self, input_ids, labels):
                x = self.embed(input_ids)
                return (x @ torch.ones(5, 3)).mean()

        def build():
            return M()
    """))
    with pytest.raises(ZgenError, match=r"raised RuntimeError in `aten\.\w*mm\w*`: .* \(at .*m\.py:12\)"):
        trace("m.py:build", root=tmp_path)


def test_value_dependent_indexing_inside_one_module_is_no_finding(tmp_path):
    """Mixtral's eager expert loop over one stacked parameter: every rank runs the same modules."""
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Experts(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.w = nn.Parameter(torch.randn(n, d, d))

            def forward(self, x, choice):
                out = torch.zeros_like(x)
                for e in (torch.bincount(choice, minlength=len(self.w)) > 0).nonzero():
                    rows = torch.where(choice == e[0])[0]
                    out[rows] = x[rows] @ self.w[e[0]]
                return out

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 4)
                self.router = nn.Linear(4, 3)
                self.experts = Experts(3, 4)

            def forward(self, input_ids, labels):
                x = self.embed(input_ids).flatten(0, 1)
                return self.experts(x, self.router(x).argmax(-1)).mean()

        def build():
            return M()
    """))
    _, tr = trace("m.py:build", root=tmp_path)
    assert tr.decisions and all("in `experts`" in d for d in tr.decisions)
    assert "torch.nonzero() at m.py:13 in `experts`" in tr.decisions


def test_activation_bytes_are_recorded_and_grow_with_the_batch():
    t = parse_target("examples/llama/model.py:build_tiny_model", "--model")
    model = build_meta_model(load_callable(t, REPO), t)
    one = trace_model(model, root=REPO, batch_size=1, seq_len=16).activation_bytes
    two = trace_model(model, root=REPO, batch_size=2, seq_len=16).activation_bytes
    assert one > 0 and 1.9 * one <= two <= 2.1 * one


def test_memory_model_uses_traced_activations_without_a_model_config():
    from zgen.memory import activation_bytes
    from zgen.pipeline import model_shape

    model, tr = trace("examples/models/nested_layers.py:build_model", seq_len=16)
    assert getattr(model, "config", None) is None
    shape = model_shape(model, tr, 16)
    assert shape.traced_activation_bytes == tr.activation_bytes > 0
    assert activation_bytes(shape, micro_batch=4, seq_len=16, precision="fp32") == 4 * tr.activation_bytes


def test_plan_notes_say_how_the_trace_ran():
    from zgen.plan.trace import trace_notes

    _, tr = trace("examples/models/nested_layers.py:build_model")
    assert any(n.startswith("traced on fake float32 tensors (`meta float32` could not run") for n in trace_notes(tr, None))
    _, tr = trace("examples/llama/model.py:build_tiny_model")
    assert trace_notes(tr, "float32") == []


def _saved_bytes(fn, *args, skip: set[int]) -> int:
    """Bytes autograd saves while `fn(*args)` runs forward, each storage once, the storages in `skip` left out."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        k = t.untyped_storage()._cdata
        if k not in skip:
            seen[k] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return sum(seen.values())


@pytest.mark.slow  # compiles a block (about 8 s on 2 cores)
def test_a_compiled_blocks_saved_bytes_are_what_the_partitioner_keeps():
    """The trace's `saved_compiled` of a decoder block against what torch's min-cut partitioner actually saves.

    The partitioner keeps the block's input (the residual stream, which the block's first norm upcasts and saves in
    eager mode): a tensor no rule about elementwise chains inside the block can recompute. Without it the trace
    counts one hidden-sized tensor too few per block (about 6% of this block's saved bytes).
    """
    import sys

    from zgen.config.resolved import ZeroSpec
    from zgen.plan.auto import unit_work
    from zgen.plan.planner import build_plan, unit_numel

    sys.path.insert(0, str(REPO / "examples/llama"))
    import model as llama

    seq = 32
    torch.manual_seed(0)
    block = llama.build_tiny_model().layers[0].to(torch.bfloat16)
    cfg = llama.build_tiny_model().config
    x = torch.randn(1, seq, cfg.hidden_size, dtype=torch.bfloat16, requires_grad=True)
    cos, sin = (t.to(torch.bfloat16) for t in llama.rotary_tables(cfg.head_dim, seq, cfg.rope_theta))
    params = {p.untyped_storage()._cdata for p in block.parameters()}
    compiled = _saved_bytes(torch.compile(block, backend="aot_eager_decomp_partition"), x, cos, sin, skip=params)

    t = parse_target("examples/llama/model.py:build_tiny_model", "--model")
    model = build_meta_model(load_callable(t, REPO), t)
    tr = trace_model(model, root=REPO, batch_size=1, seq_len=seq, dtype="bfloat16")
    plan = build_plan(model, tr, ZeroSpec(stage=3, param_persistence_threshold=0), world_size=1)
    work, _, _ = unit_work(plan, tr.costs, unit_numel(plan, tr), 1)
    # the first block, which saves the rotary tables as the compiled one does; what is left: the norms' fp32
    # reciprocal roots, one value per row (the rule takes them for recomputed)
    assert work["layers.0"].saved_compiled == pytest.approx(compiled, rel=0.02)
    assert work["layers.0"].saved_compiled < work["layers.0"].saved


def test_a_compiled_block_keeps_the_residual_stream_it_cannot_recompute():
    seq = 16
    t = parse_target("examples/llama/model.py:build_tiny_model", "--model")
    model = build_meta_model(load_callable(t, REPO), t)
    tr = trace_model(model, root=REPO, batch_size=1, seq_len=seq, dtype="bfloat16")
    costs = {c.module: c for c in tr.costs}
    hidden = model.config.hidden_size
    # layers.1's input is layers.0's output (made by its residual add), which its first norm upcasts and saves
    assert costs["layers.1"].compiled_inputs == seq * hidden * 2
    # inside the block the norm's own chain starts from that input: nothing else of the block's comes from outside
    assert costs["layers.1.input_layernorm"].compiled_inputs == seq * hidden * 2
    # the MLP's matmuls save what they read from outside it: nothing more to keep
    assert costs["layers.1.mlp"].compiled_inputs == 0
