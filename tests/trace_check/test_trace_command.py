"""`zgen check --trace` end to end through `zgen.cli.main`: one report, noqa, selection, exit codes."""

from __future__ import annotations

import json
import textwrap

from trace_helpers import HEADER, line_of

CONFIG = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}}

MODEL = '''
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        nn.init.normal_(self.embed.weight)  # static and trace
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))
        self.head = nn.Linear(8, 32)

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x)
        keep = self.keep(x)
        return F.cross_entropy(self.head(keep).flatten(0, 1), labels.flatten())

    def keep(self, x):
        return x * getattr(self.layers[0], "wei" + "ght").sum()  # trace only{noqa}


def build_model():
    print("building")  # the report on stdout stays parseable
    return LM()


def entry(model, batch):
    model.eval()
'''


def _case(tmp_path, noqa=""):
    (tmp_path / "case.py").write_text(HEADER + textwrap.dedent(MODEL).replace("{noqa}", noqa))
    (tmp_path / "ds.json").write_text(json.dumps(CONFIG))


ARGS = ["check", "--trace", "--model", "case.py:build_model", "--inputs", "case.py:inputs", "--entry",
        "case.py:entry", "--config", "ds.json", "--world-size", "2", "--seq-len", "16", "--output-format", "json",
        "--no-cache"]


def test_one_report_static_confirmed_and_trace_seen(zgen, tmp_path):
    _case(tmp_path)
    code, out, err = zgen(*ARGS, cwd=tmp_path)
    findings = json.loads(out)
    by_code = {(f["code"], f["location"]["row"]): f for f in findings}
    src = textwrap.dedent(MODEL)
    confirmed = by_code[("ZG103", line_of(src, "# static and trace"))]
    assert confirmed["message"].endswith("(confirmed by the trace)") and confirmed["source"] == "static+trace"
    seen = by_code[("ZG301", line_of(src, "# trace only"))]
    assert seen["message"].endswith("(seen by the trace)") and seen["source"] == "trace"
    assert seen["filename"].endswith("case.py")
    assert code == 1
    assert "building" in err


def test_noqa_and_selection_apply_to_trace_findings(zgen, tmp_path):
    _case(tmp_path, noqa="  # noqa: ZG301")
    code, out, _ = zgen(*ARGS, cwd=tmp_path)
    assert [f["code"] for f in json.loads(out)] == ["ZG103"]
    code, out, _ = zgen(*ARGS, "--ignore", "ZG103", cwd=tmp_path)
    assert json.loads(out) == [] and code == 0


def test_a_failing_factory_or_entry_is_one_line_naming_the_users_statement(zgen, tmp_path):
    (tmp_path / "case.py").write_text(HEADER + textwrap.dedent('''
    def build_model():
        return nn.Linear(8, 8).cuda()  # boom


    def fine():
        return nn.Linear(8, 8)


    def bad_entry(model, batch):
        raise ValueError("entry failed")  # entry
    '''))
    (tmp_path / "ds.json").write_text(json.dumps(CONFIG))
    base = ["check", "--trace", "--inputs", "case.py:inputs", "--config", "ds.json", "--no-cache"]
    code, out, err = zgen(*base, "--model", "case.py:build_model", cwd=tmp_path)
    assert code == 2 and "Traceback" not in err
    assert "the factory raised" in err and "case.py:" in err
    code, _, err = zgen(*base, "--model", "case.py:fine", "--loss", "case.py:fine", "--entry", "case.py:bad_entry",
                        cwd=tmp_path)
    assert code == 2 and "Traceback" not in err


def test_the_model_flags_need_trace(zgen, tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    code, _, err = zgen("check", "m.py", "--model", "m.py:f", "--no-cache", cwd=tmp_path)
    assert code == 2 and "--trace" in err


def test_the_trace_hook_runs_the_configured_model(zgen, tmp_path):
    import re
    import shlex
    from pathlib import Path

    hooks = (Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text()
    block = hooks[hooks.index("- id: zgen-check-trace"):]
    entry = re.search(r"^  entry: (.*)$", block, re.M).group(1)
    assert "torch" in re.search(r"^  additional_dependencies: (.*)$", block, re.M).group(1)
    _case(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.zgen]\nmodel = "case.py:build_model"\ninputs = "case.py:inputs"\n'
                                             'config = "ds.json"\nworld-size = 2\nseq-len = 8\n')
    code, out, _ = zgen(*shlex.split(entry)[1:], "--no-cache", cwd=tmp_path)
    assert code == 1 and "ZG301" in out and "(seen by the trace)" in out


def test_emit_refuses_on_what_the_trace_check_sees(zgen, tmp_path):
    (tmp_path / "case.py").write_text(HEADER + textwrap.dedent('''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.probe = nn.Linear(8, 8)
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels):
            x = self.embed(input_ids)
            if int(__import__("os").environ.get("RANK", "0")) == 0:  # rank
                x = self.probe(x)
            return F.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''))
    (tmp_path / "ds.json").write_text(json.dumps(CONFIG))
    code, out, err = zgen("emit", "--model", "case.py:build_model", "--config", "ds.json", "--world-size", "2",
                          "--seq-len", "8", "--out", "train.py", cwd=tmp_path)
    assert code == 1 and "emit refused" in err
    assert "ZG201" in out and "(seen by the trace)" in out
    assert not (tmp_path / "train.py").exists()
