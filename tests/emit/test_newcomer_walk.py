"""A newcomer's path with a Hugging Face-style config: check, then emit, then run, with one truth throughout.

The config is HF Trainer's template (`"auto"` nearly everywhere, `bf16.enabled: "auto"`, a WarmupLR
scheduler whose step counts are "auto"); the model is a tiny HF Llama built in code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[2]
FACTORY = '''
import transformers


def build_model():
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(cfg)
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "hf_llama.py").write_text(textwrap.dedent(FACTORY))
    shutil.copy(REPO / "examples/configs/hf_zero3_auto.json", tmp_path / "ds_config.json")
    return tmp_path


EMIT = ["emit", "--model", "hf_llama.py:build_model", "--config", "ds_config.json", "--world-size", "2",
        "--seq-len", "16", "--out", "train_gen.py"]


def test_check_shows_how_the_zgen_reader_fills_every_auto(zgen, project):
    code, out, _ = zgen("check", "ds_config.json", "--consumer", "zgen", "--world-size", "2", "--show-resolved",
                        cwd=project)
    assert code == 0, out
    assert "scheduler.params.warmup_num_steps" in out and "from its `--warmup-steps` (default 0" in out
    # The bucket sizes follow the model's hidden size, which the config-only check cannot know: it says so.
    line = next(x for x in out.splitlines() if "stage3_prefetch_bucket_size" in x)
    assert "is not known to this check" in line and "`zgen plan`/`zgen emit` read it from the model" in line


def test_emit_fills_the_run_length_from_flags_and_says_what_auto_precision_became(zgen, project):
    code, out, err = zgen(*EMIT, "--max-steps", "40", "--warmup-steps", "5", cwd=project)
    assert code == 0, out + err
    assert out.startswith('precision: "auto" in the config -> bf16 on a GPU that supports it, else fp32')
    script = (project / "train_gen.py").read_text()
    assert '#   precision: "auto" in the config -> bf16 on a GPU that supports it' in script
    assert 'precision = "auto"' in script and "torch.cuda.is_bf16_supported()" in script
    params = next(x for x in script.splitlines() if x.startswith("scheduler_params = "))
    assert '"warmup_num_steps": 5' in params and "not set" not in params and '"auto" solved for' in params


def test_values_nothing_fills_are_named_all_at_once(zgen, project):
    cfg = json.loads((project / "ds_config.json").read_text())
    cfg["optimizer"] = {"type": "SGD", "params": {"lr": 0.1, "momentum": "auto", "dampening": "auto"}}
    (project / "ds_config.json").write_text(json.dumps(cfg))
    code, out, err = zgen(*EMIT, cwd=project)
    assert code == 1 and "emit refused" in err
    assert "`optimizer.params.momentum`" in out and "`optimizer.params.dampening`" in out


def test_precision_flag_fixes_an_auto_precision(zgen, project):
    code, out, err = zgen(*EMIT, "--precision", "bf16", cwd=project)
    assert code == 0, out + err
    script = (project / "train_gen.py").read_text()
    assert 'precision = "bf16"' in script and "--precision bf16" in script


def test_gpu_mem_without_a_unit_is_an_error_naming_the_units(zgen, project):
    code, _, err = zgen("check", "ds_config.json", "--gpu-mem", "80", cwd=project)
    assert code == 2 and "`80` has no unit" in err and "GiB" in err


def test_a_syntax_error_in_the_model_names_the_users_line(zgen, project):
    (project / "hf_llama.py").write_text("def build_model(:\n    pass\n")
    code, _, err = zgen(*EMIT, cwd=project)
    assert code == 2 and "hf_llama.py:1:" in err and "frozen" not in err


def test_a_model_file_with_literal_shapes_gets_a_memory_estimate(zgen, project):
    (project / "net.py").write_text(textwrap.dedent('''
        from torch import nn


        class Net(nn.Module):
            def __init__(self, d=64, n=4):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(d, 4 * d) for _ in range(n)])
    '''))
    code, out, _ = zgen("check", "net.py", "ds_config.json", "--world-size", "2", "--show-memory", cwd=project)
    assert "memory per GPU" in out and "no memory estimate" not in out


@pytest.mark.slow
def test_the_emitted_script_trains_on_two_cpu_ranks(zgen, project):
    assert zgen(*EMIT, "--max-steps", "2", cwd=project)[0] == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          "train_gen.py", "--device", "cpu", "--steps", "2", "--checkpoint-every", "0"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "fp32" in run.stdout and "step 2/2" in run.stdout
