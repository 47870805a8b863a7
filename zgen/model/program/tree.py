"""libcst pieces of a file and the small helpers rules use to read them.

A `Snippet` is one statement (a method, a function, a class, or the whole
file) parsed on its own with libcst, with the offset that maps its lines back
to the file. Positions are computed only for snippets a finding is reported
in, and only once.

`walk` is a plain field-based pre-order traversal. It is several times faster
than libcst's visitor machinery, which rebuilds every node it visits.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import importlib.util
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any

from zgen.kept_code import kept_dataclass_code

from . import known


class _KeptCodeLoader:
    """A package's loader whose import compiles its dataclasses' methods from kept code (`zgen.kept_code`).

    (The loader protocol by its methods, not `importlib.abc.Loader`: that import loads `importlib.resources` and
    `tempfile`, 1% of a one-file check.)"""

    def __init__(self, loader: Any, name: str) -> None:
        self.loader = loader
        self.name = name

    def create_module(self, spec):  # noqa: ANN001, ANN201  (the loader protocol's signature)
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The spec marked as loading, then loaded, as importlib's own loading does: an import of a module whose
        # spec lacks `_initializing` looks it up, fails and clears an AttributeError. libcst's parser imports
        # `libcst` once for every node it builds (a seventh of a parse's instructions went there).
        spec = module.__spec__
        spec._initializing = True
        try:
            with kept_dataclass_code(self.name):
                self.loader.exec_module(module)
        finally:
            spec._initializing = False

    def __getattr__(self, attr: str):  # noqa: ANN204  (resource readers and the rest: the package's own loader)
        return getattr(self.loader, attr)


def _lazy(name: str) -> ModuleType:
    """The module `name`, executed on first attribute access (importlib's `LazyLoader`), or already loaded."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(_KeptCodeLoader(spec.loader, name))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# libcst, loaded when code is first parsed or a node inspected: importing it costs about 0.2 s (0.1 s with its
# dataclasses' methods compiled in an earlier run), which a file with nothing to parse (and a check of configs
# alone) never pays. Every module of the model checker takes `cst` from here; `import libcst` itself would load
# it at once.
if TYPE_CHECKING:
    import libcst as cst
else:
    cst = _lazy("libcst")


def load_libcst() -> None:
    """Load libcst now (before worker processes fork, so that each starts with it, or before the first parse).

    What is alive once it has loaded (libcst's and zgen's modules, classes and functions: tens of thousands of
    objects that live as long as the process) is moved out of the cycle collector's reach (`gc.freeze`): the
    collection after each checked file would otherwise walk all of it again (about 3% of a one-file check).
    """
    if type(cst) is not ModuleType:  # still the lazy module: this call loads it
        cst.CSTNode  # noqa: B018  (the first attribute read runs the lazy import)
        gc.freeze()

__all__ = [
    "cst",
    "parameter_names",
    "unwrapped_argument",
    "union_members",
    "load_libcst",
    "Snippet",
    "parse_snippet",
    "code_of",
    "walk",
    "walk_own",
    "children",
    "forget_children",
    "dotted",
    "call_name",
    "access_path",
    "positional_parameters",
    "Path",
    "const_str",
    "parameter_for",
    "choice_leaves",
]

# Fields that never hold an expression or statement worth visiting.
_SKIP_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "dot",
        "equal",
        "colon",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "leading_lines",
        "lines_after_decorators",
        "trailing_whitespace",
        "header",
        "footer",
        "indent",
        "asynchronous",
        "star",
        "newline",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(kind)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[kind] = names
    return names


def _is_node_type(kind: type) -> bool:
    answer = _NODE_TYPES.get(kind)
    if answer is None:
        answer = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return answer


_NODE_TYPES: dict[type, bool] = {}


# The children of each node asked for, by `id` (with the node, so the id cannot be another node's while kept): the
# analyses walk the same method's nodes several times (about four asks per node); `forget_children` empties it
# once a file is done (`model.check`), and it never grows past `_KIDS_MAX` nodes.
_KIDS: dict[int, tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = {}
_KIDS_MAX = 2_000_000


def forget_children() -> None:
    """Drop the kept children and code texts (and with them the nodes they keep alive)."""
    _KIDS.clear()
    _CODE.clear()


def children(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    """The direct child nodes of `node` that can hold code, in field order."""
    kept = _KIDS.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        names = _fields(kind)
    kids = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                is_node = _NODE_TYPES.get(type(item))
                if is_node is None:
                    is_node = _is_node_type(type(item))
                if is_node:
                    kids.append(item)
        else:
            is_node = _NODE_TYPES.get(kind)
            if is_node is None:
                is_node = _is_node_type(kind)
            if is_node:
                kids.append(value)
    if len(_KIDS) >= _KIDS_MAX:
        _KIDS.clear()
    found = _KIDS[id(node)] = (node, tuple(kids))
    return found[1]


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and all its descendants, pre-order."""
    stack = [node]
    kept_children = _KIDS.get  # (the kept children looked up here: a call of `children` per node cost more)
    while stack:
        current = stack.pop()
        yield current
        kept = kept_children(id(current))
        kids = kept[1] if kept is not None and kept[0] is current else children(current)
        if kids:
            stack.extend(reversed(kids))


def walk_own(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and its descendants, pre-order, but not inside the functions and classes it defines: what runs when
    `node` does (a nested `def`'s `return` is that function's)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(reversed(children(current)))


@dataclasses.dataclass(eq=False)
class Snippet:
    """One parsed statement of a file; `offset` is added to its line numbers."""

    module: cst.Module
    node: cst.CSTNode
    offset: int
    first: int = 1  # the snippet line of the statement itself (2 under a dummy class header)
    _positions: Any = None
    text: str = ""  # the source parsed: what `module.code` generates again, node by node

    @property
    def code(self) -> str:
        """The snippet's source (`module.code`, without generating it again)."""
        return self.text or self.module.code

    @property
    def function(self) -> cst.FunctionDef | None:
        """The parsed statement when it is a `def` (a method or function), else None."""
        return self.node if isinstance(self.node, cst.FunctionDef) else None

    def span(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column) of `node` in the file, 1-based, end exclusive."""
        self.locate([node])
        fallback = ((self.first, 0), (self.first, 0))
        (line, column), (end_line, end_column) = self._positions.get(id(node), fallback)
        return line + self.offset, column + 1, end_line + self.offset, end_column + 1

    def locate(self, nodes: list[cst.CSTNode]) -> None:
        """Compute the positions of `nodes` with one code generation pass, stopping once all are seen."""
        if self._positions is None:
            self._positions = {}
        targets = {id(n) for n in nodes} - self._positions.keys()
        if not targets:
            return
        state = _position_state()(default_indent=self.module.default_indent, default_newline=self.module.default_newline)
        state.targets = targets
        try:
            with deep_recursion():
                self.module._codegen(state)
        except _AllFound:
            pass
        except RecursionError:  # absurdly deep expressions: report at the statement's first line
            pass
        self._positions.update(state.found)


@contextmanager
def _unvalidated():
    """Nodes the parser builds are not validated again (`CSTNode.__post_init__` runs `_validate`).

    The parser builds only what its grammar accepts, from text Python's own parser
    accepted first (the skeleton); validating each of the hundreds of thousands of
    nodes a file gives is a fifth of libcst's parse time, and libcst's own comment
    there says parsing should skip it. Nodes built outside a parse are validated.
    """
    node = cst.CSTNode
    validate = node.__dict__.get("__post_init__")
    if validate is None:  # another libcst release validates elsewhere: parse as it does
        yield
        return
    node.__post_init__ = _no_validation
    try:
        yield
    finally:
        node.__post_init__ = validate


def _no_validation(self: cst.CSTNode) -> None:
    pass


@contextmanager
def deep_recursion(limit: int = 20_000):
    """Let libcst's recursive parser and code generator handle deeply nested expressions.

    CPython itself compiles expressions a few thousand operands deep; libcst
    recurses a few frames per level, past the default limit of 1000.
    """
    old = sys.getrecursionlimit()
    if old < limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        if old < limit:
            sys.setrecursionlimit(old)


class _AllFound(Exception):
    """Raised inside code generation once every target node has a position."""


_NEWLINE = re.compile(r"\r\n?|\n")


@functools.cache
def _position_state() -> type:
    """The code generator that records positions, made on first use (libcst loads when a finding is placed)."""
    from libcst._nodes.internal import CodegenState

    class _PositionState(CodegenState):
        """Codegen that tracks line/column and records the syntactic span of a few target nodes.

        libcst's PositionProvider records every node of the tree; rules need the
        position of one node per finding, so this does the same walk with almost
        no bookkeeping (several times faster).
        """

        def __init__(self, default_indent: str, default_newline: str) -> None:
            super().__init__(default_indent=default_indent, default_newline=default_newline)
            self.line = 1
            self.column = 0
            self.targets: set[int] = set()
            self.found: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}

        def add_indent_tokens(self) -> None:
            self.tokens.extend(self.indent_tokens)
            for token in self.indent_tokens:
                self._advance(token)

        def add_token(self, value: str) -> None:
            self.tokens.append(value)
            self._advance(value)

        def _advance(self, value: str) -> None:
            if "\n" not in value and "\r" not in value:
                self.column += len(value)
                return
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])

        @contextmanager
        def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
            if id(node) not in self.targets:
                yield
                return
            start = (self.line, self.column)
            yield
            self.found.setdefault(id(node), (start, (self.line, self.column)))
            if len(self.found) == len(self.targets):
                raise _AllFound

    return _PositionState


def parse_snippet(text: str, first_line: int, indent: int) -> Snippet | None:
    """Parse the statement whose source `text` starts on file line `first_line`.

    An indented statement (a method) is parsed inside a dummy class header so
    its indentation and therefore its columns stay as in the file. Returns
    None if libcst rejects text that Python's own parser accepted (grammar
    libcst does not know yet); the statement is then not checked.
    """
    load_libcst()
    if not text.endswith(("\n", "\r")):
        text += "\n"
    offset = first_line - 1
    if indent:
        text = "class _:\n" + text
        offset -= 1
    try:
        with deep_recursion(), _unvalidated():
            module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    node: cst.CSTNode = module
    if indent and module.body:
        body = module.body[0].body  # type: ignore[attr-defined]
        node = body.body[0] if isinstance(body, cst.IndentedBlock) and body.body else module
    elif module.body:
        node = module.body[0] if len(module.body) == 1 else module
    return Snippet(module, node, offset, 2 if indent else 1, text=text)


@functools.cache
def _empty_module() -> cst.Module:
    return cst.Module(body=[])


_DEF_LINE = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]", re.M)


def chain_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What an attribute, item or call chain starts from (`loss` of `loss.detach()[0].item()`, `registry` of
    `registry["l"](None).enc.to(d)`)."""
    while isinstance(expr, (cst.Attribute, cst.Subscript, cst.Call)):
        expr = expr.func if isinstance(expr, cst.Call) else expr.value
    return expr


def body_start(text: str) -> int:
    """Where the body of the `def` statement `text` (decorators and all, as the file has it) starts: just past the
    colon that ends its header; -1 when no header is found."""
    match = _DEF_LINE.search(text)
    if match is None:
        return -1
    depth, at, end = 0, match.end(), len(text)
    while at < end:
        char = text[at]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "#":
            at = text.find("\n", at)
            if at < 0:
                return -1
        elif char in "\"'":  # a default's string: skip it whole (`sep=":"`)
            quote = text[at:at + 3] if text[at:at + 3] in ('"""', "'''") else char
            at += len(quote)
            while at < end and not text.startswith(quote, at):
                at += 2 if text[at] == "\\" else 1
            if at >= end:
                return -1
            at += len(quote) - 1
        elif char == ":" and depth == 0:
            return at + 1
        at += 1
    return -1


def one_line(text: str, limit: int) -> str:
    """`text` on one line, shortened to `limit` characters as `code_of` shortens a node's code."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def code_of(node: cst.CSTNode, limit: int = 60) -> str:
    """Source text of a node on one line, shortened for a message."""
    kept = _CODE.get(id(node))
    if kept is not None and kept[0] is node:
        return one_line(kept[1], limit)
    try:
        with deep_recursion():
            text = _empty_module().code_for_node(node)
    except RecursionError:
        return "<expression>"
    if len(_CODE) >= _KIDS_MAX:
        _CODE.clear()
    _CODE[id(node)] = (node, text)  # (several analyses ask for the text of the same test or call)
    return one_line(text, limit)


# The generated text of each node `code_of` was asked for, kept (with the node) like `_KIDS` until the file is done.
_CODE: dict[int, tuple[cst.CSTNode, str]] = {}


def dotted(node: cst.CSTNode | None) -> str | None:
    """`torch.nn.functional.linear` for that expression; None if it is not a plain dotted name."""
    parts = []
    # `type() is`: leaf node types, tested without libcst's ABC check (a microsecond for each node that is not one).
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def call_name(node: cst.CSTNode) -> str | None:
    """The dotted name a call calls (`nn.init.normal_`), or for `x.y().z()` the last attribute as `.z`."""
    if not isinstance(node, cst.Call):
        return None
    name = dotted(node.func)
    if name is None and isinstance(node.func, cst.Attribute):
        return "." + node.func.attr.value
    return name


def union_members(annotation: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The types a union annotation names, left to right, its nesting flattened: `A | B | None`, `Optional[A]`,
    `Union[A, Optional[B]]` (`None` included as written); any other annotation is its own only member."""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return union_members(annotation.left) + union_members(annotation.right)
    if isinstance(annotation, cst.Subscript) and (dotted(annotation.value) or "").rsplit(".", 1)[-1] in ("Optional", "Union"):
        return [m for e in annotation.slice if isinstance(e.slice, cst.Index) for m in union_members(e.slice.value)]
    return [annotation]


def choice_leaves(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values `a if c else b` and `a or b` may evaluate to, unchanged (the expression itself otherwise)."""
    if isinstance(value, cst.IfExp):
        return choice_leaves(value.body) + choice_leaves(value.orelse)
    if isinstance(value, cst.BooleanOperation) and isinstance(value.operator, cst.Or):
        return choice_leaves(value.left) + choice_leaves(value.right)
    return [value]


def unwrapped_argument(node: cst.CSTNode) -> cst.BaseExpression | None:
    """What an unwrapping call is given, the model it hands back (`self.model` for
    `accelerator.unwrap_model(self.model)`, `pb` for `typing.cast(PolicyProtocol, pb)`); None for any other node."""
    if isinstance(node, cst.Call) and node.args:
        name = call_name(node) or ""
        if "unwrap" in name:
            return node.args[0].value
        if name in ("cast", "typing.cast") and len(node.args) == 2 and not node.args[1].star:
            return node.args[1].value
    return None


def const_str(node: cst.CSTNode | None) -> str | None:
    """The value of a plain string literal, else None."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Path:
    """An access path such as `self.layers[0].mlp.weight`: root name and parts ('[]' for an index)."""

    root: str
    parts: tuple[str, ...]
    # The key of each '[]' part when it is a string literal (ModuleDict access), else None.
    keys: tuple[str | None, ...]


def access_path(node: cst.CSTNode) -> Path | None:
    """Decompose a chain of attribute and subscript accesses rooted at a plain name (through a call unwrapping a
    model: `accelerator.unwrap_model(self.ema)` is `self.ema`)."""
    parts: list[str] = []
    keys: list[str | None] = []
    while True:
        if type(node) is cst.Attribute:  # leaf node types (see `dotted`)
            parts.append(node.attr.value)
            keys.append(None)
            node = node.value
        elif type(node) is cst.Subscript:
            parts.append("[]")
            key = None
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                key = const_str(node.slice[0].slice.value)
            keys.append(key)
            node = node.value
        elif type(node) is cst.Name:
            return Path(node.value, tuple(reversed(parts)), tuple(reversed(keys)))
        elif type(node) is cst.Call and node.args and "unwrap" in (call_name(node) or ""):
            node = node.args[0].value  # `accelerator.unwrap_model(self.ema).update()`: the model it was given
        else:
            return None


def parameter_for(func: cst.FunctionDef, call: cst.Call, position: int) -> str | None:
    """The parameter of `func` that argument number `position` of `call` binds (by keyword or position)."""
    arg = call.args[position]
    if arg.keyword is not None:
        return arg.keyword.value
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if params[:1] in (["self"], ["cls"]):
        params = params[1:]
    at = sum(1 for a in call.args[:position] if a.keyword is None and not a.star)
    if at >= len(params) and isinstance(func.params.star_arg, cst.Param) and not arg.star:
        return func.params.star_arg.name.value  # `init(self.a, self.b)` for `def init(*modules)`: one of them
    return params[at] if at < len(params) else None


def parameter_names(func: cst.FunctionDef) -> frozenset[str]:
    """The names of a function's parameters that take an argument by position or by name (`self` and `cls`
    among them; not `*args` nor `**kwargs`)."""
    params = func.params
    return frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))


_TENSOR_TYPES = frozenset({"Tensor", "FloatTensor", "LongTensor", "BoolTensor"})


def _names_a_tensor(annotation: cst.BaseExpression) -> bool:
    """Does an annotation name one tensor (`Tensor`, `torch.FloatTensor`, `Optional[th.Tensor]`, `Tensor | None`), not
    a list or a mapping of them? (Read from the nodes: a parameter list is read for every taint of a function.)"""
    if isinstance(annotation, cst.Subscript) and isinstance(annotation.value, cst.Name) and \
            annotation.value.value == "Optional" and len(annotation.slice) == 1 and \
            isinstance(annotation.slice[0].slice, cst.Index):
        annotation = annotation.slice[0].slice.value
    elif isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr) and \
            isinstance(annotation.right, cst.Name) and annotation.right.value == "None":
        annotation = annotation.left
    if isinstance(annotation, cst.Name):
        return annotation.value in _TENSOR_TYPES
    return isinstance(annotation, cst.Attribute) and annotation.attr.value in _TENSOR_TYPES and \
        isinstance(annotation.value, cst.Name) and annotation.value.value in ("torch", "th")


def annotated_tensors(func: cst.CSTNode | None) -> frozenset[str]:
    """The parameters of a function annotated as one tensor (`x: Tensor`, `y: Optional[torch.Tensor] = None`), but a
    state of the calling convention (`hidden_states`, `cache_position`: `known.CONVENTION_INPUT`), whose annotation
    often names a tensor for a tuple of them."""
    if not isinstance(func, cst.FunctionDef):
        return frozenset()
    params = func.params
    return frozenset(
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.annotation is not None and _names_a_tensor(p.annotation.annotation)
        and not known.CONVENTION_INPUT.search(p.name.value)
    )


def positional_parameters(func: cst.FunctionDef) -> list[str]:
    """The positional parameters of a function, after `self` or `cls` for a method."""
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    return params[1:] if params[:1] in (["self"], ["cls"]) else params
