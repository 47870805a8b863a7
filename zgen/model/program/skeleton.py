"""The cheap first pass over a file: where its classes, methods and imports are.

Python's own C parser (`ast`) reads a whole file about ten times faster than
libcst. This pass uses it to check that the file parses at all, to find the
line span of every top-level class, method and function, and to read the
imports. The index then hands libcst only the few spans a rule can fire on,
so the slow, exact parse is paid for a fraction of the file.

Only line numbers and indentation are taken from `ast` (its column offsets are
UTF-8 byte offsets); every position in a finding comes from libcst.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = [
    "FunctionSpan", "ClassSpan", "Skeleton", "SourceError", "build_skeleton", "split_lines",
    "skeleton_to_dict", "skeleton_from_dict", "with_lf",
]

# Python ends a line only at \n, \r\n or \r; str.splitlines would also split at
# form feeds and other separators and shift every line number after them.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def with_lf(source: str) -> str:
    """`source` with every line ending `\n` (Windows' `\r\n` and old Macs' `\r` both end a line for Python): the
    checker's patterns read `\n` alone as a line's end. Line numbers and columns stay as they were."""
    return source.replace("\r\n", "\n").replace("\r", "\n") if "\r" in source else source


def split_lines(source: str) -> list[str]:
    """The lines of `source` as the Python tokenizer counts them, endings kept."""
    return _LINE.findall(source)


@dataclass(frozen=True, slots=True)
class FunctionSpan:
    """A `def` statement: lines `start`..`end` (1-based, inclusive, decorators included)."""

    name: str
    start: int
    end: int
    indent: int


@dataclass(frozen=True, slots=True)
class ClassSpan:
    """A class statement with its bases (as written) and its directly defined methods."""

    name: str
    bases: tuple[str, ...]
    start: int
    end: int
    indent: int
    methods: dict[str, FunctionSpan]


@dataclass(frozen=True, slots=True)
class SourceError:
    """Why a file does not parse, at a 1-based line and column."""

    message: str
    line: int
    column: int


@dataclass(slots=True)
class Skeleton:
    """Everything the first pass learnt about one file."""

    lines: list[str]
    imports: dict[str, str]
    classes: dict[str, ClassSpan]
    functions: dict[str, FunctionSpan]
    # Line spans of module-level statements that are neither classes nor functions.
    script: list[tuple[int, int]] = field(default_factory=list)
    # The `ast` tree itself, for rules that read a method with `ast` (None when loaded from a summary).
    tree: ast.Module | None = None
    # Modules whose public names the file re-exports with `from .policies import *` (as written).
    stars: list[str] = field(default_factory=list)
    # Module-level names bound to another name of the file (`MLP = MultiLayerPerceptron`, `Norm = nn.LayerNorm`):
    # the dotted name as written, whose first part is a class, function or import of the file.
    aliases: dict[str, str] = field(default_factory=dict)

    def text(self, start: int, end: int) -> str:
        """Source lines `start`..`end` (1-based, inclusive)."""
        return "".join(self.lines[start - 1 : end])


def dotted(node: ast.expr) -> str | None:
    """`torch.nn.Module` for the expression `torch.nn.Module`; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Subscript):  # Generic[T], nn.ModuleList[Block] in annotations
        return dotted(node.value)
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionSpan:
    first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    return FunctionSpan(node.name, first, node.end_lineno or node.lineno, node.col_offset)


def _accessor_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """`setter` (or `deleter`) for a def decorated `@<its name>.setter`."""
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Attribute) and decorator.attr in ("setter", "deleter") \
                and isinstance(decorator.value, ast.Name) and decorator.value.id == node.name:
            return decorator.attr
    return None


def _class(node: ast.ClassDef) -> ClassSpan:
    methods: dict[str, FunctionSpan] = {}
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # a property's setter keeps its own key: the name stays the getter's, which a read of it runs
            accessor = _accessor_of(stmt) if stmt.name in methods else None
            methods[f"{stmt.name}.{accessor}" if accessor else stmt.name] = _function(stmt)
    bases = tuple(b for b in (dotted(base) for base in node.bases) if b)
    first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    return ClassSpan(node.name, bases, first, node.end_lineno or node.lineno, node.col_offset, methods)


def _record_import(stmt: ast.Import | ast.ImportFrom, imports: dict[str, str], stars: list[str]) -> None:
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                imports[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                imports[top] = top
        return
    base = "." * stmt.level + (stmt.module or "")
    for alias in stmt.names:
        if alias.name == "*" and stmt.module:
            stars.append(base)
        elif alias.name != "*":
            # `from . import layers` is `.layers`; `from .a import b` is `.a.b`.
            joined = f"{base}{alias.name}" if base.endswith(".") else f"{base}.{alias.name}"
            imports[alias.asname or alias.name] = joined if base else alias.name


def _walk_top(body: list[ast.stmt], skel: Skeleton) -> None:
    """Record classes, functions and imports at module level, looking inside if/try/with blocks."""
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            skel.classes[stmt.name] = _class(stmt)
            for inner in stmt.body:  # `class Algorithm: class Optimizer: ...`: a class of its own
                if isinstance(inner, ast.ClassDef):
                    skel.classes.setdefault(inner.name, _class(inner))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skel.functions[stmt.name] = _function(stmt)
            for inner in _local_classes(stmt.body):  # `def create_discriminator(...): class Discriminator(...)`
                skel.classes.setdefault(inner.name, _class(inner))
        else:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                _record_import(stmt, skel.imports, skel.stars)
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                named = isinstance(stmt.value, (ast.Name, ast.Attribute))
                value = dotted(stmt.value) if named else _partial_of(stmt.value)  # (`L = partial(Linear, ...)`)
                if value is not None and value != stmt.targets[0].id:
                    skel.aliases[stmt.targets[0].id] = value
            if isinstance(stmt, (ast.If, ast.Try, ast.With)) and _defines(stmt):
                # `if is_torch_available(): class Foo(nn.Module): ...` and try/except imports.
                for block in _blocks(stmt):
                    _walk_top(block, skel)
                continue
            skel.script.append((stmt.lineno, stmt.end_lineno or stmt.lineno))


def _local_classes(body: list[ast.stmt]) -> list[ast.ClassDef]:
    """The classes a function defines in its body (also under its if/try/with blocks, not in nested functions): a
    factory's model class, checked as any other (a name a module-level class has keeps that one)."""
    found: list[ast.ClassDef] = []
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            found.append(stmt)
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for block in _blocks(stmt):
                found += _local_classes(block)
    return found


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(stmt, "body", []), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
    blocks += [handler.body for handler in getattr(stmt, "handlers", [])]
    return blocks


def _defines(stmt: ast.stmt) -> bool:
    """Does a compound statement hold class/def/import statements in its blocks, directly or in a block nested in them
    (`if __name__ == "__main__":` ... `if args.arch == "swagan": from swagan import Generator`)?"""
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Import, ast.ImportFrom)
    return any(
        isinstance(s, kinds) or isinstance(s, (ast.If, ast.Try, ast.With)) and _defines(s)
        for block in _blocks(stmt) for s in block
    )


def build_skeleton(source: str) -> Skeleton | SourceError:
    """The skeleton of `source`, or where it fails to parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return SourceError(exc.msg, exc.lineno or 1, exc.offset or 1)
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return SourceError(str(exc) or type(exc).__name__, 1, 1)
    skel = Skeleton(split_lines(source), {}, {}, {}, tree=tree)
    _walk_top(tree.body, skel)
    if _INDENTED_IMPORT.search(source):
        _record_local_imports(tree, skel)
    skel.aliases = _kept_aliases(skel)
    return skel


# `from x import y` indented: an import inside a block (a function's body, most often); the cheap text gate.
_INDENTED_IMPORT = re.compile(r"^[ \t]+(?:from [\w.]+ import |import \w)", re.M)


# Libraries whose names a function may import for itself and mean there what they mean anywhere: torch's
# initialisers, collectives and utilities, DeepSpeed's gathers. (A class of the program imported inside a method
# is most often a component built lazily, on some ranks or configurations only: its name stays unread.)
_LOCALLY_IMPORTED_ROOTS = frozenset({"torch", "deepspeed"})


def _record_local_imports(tree: ast.Module, skel: Skeleton) -> None:
    """`from torch.nn.init import zeros_` inside a function (under the `if` that uses it): the name means the same
    in the function, where nothing at module level binds it. A name two functions import differently keeps the
    first."""
    bound = skel.classes.keys() | skel.functions.keys() | skel.imports.keys()
    local: dict[str, str] = {}
    for node in _statements(tree):  # (indented: inside a function, or a block whose imports `_walk_top` read already)
        if isinstance(node, ast.ImportFrom) and node.col_offset > 0 and node.level == 0 and node.module \
                and node.module.partition(".")[0] in _LOCALLY_IMPORTED_ROOTS:
            for alias in node.names:
                name = alias.asname or alias.name
                if alias.name != "*" and name not in bound:
                    local.setdefault(name, f"{node.module}.{alias.name}")
    # A script's `def main(args):` opening with its imports (`from model_utils import ProteinMPNN`): the names mean
    # in it what a module-level import would (imports at the top of a function of the module, not a method's or
    # under a test)
    for func in tree.body:
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for stmt in func.body:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    _record_unbound(stmt, bound, local)
        elif isinstance(func, ast.ClassDef):
            # a factory's method opening with the import of what it builds (`def get_model(self, ...): from
            # genmo.mochi_preview.dit.joint_model.asymm_models_joint import AsymmDiTJoint`): only its opening lines,
            # not an import under a test or after the method's first statement
            for method in func.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for stmt in method.body[_docstring_lines(method.body):]:
                        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                            break
                        _record_unbound(stmt, bound, local)
    skel.imports.update(local)


def _docstring_lines(body: list[ast.stmt]) -> int:
    """1 when `body` opens with a docstring, else 0."""
    first = body[0] if body else None
    text = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    return int(text)


def _record_unbound(stmt: ast.Import | ast.ImportFrom, bound, local: dict[str, str]) -> None:
    """Record the names `stmt` imports that nothing at module level binds (the first import of a name wins)."""
    found: dict[str, str] = {}
    _record_import(stmt, found, [])
    for name, target in found.items():
        if name not in bound:
            local.setdefault(name, target)


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """The statements of `tree` (and the handlers and cases between them) in `ast.walk`'s order, breadth first,
    without walking into expressions: imports are statements, and a file's expressions are most of its nodes."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                todo.extend(item for item in value if isinstance(item, _BLOCK_NODES))
        yield node


_BLOCK_NODES = (ast.stmt, ast.excepthandler, ast.match_case)


def _partial_of(value: ast.expr) -> str | None:
    """`partial(Linear, bias=False)`: the class or function a partial binds arguments of (what calling it calls)."""
    if isinstance(value, ast.Call) and value.args and dotted(value.func) in ("partial", "functools.partial"):
        first = value.args[0]
        return dotted(first) if isinstance(first, (ast.Name, ast.Attribute)) else None
    return None


def _kept_aliases(skel: Skeleton) -> dict[str, str]:
    """The aliases naming a class, function or import of the file, not themselves one (a name bound twice, `Norm =
    LayerNorm` under an `if` beside a class `Norm`, is the class or import)."""
    names = skel.classes.keys() | skel.functions.keys() | skel.imports.keys()
    return {
        alias: value for alias, value in skel.aliases.items()
        if alias not in names and value.partition(".")[0] in names
    }


def skeleton_to_dict(skel: Skeleton) -> dict:
    """A JSON-ready form of a skeleton without its lines (they come back from the source)."""
    return {
        "imports": skel.imports,
        "classes": [
            [c.name, list(c.bases), c.start, c.end, c.indent, [[m.name, m.start, m.end, m.indent] for m in c.methods.values()]]
            for c in skel.classes.values()
        ],
        "functions": [[f.name, f.start, f.end, f.indent] for f in skel.functions.values()],
        "script": [list(span) for span in skel.script],
        "stars": list(skel.stars),
        "aliases": skel.aliases,
    }


def skeleton_from_dict(doc: dict, source: str) -> Skeleton:
    """The skeleton `skeleton_to_dict` stored, for `source` (KeyError/TypeError/ValueError on a bad document)."""
    classes = {}
    for name, bases, start, end, indent, methods in doc["classes"]:
        spans = {m[0]: FunctionSpan(str(m[0]), int(m[1]), int(m[2]), int(m[3])) for m in methods}
        classes[name] = ClassSpan(str(name), tuple(map(str, bases)), int(start), int(end), int(indent), spans)
    functions = {f[0]: FunctionSpan(str(f[0]), int(f[1]), int(f[2]), int(f[3])) for f in doc["functions"]}
    imports = {str(k): str(v) for k, v in dict(doc["imports"]).items()}
    script = [(int(a), int(b)) for a, b in doc["script"]]
    stars = [str(m) for m in doc["stars"]]
    aliases = {str(k): str(v) for k, v in dict(doc["aliases"]).items()}
    return Skeleton(split_lines(source), imports, classes, functions, script, stars=stars, aliases=aliases)
