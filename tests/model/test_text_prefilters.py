"""The text pre-filters' faster searches give what the plain searches give (`program/trigger.py`)."""

from __future__ import annotations

import re

from zgen.model.analysis.taint import _EXTENT_LOCAL, _EXTENT_READ, _extent_locals
from zgen.model.program.trigger import Trigger, line_matches
from zgen.model.rules.zg201_rank_gated_call import _TRIGGER as RANK_TRIGGER

TEXTS = [
    "def f(self, x):\n    n = x.shape[0]\n    if n < 2:\n        return x\n",
    "    a, b = x.size(0), len(y)\r\n\tc\t= len(z)\n    d == q.shape\n    e = f(x.shape) = 3\n    g = 1",
    "x.shape\nb = len(y)  # len(\n   = x.shape\na\tb = x.shape\nmylen(x)\nk = t.shape; m = u.shape",
    "",
    "no extent here\n",
]


def test_line_matches_is_finditer():
    for text in TEXTS:
        assert [m.group(0) for m in line_matches(_EXTENT_LOCAL, text, _EXTENT_READ)] == [
            m.group(0) for m in _EXTENT_LOCAL.finditer(text)
        ]
        plain = {w for m in _EXTENT_LOCAL.finditer(text) for w in re.findall(r"\w+", m.group(1))}
        assert _extent_locals(text) == plain


def test_line_matches_with_a_word():
    pattern = re.compile(r"^[ \t]*(\w+)[ \t]*=[^\n]*\bself\.\w", re.M)
    text = "a = self.x\n  b = 1 if self.y else 2\nself.z = 3\nc = other.self.w\n  d=self.q; e = self.r"
    assert [m.group(1) for m in line_matches(pattern, text, "self.")] == pattern.findall(text)


def test_rank_trigger_by_line_is_the_whole_text_search():
    plain = re.compile(RANK_TRIGGER.pattern.pattern)
    texts = [
        "if dist.get_rank() == 0:\n    save()\n",
        "remaining = domain\nmain_input = 1\n",  # literals inside other words only
        "x = 1\nif self.is_main_process:\n",
        "env = os.environ['LOCAL_RANK']\n",
        "low_rank = 4\nrank = r\n",
        "def f(rank):\n    return rank\n",
        "nothing",
    ]
    for text in texts:
        expected = any(word in text for word in RANK_TRIGGER.literals) and plain.search(text) is not None
        assert RANK_TRIGGER.search(text) == expected, text


def test_a_literal_holding_another_is_not_looked_for_again():
    trigger = Trigger("get_rank", "rank", "RANK", "LOCAL_RANK", "rank")
    assert trigger._needles == ("rank", "RANK")
    assert trigger.literals == ("get_rank", "rank", "RANK", "LOCAL_RANK", "rank")  # (as given: callers read them)
    assert trigger.search("x = LOCAL_RANK") and not trigger.search("x = Rank")
