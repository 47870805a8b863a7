"""ZG201: a model called under two different rank tests is still a rank's own call.

`if is_main: model.generate(x)` ... `if is_main and step % 100 == 0: model.generate(y)`: both tests may fail on a rank,
so the calls are the main rank's alone. Only both outcomes of one test (`if main:` / `else:`, `if not main:` ... `if
main:`) make a model call on every rank; a collective under two different rank tests is "main process first" and
stays clean. Horovod's and torch_xla's rank calls are the rank too.
"""

from __future__ import annotations

from package_check import found_in_package

TWO_TESTS = """
import torch
import torch.distributed as dist


def train(model, loader, opt, is_main):
    for step, batch in enumerate(loader):
        model(batch).mean().backward()
        opt.step()
        if is_main:
            model.generate(batch)
        if dist.get_rank() == 0 and step % 100 == 0:
            model.generate(batch)
"""


def test_two_different_rank_tests_each_gate_the_model(tmp_path):
    found = found_in_package(tmp_path, {"loop.py": TWO_TESTS}, "loop.py", prefix="ZG201")
    assert ("ZG201", 10) in found
    assert ("ZG201", 12) in found


EVERY_RANK = """
import torch
import torch.distributed as dist


def train(model, loader, args):
    if args.local_rank not in [-1, 0]:
        dist.barrier()
    data = list(loader)
    if args.local_rank == 0:
        dist.barrier()
    for batch in data:
        if dist.get_rank() == 0:
            out = model(batch)
        else:
            out = model(batch[:1])
        is_main = dist.get_rank() == 0
        if not is_main:
            model.eval()
            model(batch)
        if is_main:
            model(batch)
"""


def test_both_outcomes_of_one_test_and_main_process_first_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"loop.py": EVERY_RANK}, "loop.py", prefix="ZG201") == []


OTHER_LIBRARIES = """
import torch
import horovod.torch as hvd
import torch_xla.core.xla_model as xm


def evaluate(model, loader):
    for batch in loader:
        model(batch)
        if hvd.rank() == 0:
            model(batch)
        if xm.get_ordinal() == 0:
            model(batch)
"""


def test_horovod_and_xla_ranks(tmp_path):
    found = found_in_package(tmp_path, {"loop.py": OTHER_LIBRARIES}, "loop.py", prefix="ZG201")
    assert ("ZG201", 10) in found
    assert ("ZG201", 12) in found
