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
