"""A progress bar shown on rank 0 only (`tqdm(loader, disable=args.rank != 0)`) hands out the loader's batches on
every rank: how it shows is no decision about which batches a rank runs (no ZG201). A call the rank gates inside
that loop still is."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = """
from tqdm import tqdm


def evaluate(model, loader, args):
    out = []
    for batch in {iterable}:
        {body}
    return out
"""


def codes(iterable: str, body: str = "out.append(model(batch))") -> list[str]:
    found = check_source("m.py", textwrap.dedent(SOURCE.format(iterable=iterable, body=body)))
    return [f.code for f in found if f.code.startswith("ZG2")]


def test_a_bar_hidden_on_other_ranks_hands_out_every_ranks_batches():
    body = "for i in range(len(batch)):\n            out.append(model(batch[i]))"
    # (the per-sample loop runs as many times as this rank's batch holds samples: data, ZG204, not the rank)
    assert codes('tqdm(loader, desc="eval", disable=args.rank != 0, position=args.rank)', body) == ["ZG204"]


def test_a_call_the_rank_gates_under_the_same_bar_is_still_a_finding():
    body = "if args.rank == 0: out.append(model(batch))"
    assert codes('tqdm(loader, desc="eval", disable=args.rank != 0)', body) == ["ZG201"]
