"""A progress bar shown on one rank (`pbar = tqdm(pbar) if rank == 0 else pbar`) hands out the same items on every
rank: a loop over it runs alike everywhere (DiT's `sample_ddp.py`)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SAMPLE = """
from tqdm import tqdm


def sample(model, vae, rank, iterations, z):
    pbar = range(iterations)
    pbar = tqdm(pbar) if rank == 0 else pbar
    for _ in pbar:
        samples = model(z)
        vae.decode(samples)
"""


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("sample.py", textwrap.dedent(source))]


def test_a_bar_shown_on_one_rank_walks_the_same_items():
    assert [code for code, _ in found(SAMPLE) if code.startswith("ZG2")] == []


def test_a_share_chosen_on_one_rank_walks_other_items():
    source = SAMPLE.replace("tqdm(pbar) if rank == 0 else pbar", "range(1) if rank == 0 else pbar")
    assert ("ZG201", 8) in found(source)
