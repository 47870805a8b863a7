"""`holds.may_have_module_arguments`: the `ast` trigger read before a constructor is parsed for its module arguments.

It may say True where `module_arguments` finds none (then the parse asks), never False where it finds one.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from zgen.model.program import holds
from zgen.model.program.holds import may_have_module_arguments, module_arguments
from zgen.model.program.index import ModelIndex
from zgen.model.program.skeleton import build_skeleton

_SOURCE = '''
import torch.nn as nn
from typing import Optional


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)


class Settings:
    pass


class Holder:
    def by_annotation(self, net: nn.Module): ...
    def by_optional_annotation(self, net: Optional[Block] = None): ...
    def by_string_annotation(self, net: "Block"): ...
    def by_name(self, encoder, dim=4): ...
    def string_default(self, decoder="mlp"): ...  # a setting to both; the trigger leaves it to the parse
    def by_kwonly_name(self, *, policy=None): ...
    def by_posonly_name(self, backbone, /): ...
    def by_use(self, thing):
        return sum(p.numel() for p in thing.parameters())
    def by_state_copy(self, target, source):
        target.load_state_dict(source.state_dict())
    def by_use_in_a_nested_function(self, thing):
        def count():
            return len(list(thing.modules()))
        return count()
    @staticmethod
    def decorated(critic): ...
    def plain(self, dim: int, depth=2, hidden_act="gelu", scale=1.0, sizes=(1, 2)): ...
    def plain_annotations(self, dim: int, name: Optional[str] = None, cfg: "Settings" = None): ...
    def plain_unannotated_unused(self, thing, other=None):
        return thing + 1
    def multi_line_annotation(
        self,
        net: Optional[  # the network
            Block
        ] = None,
    ): ...
    def list_of_modules(self, nets: list[nn.Module]): ...


def handed(model, x):
    return model(x)


def plain_function(x, y=3):
    return x + y
'''

_PLAIN = {"plain", "plain_annotations", "plain_unannotated_unused", "plain_function", "list_of_modules"}


def _spans(index: ModelIndex):
    skeleton = index.skeleton
    yield from skeleton.functions.values()
    for cls in skeleton.classes.values():
        yield from cls.methods.values()


def test_never_false_where_module_arguments_finds_one_and_false_for_plain_signatures():
    source = textwrap.dedent(_SOURCE)
    index = ModelIndex("m.py", source, build_skeleton(source))
    seen = set()
    for span in _spans(index):
        snippet = index.parse(span)
        assert snippet is not None and isinstance(snippet.node, cst.FunctionDef), span
        found = module_arguments(index, snippet.node)
        maybe = may_have_module_arguments(index, span)
        assert maybe or not found, (span.name, found)  # never False where there is one
        if span.name in _PLAIN:
            assert not found and not maybe, span.name  # and no parse asked for where there is surely none
        elif span.name.startswith(("by_", "decorated", "handed", "multi_line")):
            assert found, span.name  # (the cells hold what they say)
        elif span.name == "string_default":
            assert not found and maybe
        seen.add(span.name)
    assert _PLAIN <= seen


def test_a_span_the_tree_does_not_hold_is_left_to_the_parse():
    source = textwrap.dedent(_SOURCE)
    index = ModelIndex("m.py", source, build_skeleton(source))
    span = index.skeleton.classes["Holder"].methods["plain"]
    shifted = type(span)(span.name, span.start, span.end, span.indent + 4)
    assert may_have_module_arguments(index, shifted)


def test_the_text_words_cover_every_method_a_use_as_a_module_is_told_by():
    for name in (*holds.MODULE_ONLY_METHODS, "load_state_dict", "state_dict"):
        assert any(word in name for word in holds._USED_AS_MODULE_WORDS), name
