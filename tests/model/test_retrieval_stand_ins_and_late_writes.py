"""Code from an entity-linking library the checker misread: a training function clipping the model a ranker it built
holds (`model = reranker.model`), a run's settings written after the training loop taken as deciding the loop's
evaluation, and a pre-computed candidate encoding returned early in place of the encoder's output."""

from __future__ import annotations

from pathlib import Path

from tests.model.package_check import found_in_directory, found_in_package

RANKER = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.ctx = nn.Linear(8, 8)
        self.cand = nn.Linear(8, 8)

    def forward(self, ctx_ids, cand_ids):
        return self.ctx(ctx_ids), self.cand(cand_ids)


class Ranker(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.params = params
        self.build_model()

    def build_model(self):
        self.model = Encoder()

    def forward(self, ctx_ids, cand_ids):
        ctx, cands = self.model(ctx_ids, cand_ids)
        scores = ctx.mm(cands.t())
        return scores.logsumexp(-1).mean(), scores
"""

TRAIN = """
import os

import numpy as np
import torch

from pkg.ranker import Ranker


def evaluate(ranker, loader, params):
    ranker.model.eval()
    results = {}
    total = 0.0
    for batch in loader:
        with torch.no_grad():
            loss, scores = ranker(batch[0], batch[1])
        total += (scores.argmax(-1) == 0).float().mean().item()
    results["accuracy"] = total / params["eval_batches"]
    return results


def main(params, loader):
    ranker = Ranker(params)
    model = ranker.model
    params["train_batch_size"] = params["train_batch_size"] // params["grad_acc"]
    grad_acc = params["grad_acc"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    best_score, best_epoch = -1, -1
    for epoch in range(params["epochs"]):
        results = None
        tr_loss = 0
        for step, batch in enumerate(loader):
            loss, _ = ranker(batch[0], batch[1])
            tr_loss += loss.item()
            if (step + 1) % (params["print_interval"] * grad_acc) == 0:
                print(tr_loss / params["print_interval"])
                tr_loss = 0
            loss.backward()
            if (step + 1) % grad_acc == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), params["max_grad_norm"])
                optimizer.step()
            if (step + 1) % (params["eval_interval"] * grad_acc) == 0:
                evaluate(ranker, loader, params)
        results = evaluate(ranker, loader, params)
        scores = [best_score, results["accuracy"]]
        best_score = scores[np.argmax(scores)]
        best_epoch = [best_epoch, epoch][np.argmax(scores)]
    params["path_to_model"] = os.path.join(params["output"], "epoch_{}".format(best_epoch))


if __name__ == "__main__":
    main({"epochs": 2, "eval_interval": 10, "train_batch_size": 8, "grad_acc": 1, "max_grad_norm": 1.0}, [])
"""


def test_a_clip_of_the_model_a_built_ranker_holds_is_flagged(tmp_path: Path) -> None:
    findings = found_in_package(tmp_path, {"ranker.py": RANKER, "train.py": TRAIN}, "train.py")
    clip = TRAIN.splitlines().index(
        '                torch.nn.utils.clip_grad_norm_(model.parameters(), params["max_grad_norm"])') + 1
    assert ("ZG107", clip) in findings


def test_a_setting_written_after_the_loop_does_not_decide_the_evaluation_in_it(tmp_path: Path) -> None:
    # `params["path_to_model"]` holds the best epoch only after the loop: the interval read in it is the run's setting
    findings = found_in_package(tmp_path, {"ranker.py": RANKER, "train.py": TRAIN}, "train.py", prefix="ZG2")
    assert findings == []


def test_the_same_setting_written_inside_the_loop_still_decides(tmp_path: Path) -> None:
    # written from the rank's own accuracy in the epoch loop, the setting decides the next epoch's evaluations
    inside = TRAIN.replace(
        '        best_epoch = [best_epoch, epoch][np.argmax(scores)]\n',
        '        best_epoch = [best_epoch, epoch][np.argmax(scores)]\n'
        '        params["eval_interval"] = 1 + best_epoch\n',
    )
    findings = found_in_package(tmp_path, {"ranker.py": RANKER, "train.py": inside}, "train.py", prefix="ZG2")
    assert [code for code, _line in findings] == ["ZG203"]


BIENCODER = """
from torch import nn


class BiEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.context_encoder = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
        self.cand_encoder = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))

    def forward(self, ctx_ids, cand_ids):
        return self.context_encoder(ctx_ids), self.cand_encoder(cand_ids)


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = BiEncoder()

    def score_candidate(self, text_vecs, cand_vecs, cand_encs=None):
        embedding_ctxt, _ = self.model(text_vecs, text_vecs)
        if cand_encs is not None:
            return embedding_ctxt.mm(cand_encs.t())
        _, embedding_cands = self.model(cand_vecs, cand_vecs)
        return embedding_ctxt.mm(embedding_cands.t())

    def forward(self, text_vecs, cand_vecs):
        return self.score_candidate(text_vecs, cand_vecs)
"""


def test_an_encoding_returned_early_in_place_of_the_encoders_output_is_flagged(tmp_path: Path) -> None:
    early = BIENCODER.splitlines().index("        if cand_encs is not None:") + 1
    assert ("ZG205", early) in found_in_directory(tmp_path, {"biencoder.py": BIENCODER}, "biencoder.py", "ZG2")


def test_an_early_return_of_something_else_is_not_a_stand_in(tmp_path: Path) -> None:
    # the early return hands back the context scores alone: no expression after it reads the encoder's output alike
    other = BIENCODER.replace("return embedding_ctxt.mm(cand_encs.t())", "return embedding_ctxt.sum(-1) * cand_encs")
    assert found_in_directory(tmp_path, {"biencoder.py": other}, "biencoder.py", "ZG205") == []
