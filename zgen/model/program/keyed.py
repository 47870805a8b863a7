"""Mappings that keep a built model under a constant key: `state[torchbearer.MODEL]`.

A training framework often hands its callbacks one mapping of everything it runs
(`state = {MODEL: model, OPTIMIZER: optimizer, ...}`), keyed by constants of its
own (`MODEL = state_key("model")`). A callback's `state[MODEL]` is then the built
model, though nothing in the callback's file says so: the key does. A key is a
*model key* of the program when some file of the package stores a model under it
(`{MODEL: model}`, `state[MODEL] = model`, `state.update({MODEL: self.model})`) or
calls on its values a method only a module has (`state[MODEL].parameters()`; not
`state_dict`, which optimizers and schedulers have too).

Only named constants are keys here (a dotted name whose last part is upper case,
`MODEL`, `torchbearer.MODEL`): the same constant means the same entry in every
file of the package. A string key (`ckpt["model"]`) names entries of unrelated
mappings (a checkpoint's state dict under "model") and is left to what
`analysis/provenance` follows of the one mapping it was written into.
"""

from __future__ import annotations

import os
import re

from .holds import MODULE_ONLY_METHODS, held_attributes, module_arguments, value_holds
from .index import ClassInfo, MethodInfo, ModelIndex, memoised
from .project import package_files, package_module
from .tree import cst, dotted, walk

__all__ = ["constant_key", "model_keys", "keyed_model", "reads_keyed_model"]

# A constant: the last part of a dotted name in upper case (`MODEL`, `torchbearer.MODEL`, `keys.POLICY_NET`).
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Text of a subscript, a dict entry or an `update` keyword by such a constant: the trigger of this module's reads.
_KEYED_TEXT = re.compile(r"[\[{,]\s*(?:[A-Za-z_]\w*\.)*([A-Z][A-Z0-9_]*)\s*[\]:]")
# Text of an entry read by such a constant (`state[torchbearer.MODEL]`), the constant's name its group.
_READ = re.compile(r"\[\s*(?:[A-Za-z_]\w*\.)*([A-Z][A-Z0-9_]*)\s*\]")
# Package files read for the keys another file stores a model under (a larger package is not scanned).
_MAX_SCANNED = 300
_MENTIONS: dict[tuple[str, str], tuple[str, ...]] = {}  # (package directory, key) -> modules whose text mentions it


def constant_key(expr: cst.BaseExpression) -> str | None:
    """The constant a key expression names (`MODEL` for `torchbearer.MODEL`), or None (a string, a variable)."""
    name = dotted(expr)
    if name is None or name.partition(".")[0] in ("self", "cls"):
        return None
    last = name.rpartition(".")[2]
    return last if _CONSTANT.match(last) else None


def _subscript_key(expr: cst.BaseExpression) -> str | None:
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    return constant_key(expr.slice[0].slice.value)


def _functions(index: ModelIndex) -> list[tuple[MethodInfo, ClassInfo | None]]:
    """The file's functions and methods whose text keys something by a constant."""
    found: list[tuple[MethodInfo, ClassInfo | None]] = []
    for name in index.skeleton.functions:
        info = index.function_info(name)
        if info is not None and _KEYED_TEXT.search(info.text):
            found.append((info, None))
    for cls in index.classes.values():
        for span in cls.span.methods.values():
            info = index.method_info(cls, span)
            if _KEYED_TEXT.search(info.text):
                found.append((info, cls))
    return found


@memoised
def _file_model_keys(index: ModelIndex) -> frozenset[str]:
    """The constants this file stores a model under, or calls module-only methods on the values of."""
    if not _KEYED_TEXT.search(index.source):
        return frozenset()
    keys: set[str] = set()
    for info, cls in _functions(index):
        node = info.node
        if node is None:
            continue
        arguments = module_arguments(index, node)
        held = held_attributes(index, cls) if cls is not None else {}

        def is_model(value: cst.BaseExpression) -> bool:
            return bool(value_holds(index, value, arguments, held))

        for sub in walk(node.body):
            if isinstance(sub, cst.Dict):  # `{MODEL: model, OPTIMIZER: optimizer}`
                for element in sub.elements:
                    if isinstance(element, cst.DictElement) and (key := constant_key(element.key)) is not None:
                        if key not in keys and is_model(element.value):
                            keys.add(key)
            elif isinstance(sub, cst.Assign):  # `state[MODEL] = model`
                for target in sub.targets:
                    key = _subscript_key(target.target)
                    if key is not None and key not in keys and is_model(sub.value):
                        keys.add(key)
            elif isinstance(sub, cst.Call) and isinstance(sub.func, cst.Attribute):  # `state[MODEL].parameters()`
                if sub.func.attr.value in MODULE_ONLY_METHODS and (key := _subscript_key(sub.func.value)) is not None:
                    keys.add(key)
    return frozenset(keys)


@memoised
def _read_keys(index: ModelIndex) -> frozenset[str]:
    """The constants this file reads a mapping's entry by (`state[MODEL]`), from its text."""
    return frozenset(m.group(1) for m in _READ.finditer(index.source)) if "[" in index.source else frozenset()


@memoised
def model_keys(index: ModelIndex) -> frozenset[str]:
    """The constants this file reads entries by that hold a built model: stored or used as one in this file or in
    another file of its package that mentions the constant."""
    read = _read_keys(index)
    if not read:
        return frozenset()
    keys = set(_file_model_keys(index) & read)
    for key in sorted(read - keys):
        for module in _mentioning(index, key):
            file = index.project.file(module) if index.project is not None else None
            if file is None or file.skeleton is None or file.path == index.path:
                continue
            if key in _file_model_keys(ModelIndex.of(file, index.project)):  # type: ignore[arg-type]
                keys.add(key)
                break
    return frozenset(keys)


def _mentioning(index: ModelIndex, key: str) -> tuple[str, ...]:
    """The modules of the file's top-level package whose text keys something by `key` (read once per process)."""
    directory = index.project.package_directory(index.module or "") if index.project is not None else None
    if directory is None:
        return ()
    found = _MENTIONS.get((directory, key))
    if found is None:
        paths = package_files(directory)
        pattern = re.compile(rb"[\[{,]\s*(?:[A-Za-z_]\w*\.)*" + key.encode() + rb"\s*[\]:]")
        modules: list[str] = []
        for path in paths[:_MAX_SCANNED] if len(paths) <= _MAX_SCANNED else ():
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if key.encode() in data and pattern.search(data):
                modules.append(package_module(directory, os.path.basename(directory), path))
        found = _MENTIONS[(directory, key)] = tuple(modules)
    return found


def keyed_model(index: ModelIndex, expr: cst.BaseExpression) -> bool:
    """Is `expr` an entry of a mapping under a constant key that holds a built model (`state[torchbearer.MODEL]`)?"""
    key = _subscript_key(expr)
    return key is not None and key in model_keys(index)


def reads_keyed_model(index: ModelIndex, text: str) -> bool:
    """Could code of this text read a mapping's model entry (`state[MODEL]`)? The constants its text reads entries
    by, then whether one is a model key (the files of the package are read only for a text that reads one)."""
    read = {m.group(1) for m in _READ.finditer(text)} if "[" in text else set()
    return bool(read) and not read.isdisjoint(model_keys(index))
