"""`ws = [f(p) for p in ws]` walks the old `ws` (blind8 titans_pytorch neural_memory.py:387).

The fact: the iterable of a comprehension's first `for` is evaluated before the assignment rebinds the name, so
`weights = [repeat(p, ...) for p in weights]` walks the parameters `weights` held until then. Before, the walk
saw the new binding (the comprehension's own result) and lost the parameters.

Safe look-alike: the same rebinding over plain tensors.
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source

SOURCE = textwrap.dedent("""
    import torch
    from torch import nn


    class Memory(nn.Module):
        def __init__(self, model: nn.Module, heads=2):
            super().__init__()
            self.model = model
            params = dict(model.named_parameters())
            weights = [*params.values()]
            weights = [p.detach().clone() for p in weights]
            self.weights = nn.ParameterList([nn.Parameter(w) for w in weights])


    class Shapes(nn.Module):
        def __init__(self, sizes, heads=2):
            super().__init__()
            tensors = [torch.zeros(s) for s in sizes]
            tensors = [t.clone() for t in tensors]
            self.tensors = nn.ParameterList([nn.Parameter(t) for t in tensors])
""")


def _line(needle: str) -> int:
    return next(i for i, text in enumerate(SOURCE.splitlines(), 1) if needle in text)


def test_rebound_comprehension_walks_the_old_items() -> None:
    got = {(f.code, f.line) for f in check_source("m.py", SOURCE) if f.code.startswith("ZG1")}
    assert got == {("ZG109", _line("weights = [p.detach()"))}
