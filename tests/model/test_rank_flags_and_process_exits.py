"""An evaluator that holds the trainer's models (`self.decoder = trainer.decoder`, switched with `.eval()`), hands a
flag computed from the rank to the method that generates, and runs the model through a local bound either way to the
same model; and a training loop leaving the process (`sys.exit(1)`) on this rank's own non-finite loss."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found

EVALUATOR = '''
class Evaluator:
    def __init__(self, trainer, params):
        self.params = params
        self.decoder = trainer.decoder

    def run_all_evals(self, data):
        params = self.params
        for split in ("valid", "test"):
            eval_bleu = params.eval_bleu and {flag}
            self.evaluate_mt(data[split], eval_bleu)

    def evaluate_mt(self, batches, eval_bleu):
        self.decoder.eval()
        decoder = self.decoder.module if self.params.multi_gpu else self.decoder
        for x in batches:
            if eval_bleu:
                decoder.generate(x, max_len=20)
'''


def test_a_rank_flag_handed_to_the_method_that_runs_the_held_model(tmp_path: Path) -> None:
    path = tmp_path / "evaluator.py"
    path.write_text(EVALUATOR.format(flag="params.is_master"))
    assert found(path, "ZG2") == [("ZG201", 17)]
    path.write_text(EVALUATOR.format(flag="params.beam_size == 1"))  # a setting: the same on every rank
    assert found(path, "ZG2") == []


LOOP = '''
import math
import sys

import torch.distributed as dist


def train_one_epoch(model, loader, optimizer):
    for x, labels in loader:
        loss = model(x, labels)
        {agree}loss_value = loss.item()
        if not math.isfinite(loss_value):
            print("Loss is {{}}, stopping training".format(loss_value))
            sys.exit(1)
        loss.backward()
        optimizer.step()
'''


def test_leaving_the_process_on_this_ranks_own_loss(tmp_path: Path) -> None:
    path = tmp_path / "engine.py"
    path.write_text(LOOP.format(agree=""))
    assert found(path, "ZG2") == [("ZG204", 12)]
    path.write_text(LOOP.format(agree="dist.all_reduce(loss)\n        "))  # every rank tests the same number
    assert found(path, "ZG2") == []


REDUCED = '''
import math
import sys

import torch
import torch.distributed as dist


def reduce_dict(losses):
    names = sorted(losses.keys())
    values = torch.stack([losses[k] for k in names])
    dist.all_reduce(values)
    return {k: v for k, v in zip(names, values / dist.get_world_size())}


def train_one_epoch(model, criterion, loader, optimizer):
    weight_dict = criterion.weight_dict
    for x, targets in loader:
        loss_dict = criterion(model(x), targets)
        losses = sum(loss_dict[k] * weight_dict[k] for k in loss_dict)
        loss_dict_reduced = reduce_dict(loss_dict)
        scaled = {k: v * weight_dict[k] for k, v in loss_dict_reduced.items() if k in weight_dict}
        loss_value = sum(scaled.values()).item()
        if not math.isfinite(loss_value):
            sys.exit(1)
        losses.backward()
        optimizer.step()
'''


def test_a_loss_read_off_what_every_rank_reduced_is_the_same_on_every_rank(tmp_path: Path) -> None:
    path = tmp_path / "engine.py"
    path.write_text(REDUCED)  # (DETR's engine: the exit tests the all-reduced losses)
    assert found(path, "ZG2") == []
    path.write_text(REDUCED.replace("sum(scaled.values()).item()", "losses.item()"))
    assert found(path, "ZG2") == [("ZG204", 24)]
