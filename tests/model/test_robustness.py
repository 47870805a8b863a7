"""The checker never raises on odd input, and positions stay right on odd text."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from zgen.model import check_source
from zgen.model.program.tree import parse_snippet, walk

_MODEL = """\
import torch.nn.functional as F
from torch import nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50000, 64)

    def forward(self, ids):
        return F.linear(self.embed(ids), self.embed.weight)
"""

_GNARLY = {
    "empty": "",
    "only-comments": "# nothing here\n",
    "syntax-error": "class A(nn.Module:\n    pass\n",
    "mixed-tabs": "class A:\n\tdef f(self):\n        return 1\n",
    "tabs-only": _MODEL.replace("    ", "\t"),
    "replacement-chars": "# \ufffd\ufffd decoded with errors='replace'\nx = '\ufffd'\n" + _MODEL,
    "null-byte": "x = 1\x00\n",
    "crlf": _MODEL.replace("\n", "\r\n"),
    "cr-only": _MODEL.replace("\n", "\r"),
    "form-feed": "\x0c\n" + _MODEL,
    "no-final-newline": _MODEL.rstrip("\n"),
    "deep-nesting": "x = " + "(" * 150 + "1" + ")" * 150 + "\n",
    "too-deep-nesting": "x = " + "[" * 1000 + "]" * 1000 + "\n",
    "long-expression": "x = " + " + ".join(["a"] * 20000) + "\n",
    "unicode-identifiers": "from torch import nn\nclass Modèle(nn.Module):\n    def forward(self, é):\n        return é\n",
    "nested-classes": "from torch import nn\nclass A(nn.Module):\n    class B(nn.Module):\n        def forward(self, x):\n            return x\n",
    "one-line-class": "from torch import nn\nclass A(nn.Module): pass\n",
    "decorated-async": "from torch import nn\nclass A(nn.Module):\n    @staticmethod\n    async def forward(x):\n        return x\n",
    "module-as-base-of-itself": "from torch import nn\nclass A(A, nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.a = A()\n    def forward(self, x):\n        return self.a(x)\n",
    "walrus-and-match": "def f(x):\n    match x:\n        case [a, *rest] if (n := len(rest)):\n            return n\n",
    "script-without-model": "import deepspeed\nengine, *_ = deepspeed.initialize(model=None)\nprint(engine)\n",
}


@pytest.mark.parametrize("name", sorted(_GNARLY))
def test_no_crash(name):
    findings = check_source(f"{name}.py", _GNARLY[name])
    for f in findings:
        assert f.line >= 1 and f.column >= 1 and (f.end_line, f.end_column) >= (f.line, f.column)


def test_deep_expression_that_python_compiles_is_still_checked():
    # CPython compiles a 900-operand sum; libcst recurses deeper than the default limit on it.
    source = _MODEL.replace("return F.linear", "y = " + " + ".join(["ids"] * 900) + "\n        return F.linear")
    assert [(f.code, f.line, f.column) for f in check_source("deep.py", source)] == [("ZG301", 11, 42)]


def test_syntax_error_is_one_zg901_at_the_error():
    findings = check_source("bad.py", "x = 1\nclass A(nn.Module:\n    pass\n")
    assert [(f.code, f.line) for f in findings] == [("ZG901", 2)]
    assert check_source("bad.py", "def f(:\n", enabled=frozenset({"ZG301"})) == []


@pytest.mark.parametrize("variant", ["lf", "crlf", "cr", "tabs", "non-ascii-before"])
def test_finding_positions_survive_line_endings_and_text(variant):
    source = {
        "lf": _MODEL,
        "crlf": _MODEL.replace("\n", "\r\n"),
        "cr": _MODEL.replace("\n", "\r"),
        "tabs": _MODEL.replace("    ", "\t"),
        "non-ascii-before": _MODEL.replace("return F.linear", "ü = 'ß€'; return F.linear"),
    }[variant]
    (finding,) = [f for f in check_source("lm.py", source) if f.code == "ZG301"]
    line = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")[finding.line - 1]
    assert line[finding.column - 1 : finding.end_column - 1] == "self.embed.weight"


def test_fast_positions_equal_libcst_positions():
    # The rules' position code must agree with libcst's PositionProvider on every node.
    text = _MODEL.split("class LM", 1)[1]
    text = (
        "    def forward(self, ids, x):\n"
        + "\n".join(
            [
                "        y = [a for a in (ids, x) if a is not None]  # comment",
                "        z = {'k': (x\n              + 1)}",
                "        if x is not None:\n            return F.linear(self.embed(ids), self.embed.weight)",
                "        return y, z",
            ]
        )
        + "\n"
    )
    snippet = parse_snippet(text, 40, 4)
    expected = MetadataWrapper(snippet.module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [n for n in walk(snippet.node) if isinstance(n, (cst.BaseExpression, cst.BaseSmallStatement))]
    for node in nodes:
        rng = expected[node]
        want = (
            rng.start.line + snippet.offset,
            rng.start.column + 1,
            rng.end.line + snippet.offset,
            rng.end.column + 1,
        )
        assert snippet.span(node) == want, cst.Module([]).code_for_node(node)


_HAZARD = """\
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4096, 4096)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.block.proj.weight.data.normal_()
"""


@pytest.mark.parametrize("collector_on", [True, False])
def test_check_leaves_the_cycle_collector_as_it_found_it(collector_on: bool) -> None:
    """The check pauses Python's cycle collector per file; the caller's setting comes back, even after a raise."""
    import gc

    was = gc.isenabled()
    try:
        gc.enable() if collector_on else gc.disable()
        assert check_source("m.py", _HAZARD)
        assert gc.isenabled() is collector_on
        with pytest.raises(TypeError):
            check_source("m.py", None)  # type: ignore[arg-type]
        assert gc.isenabled() is collector_on
    finally:
        gc.enable() if was else gc.disable()


def test_a_released_index_leaves_the_next_check_of_the_same_text_unchanged() -> None:
    first = check_source("m.py", _HAZARD)
    assert [f.code for f in first] == ["ZG103"]
    assert check_source("m.py", _HAZARD) == first


def test_parse_skips_validation_only_while_parsing():
    """A parse builds its nodes unvalidated (the parser's own output), and is the same tree libcst validates;
    nodes built afterwards are validated again, also after a parse that failed."""
    text = "def f(self, x):\n    return [y for y in x if y] + {'a': (1, *x)}[x] @ x\n"
    snippet = parse_snippet(text, 1, 0)
    assert snippet.module.deep_equals(cst.parse_module(text))
    assert parse_snippet("def f(:\n", 1, 0) is None
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
