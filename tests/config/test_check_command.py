"""`zgen check` on configs through `main`: what is printed next to the findings, and the new flags."""

from __future__ import annotations


def test_valid_world_sizes_are_printed_only_for_configs_without_errors(zgen, tmp_path):
    (tmp_path / "good.json").write_text('{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 1}')
    (tmp_path / "bad.json").write_text('{"train_batch_size": 16, "fp16": {"enabled": true}, "bf16": {"enabled": true}}')
    code, out, _ = zgen("check", "good.json", "bad.json", cwd=tmp_path)
    assert code == 1
    assert "good.json: valid for world sizes: 1, 2, 4, 8, 16" in out
    assert "bad.json: valid for world sizes" not in out
    assert "bad.json:" in out  # the error itself is reported


_RAW_AUTO = '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3}}'


def test_consumer_flag_decides_what_auto_means(zgen, tmp_path):
    (tmp_path / "ds.json").write_text(_RAW_AUTO)
    assert zgen("check", "ds.json", cwd=tmp_path)[0] == 0
    code, out, _ = zgen("check", "ds.json", "--consumer", "deepspeed", cwd=tmp_path)
    assert code == 1 and "ZC020" in out and "TypeError" in out


def test_consumer_is_inferred_from_the_training_script_and_shown(zgen, tmp_path):
    (tmp_path / "ds.json").write_text(_RAW_AUTO)
    (tmp_path / "train.py").write_text("import deepspeed\n\nengine, *_ = deepspeed.initialize(model=None, config='ds.json')\n")
    code, out, _ = zgen("check", "ds.json", "train.py", "--show-resolved", cwd=tmp_path)
    assert code == 1 and "ZC020" in out
    (tmp_path / "train.py").write_text("from transformers import Trainer, TrainingArguments\nimport deepspeed\n")
    code, out, _ = zgen("check", "ds.json", "train.py", "--show-resolved", cwd=tmp_path)
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("consumer"))
    assert '"hf"' in line and "train.py:1 imports `transformers.Trainer`" in line


def test_consumer_without_evidence_is_hf_and_says_why(zgen, tmp_path):
    (tmp_path / "ds.json").write_text(_RAW_AUTO)
    code, out, _ = zgen("check", "ds.json", "--show-resolved", cwd=tmp_path)
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("consumer"))
    assert '"hf"' in line and "no training script" in line
