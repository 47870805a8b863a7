"""A method's body read from the file's text is the body its parse holds (`ModelIndex.body_text`)."""

from __future__ import annotations

import textwrap

from zgen.model.program.index import ModelIndex
from zgen.model.program.skeleton import build_skeleton
from zgen.model.program.tree import code_of

SOURCE = '''
import functools
import torch.nn as nn


class Net(nn.Module):
    @functools.lru_cache(maxsize=None)  # a comment: with a colon
    def cached(self, sep=":", quote="\\\\", pick=lambda x: x[1:]) -> dict[str, int]:  # trailing: comment
        if sep:
            return {"a": 1}
        return {}

    def one_line(self, n): return [i for i in range(n)]

    def spread(
        self,
        x,  # the input: a tensor
        mode=\'\'\'a: b\'\'\',
        steps: "int" = 3,
    ):
        for _ in range(steps):
            x = self.step(x)
        return x


def helper(task, items={"k": "v:w"}):
    """Docstring: with a colon."""
    while task:
        task = items.get(task)
'''


def test_body_text_matches_the_parse_of_each_def():
    source = textwrap.dedent(SOURCE)
    index = ModelIndex("m.py", source, build_skeleton(source))
    methods = [index.classes["Net"].method(name) for name in ("cached", "one_line", "spread")]
    functions = [index.function_info("helper")]
    for info in (*methods, *functions):
        func = info.node
        assert func is not None
        assert index.body_text(func) == code_of(func.body, limit=20000), info.name
        assert index.body_text(func, limit=30) == code_of(func.body, limit=30), info.name


def test_a_def_the_file_did_not_parse_falls_back_to_the_parse():
    source = textwrap.dedent(SOURCE)
    other = ModelIndex("n.py", source, build_skeleton(source))
    index = ModelIndex("m.py", source, build_skeleton(source))
    func = other.classes["Net"].method("spread").node
    assert index.body_text(func) == code_of(func.body, limit=20000)
