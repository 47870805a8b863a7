"""`zgen emit --loss` on models that return logits or features, end to end on CPU.

No model here has a hand-written `--init`: the runtime initialises each with
its own code (`reset_parameters()`, a parent's `init_weights()`). The emitted
script must give the same per-step losses at world sizes 1 and 2, and the
two-tower model's gathered contrastive loss at world size 2 must follow plain
single-process training on the whole global batch.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "examples" / "models"

CONFIG = {
    "train_batch_size": 4,
    "train_micro_batch_size_per_gpu": 2,  # world 1: accumulation 2; world 2: accumulation 1
    "gradient_clipping": 1.0,
    "steps_per_print": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}},
    "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 100},
}
STEPS = 3
SEED = 1337  # the emitted script's default --seed


def _emit(d: Path, model: str, *extra: str) -> int:
    from zgen.cli import main

    (d / "ds_config.json").write_text(json.dumps(CONFIG))
    cwd = Path.cwd()
    os.chdir(d)
    try:
        return main(["emit", "--model", f"{MODELS}/{model}.py:build_model", "--config", "ds_config.json",
                     "--world-size", "2", "--seq-len", "8", "--out", "train_gen.py", *extra])
    finally:
        os.chdir(cwd)


def _command(world: int, log: str) -> list[str]:
    launcher = [sys.executable] if world == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}"]
    return [*launcher, "train_gen.py", "--device", "cpu", "--steps", str(STEPS), "--checkpoint-every", "0",
            "--log-jsonl", log]


def _losses(d: Path, log: str) -> list[float]:
    return [json.loads(line)["loss"] for line in (d / log).read_text().splitlines()]


def test_emit_writes_the_loss_function_into_the_script(tmp_path):
    loss = f"{MODELS}/two_tower.py:clip_loss"
    assert _emit(tmp_path, "two_tower", "--inputs", f"{MODELS}/two_tower.py:make_inputs", "--loss", loss) == 0
    text = (tmp_path / "train_gen.py").read_text()
    assert 'LOSS_FUNCTION = "clip_loss"' in text and "loss = loss_fn(out, kwargs if kwargs else inputs)" in text
    assert "--loss" in text.split('"""')[0]  # the regenerate command keeps it


def test_features_without_loss_is_refused_with_a_hint(tmp_path, capsys):
    code = _emit(tmp_path, "two_tower", "--inputs", f"{MODELS}/two_tower.py:make_inputs")
    assert code == 2
    err = capsys.readouterr().err
    assert "returned a `Features`" in err and "--loss" in err


@pytest.mark.slow
@pytest.mark.parametrize("model, extra", [
    ("patch_vit", ["--inputs", f"{MODELS}/patch_vit.py:make_inputs", "--loss", f"{MODELS}/patch_vit.py:cross_entropy"]),
    ("nested_layers", []),
])
def test_world_sizes_one_and_two_give_the_same_losses(tmp_path, model, extra, run_together):
    assert _emit(tmp_path, model, *extra) == 0
    run_together(tmp_path, (_command(1, "w1.jsonl"), "w1.out"), (_command(2, "w2.jsonl"), "w2.out"))
    one, two = _losses(tmp_path, "w1.jsonl"), _losses(tmp_path, "w2.jsonl")
    assert len(one) == len(two) == STEPS
    assert max(abs(a - b) for a, b in zip(one, two)) <= 1e-4, (one, two)


@pytest.mark.slow
def test_gathered_contrastive_loss_at_world_size_two_follows_plain_training(tmp_path, run_together):
    sys.path.insert(0, str(MODELS))
    try:
        import two_tower as T
    finally:
        sys.path.remove(str(MODELS))
    import zgen.runtime as zr

    assert _emit(tmp_path, "two_tower", "--inputs", f"{MODELS}/two_tower.py:make_inputs",
                 "--loss", f"{MODELS}/two_tower.py:clip_loss") == 0
    run_together(tmp_path, (_command(2, "w2.jsonl"), "w2.out"))
    losses = _losses(tmp_path, "w2.jsonl")

    model = T.build_model()
    torch.manual_seed(SEED)  # the script seeds, then the runtime initialises: apply_init draws the same numbers
    zr.apply_init(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01)
    plain = []
    for step in range(STEPS):
        batch = T.make_inputs(CONFIG["train_batch_size"], 8, torch.Generator().manual_seed(SEED * 1_000_003 + step))
        loss = T.clip_loss(model(**batch), batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        plain.append(float(loss.detach()))
    assert max(abs(a - b) for a, b in zip(losses, plain)) <= 1e-4, (losses, plain)
