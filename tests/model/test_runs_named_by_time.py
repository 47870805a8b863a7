"""A time written as text names a run (a log directory, a checkpoint), and a path handed to a checkpoint save goes to
a file: neither is state of the object it reaches (taming's `main.py`: a trainer built with a timestamped log
directory, saved on rank 0 in a signal handler, then tested for `trainer.interrupted` on every rank)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

MAIN = """
import datetime
import os
import time

from pytorch_lightning import Trainer


def main(opt, model, data):
    now = datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S")
    logdir = os.path.join("logs", now)
    trainer = Trainer.from_argparse_args(opt, default_root_dir=logdir)

    def melk(*args, **kwargs):
        if trainer.global_rank == 0:
            ckpt_path = os.path.join(logdir, "last.ckpt")
            trainer.save_checkpoint(ckpt_path)

    try:
        trainer.fit(model, data)
    except Exception:
        melk()
        raise
    if not trainer.interrupted:
        trainer.test(model, data)
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("main.py", textwrap.dedent(source))]


def test_a_trainer_named_by_a_timestamp_and_saved_on_rank_zero_decides_alike_on_every_rank():
    assert [(code, line) for code, line in found(MAIN) if line == 24] == []


def test_a_trainer_handed_a_value_of_rank_zero_alone_decides_by_rank():
    source = MAIN.replace("trainer.save_checkpoint(ckpt_path)", "trainer.resume_from(ckpt_path)")
    assert ("ZG201", 24) in found(source)


def test_a_trainer_handed_the_time_itself_decides_by_the_clock():
    source = MAIN.replace('datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S")', "str(time.time())")
    assert ("ZG204", 24) in found(source)
