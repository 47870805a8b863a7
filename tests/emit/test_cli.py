"""`zgen emit` and `zgen plan` from the command line: staleness, refusal, --force, bad input, plan output."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = {
    "train_batch_size": 4,
    "train_micro_batch_size_per_gpu": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100},
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a config, the example models reachable as `models/`, and no [tool.zgen]."""
    (tmp_path / "ds.json").write_text(json.dumps(TINY))
    (tmp_path / "models").symlink_to(REPO / "examples" / "models")
    return tmp_path


def emit(zgen, project, *extra, model="models/tied.py:build_model"):
    return zgen("emit", "--model", model, "--config", "ds.json", "--world-size", "2", "--seq-len", "16",
                "--out", "train_gen.py", *extra, cwd=project)


def test_emit_then_check_is_clean_and_a_config_edit_makes_it_stale(zgen, project):
    code, out, err = emit(zgen, project)
    assert code == 0, err
    assert "wrote train_gen.py" in out
    first = (project / "train_gen.py").read_text()
    assert emit(zgen, project, "--check")[0] == 0
    assert emit(zgen, project)[0] == 0 and (project / "train_gen.py").read_text() == first  # same bytes

    (project / "ds.json").write_text(json.dumps({**TINY, "optimizer": {"type": "AdamW", "params": {"lr": 5e-4}}}))
    code, out, _ = emit(zgen, project, "--check")
    assert code == 1 and "train_gen.py: is stale; regenerate with: zgen emit" in out
    assert (project / "train_gen.py").read_text() == first  # --check writes nothing

    (project / "train_gen.py").unlink()
    code, out, _ = emit(zgen, project, "--check")
    assert code == 1 and "does not exist" in out


def test_check_covers_the_plan_file_beside_the_script(zgen, project):
    assert emit(zgen, project)[0] == 0
    plan_file = project / "train_gen.plan.json"
    assert 'PLAN_FILE = HERE / "train_gen.plan.json"' in (project / "train_gen.py").read_text()
    plan = json.loads(plan_file.read_text())
    plan["forward_prefetch"] = [[] for _ in plan["forward_prefetch"]]
    plan_file.write_text(json.dumps(plan))
    code, out, _ = emit(zgen, project, "--check")
    assert code == 1 and out.startswith("train_gen.plan.json: is stale; regenerate with: zgen emit")
    plan_file.unlink()
    code, out, _ = emit(zgen, project, "--check")
    assert code == 1 and out.startswith("train_gen.plan.json: does not exist")
    assert emit(zgen, project)[0] == 0 and emit(zgen, project, "--check")[0] == 0


def test_banner_records_inputs_and_the_regenerate_command(zgen, project):
    assert emit(zgen, project)[0] == 0
    head = (project / "train_gen.py").read_text().split('"""')[0]
    assert "#   model:   models/tied.py:build_model" in head
    assert "#   config:  ds.json" in head
    assert ("# Regenerate:      zgen emit --model models/tied.py:build_model --config ds.json --world-size 2 "
            "--seq-len 16 --out train_gen.py") in head


LAYERDROP = textwrap.dedent("""
    import random

    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(64, 16)
            self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))
            self.head = nn.Linear(16, 64)
            self.drop = 0.0

        def forward(self, input_ids, labels):
            x = self.embed(input_ids)
            for layer in self.layers:
                if self.training and random.random() < self.drop:
                    continue
                x = layer(x)
            return F.cross_entropy(self.head(x)[:, :-1].flatten(0, 1), labels[:, 1:].flatten())

    def build():
        return Net()
""")


def test_emit_refuses_while_check_errors_remain_and_force_records_them(zgen, project):
    (project / "layerdrop.py").write_text(LAYERDROP)
    code, out, err = emit(zgen, project, model="layerdrop.py:build")
    assert code == 1 and "ZG202" in out and "emit refused" in err
    assert not (project / "train_gen.py").exists()

    code, out, err = emit(zgen, project, "--force", model="layerdrop.py:build")
    assert code == 0 and "FORCED past" in out
    text = (project / "train_gen.py").read_text()
    assert "# --force: emitted although `zgen check` reported these errors:" in text and "ZG202" in text
    assert "--force" in text.split("# Regenerate:")[1].splitlines()[0]
    # --check treats a forced file as forced: it is current.
    assert emit(zgen, project, "--check", model="layerdrop.py:build")[0] == 0


@pytest.mark.parametrize(
    "model, message",
    [
        ("models/tied.py:build_it", "has no `build_it`"),
        ("models/tied.py", "is not `path/to/file.py:function`"),
        ("missing.py:build", "does not exist"),
        ("bad.py:raises", "the factory raised RuntimeError: boom"),
        ("bad.py:logits_only", "not a loss"),
    ],
)
def test_bad_model_input_is_a_clear_error_with_exit_2(zgen, project, model, message):
    (project / "bad.py").write_text(textwrap.dedent("""
        from torch import nn

        class Logits(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(8, 4)

            def forward(self, input_ids, labels=None):
                return self.embed(input_ids)

        def raises():
            raise RuntimeError("boom")

        def logits_only():
            return Logits()
    """))
    code, out, err = emit(zgen, project, model=model)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (project / "train_gen.py").exists()


def test_plan_prints_units_timeline_and_crosscheck(zgen, project):
    code, out, err = zgen("plan", "--model", "models/child_weight.py:build_model", "--config", "ds.json",
                          "--world-size", "2", "--seq-len", "16", cwd=project)
    assert code == 0, err
    assert "units (" in out and "blocks.0.proj.weight" in out  # the root's external parameter
    assert "memory per GPU over one step" in out and "<- peak" in out
    assert "trace vs static check:" in out


def test_plan_json_is_the_plan_and_plot_writes_svg(zgen, project):
    from zgen.schedule.plan import Plan

    code, out, _ = zgen("plan", "--model", "models/encdec.py:build_model", "--config", "ds.json", "--seq-len", "16",
                        "--json", cwd=project)
    assert code == 0
    plan = Plan.from_json(out)
    assert plan.forward_order[1:] == ("encoder.layers.0", "encoder.layers.1", "decoder.layers.0", "decoder.layers.1")
    code, out, _ = zgen("plan", "--model", "models/encdec.py:build_model", "--config", "ds.json", "--seq-len", "16",
                        "--plot", "memory.svg", cwd=project)
    svg = (project / "memory.svg").read_text()
    assert code == 0 and svg.startswith("<svg") and svg.rstrip().endswith("</svg>") and "peak" in svg


def test_plan_reports_data_dependent_control_flow_as_a_finding(zgen, project):
    code, out, _ = zgen("plan", "--model", "models/hit_only_moe.py:build_model", "--config", "ds.json",
                        "--seq-len", "16", cwd=project)
    assert code == 1 and "ZG290" in out and "hit_only_moe.py:" in out
    assert "agree: the static check reports ZG203" in out  # the static rule flags the `continue` next to it


def test_user_inputs_and_data_functions_drive_the_script(zgen, project, run_together):
    """`--inputs` draws the global batch from the seed, `--data` yields each rank's micro batches."""
    import sys

    (project / "feed.py").write_text(textwrap.dedent("""
        import torch

        def inputs(batch_size, seq_len, generator):
            ids = torch.randint(0, 128, (batch_size, seq_len), generator=generator)
            return {"input_ids": ids, "labels": ids}

        def data(rank, world_size, micro_batch_size, seq_len, seed):
            g = torch.Generator().manual_seed(seed * 100 + rank)
            while True:
                ids = torch.randint(0, 128, (micro_batch_size, seq_len), generator=g)
                yield (ids, ids)
    """))
    names = ("inputs", "data")
    for name in names:
        code, _, err = emit(zgen, project, f"--{name}", f"feed.py:{name}", "--out", f"{name}_gen.py")
        assert code == 0, err
        text = (project / f"{name}_gen.py").read_text()
        assert f"feed.py:{name}" in text.split('"""')[0]
    run_together(project, *(([sys.executable, f"{name}_gen.py", "--device", "cpu", "--steps", "2",
                              "--checkpoint-every", "0", "--log-jsonl", f"{name}.jsonl"], f"{name}.out") for name in names))
    for name in names:
        log = [json.loads(x) for x in (project / f"{name}.jsonl").read_text().splitlines()]
        assert [r["step"] for r in log] == [1, 2] and all(r["loss"] > 0 for r in log)


def test_plot_png_needs_matplotlib_or_says_how_to_get_it(zgen, project):
    import importlib.util

    code, out, err = zgen("plan", "--model", "models/tied.py:build_model", "--config", "ds.json", "--seq-len", "16",
                          "--plot", "memory.png", cwd=project)
    if importlib.util.find_spec("matplotlib") is None:
        assert code == 2 and "needs matplotlib" in err and "pip install matplotlib" in err
    else:
        assert code == 0 and (project / "memory.png").read_bytes().startswith(b"\x89PNG")
    code, _, err = zgen("plan", "--model", "models/tied.py:build_model", "--config", "ds.json", "--seq-len", "16",
                        "--plot", "memory.pdf", cwd=project)
    assert code == 2 and "unknown picture type" in err


def test_pyproject_settings_alone_drive_emit_and_check_from_any_folder(zgen, project):
    (project / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.zgen]
        model = "models/tied.py:build_model"
        config = "ds.json"
        out = "gen/train_gen.py"
        world-size = 2
        seq-len = 16
    """))
    code, out, err = zgen("emit", cwd=project)
    assert code == 0, err
    text = (project / "gen" / "train_gen.py").read_text()
    assert 'MODEL_FILE = HERE / "../models/tied.py"' in text  # relative to the script's folder
    assert "# Regenerate:      zgen emit\n" in text
    (project / "sub").mkdir()
    assert zgen("emit", "--check", cwd=project / "sub")[0] == 0
