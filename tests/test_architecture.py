"""The import graph of `zgen/` keeps the layering that ARCHITECTURE.md states.

Every import of a zgen module counts, at module level, inside a function or
under `if TYPE_CHECKING:`: a function-local import is still a dependency, an
annotation's import is still an arrow a reader draws, and hiding a circle
behind either is what this test exists to stop. Only what a module loads when
imported (never `TYPE_CHECKING` imports) counts for the third-party promises.
Imports of third-party packages are not edges.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PACKAGE = REPO / "zgen"

# (layer, name prefixes). A module belongs to the first entry whose prefix names it or
# a package above it, so the more specific entries come first. Keep in step with
# ARCHITECTURE.md.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", (
        "zgen.errors", "zgen.findings", "zgen.launch", "zgen.deepspeed_defaults", "zgen.schedule",
        "zgen.trace_rule", "zgen.commcost", "zgen.steptime", "zgen.zero_policy", "zgen.kept_code",
        "zgen.files",
    )),
    ("plan", ("zgen.plan", "zgen.emit", "zgen.trace_check")),
    ("runtime", ("zgen.runtime",)),
    ("check", (
        "zgen.model", "zgen.config", "zgen.solver", "zgen.memory", "zgen.report", "zgen.checker",
        "zgen.discover", "zgen.cache", "zgen.noqa", "zgen.selection", "zgen.settings", "zgen.registry",
    )),
    ("top", ("zgen.pipeline", "zgen.commands", "zgen.cli", "zgen.__main__")),
]

# Which layers each layer may import (besides itself). The runtime and the check are
# side by side: the emitted script imports the runtime without libcst or z3, and
# `zgen check` never imports torch.
MAY_IMPORT = {
    "base": set(),
    "check": {"base"},
    "runtime": {"base"},
    "plan": {"base", "check", "runtime"},
    "top": {"base", "check", "runtime", "plan"},
}

# Parts of the check layer in order, lowest first, chain by chain: a module of one part may import the parts
# before its own in its chain, never one after it. The model checker's three floors (the program, the analyses
# over it, the rules that ask them, then the package that runs them), and the config checker's (the config's
# values, the memory model, the solver over them, then the checking that uses all three). A module belongs to
# the first part naming it or a package above it.
ORDERED_PARTS: dict[str, list[tuple[str, ...]]] = {
    "model checker": [
        ("zgen.model.program",),
        ("zgen.model.analysis",),
        ("zgen.model.rules",),
        ("zgen.model.check", "zgen.model"),
    ],
    "config checker": [
        ("zgen.config.parse", "zgen.config.schema", "zgen.config.deepspeed_models", "zgen.config.validate",
         "zgen.config.autofill", "zgen.config.resolve", "zgen.config.resolved", "zgen.config.edit",
         "zgen.config.consumer", "zgen.config.rule_files"),
        ("zgen.memory",),
        ("zgen.solver",),
        ("zgen.config",),
    ],
}

# Third-party packages a layer must never reach, directly or through the zgen modules it
# imports, lazily or not: the check runs in a hook environment without torch, and the
# runtime in a training job without libcst or z3.
FORBIDDEN_PACKAGES = {
    "check": {"torch"},
    "runtime": {"libcst", "z3"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str | None:
    if module == "zgen":
        return "base"
    for layer, prefixes in LAYERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return layer
    return None


def _imports(path: Path, module: str) -> tuple[set[str], set[str], set[str], set[str]]:
    """Zgen modules and top-level third-party packages one file imports: anywhere, and at import time.

    "At import time" is what runs when the module is imported: module-level statements,
    not function bodies and not `if TYPE_CHECKING:` blocks.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    eager_nodes = set()

    def collect_eager(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if isinstance(stmt, ast.ClassDef):
                    collect_eager(stmt.body)
                continue
            if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
                collect_eager(stmt.orelse)
                continue
            for node in ast.walk(stmt):
                eager_nodes.add(id(node))

    collect_eager(tree.body)
    # `if TYPE_CHECKING:` imports are for annotations: never executed, so never an edge.
    type_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    is_package = path.name == "__init__.py"
    found: tuple[set[str], set[str], set[str], set[str]] = (set(), set(), set(), set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # `from zgen.x import y`: y may be a module or a name in x; count the module if it exists.
            names = [f"{prefix}.{alias.name}" if _exists(f"{prefix}.{alias.name}") else prefix for alias in node.names]
        else:
            continue
        eager = id(node) in eager_nodes and id(node) not in type_only
        for name in names:
            is_zgen = name.split(".")[0] == "zgen"
            target = name if is_zgen else name.split(".")[0]
            if is_zgen or id(node) not in type_only:
                found[0 if is_zgen else 1].add(target)
            if eager:
                found[2 if is_zgen else 3].add(target)
    for mods in (found[0], found[2]):
        mods.discard(module)
    return found


@functools.lru_cache(maxsize=None)
def _exists(module: str) -> bool:
    rel = Path(*module.split("."))
    return (REPO / rel).with_suffix(".py").is_file() or (REPO / rel / "__init__.py").is_file()


@functools.lru_cache(maxsize=None)
def _graph(eager: bool = False) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Edges between zgen modules and third-party packages per module: every import, or with
    `eager` only those that run when the module is imported."""
    edges, packages = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        every_mod, every_pkg, eager_mod, eager_pkg = _imports(path, module)
        edges[module], packages[module] = (eager_mod, eager_pkg) if eager else (every_mod, every_pkg)
    for module in edges:
        edges[module] = {m for m in edges[module] if m in edges}
    return edges, packages


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def test_every_module_has_a_layer():
    edges, _ = _graph()
    unplaced = sorted(m for m in edges if _layer(m) is None)
    assert not unplaced, f"add these modules to LAYERS here and to ARCHITECTURE.md: {unplaced}"


def test_each_package_keeps_to_one_layer():
    """A reader drawing arrows between packages sees the layer rule too: a package's modules all
    share its layer (a base-layer module inside a plan-layer package would make the package
    arrows run both ways). Modules directly under `zgen/` are each their own part."""
    edges, _ = _graph()
    mixed = {}
    for module in edges:
        parts = module.split(".")
        if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()):
            package = ".".join(parts[:2])
            mixed.setdefault(package, set()).add(_layer(module))
    wrong = sorted(f"{p}: {sorted(ls)}" for p, ls in mixed.items() if len(ls) > 1)
    assert not wrong, "give each package one layer (move the odd modules out):\n" + "\n".join(wrong)


def test_no_import_runs_up_a_layer():
    edges, _ = _graph()
    wrong = []
    for module, targets in edges.items():
        layer = _layer(module)
        for target in sorted(targets):
            target_layer = _layer(target)
            if target_layer != layer and target_layer not in MAY_IMPORT[layer]:
                wrong.append(f"{module} ({layer}) imports {target} ({target_layer})")
    assert not wrong, "\n".join(wrong)


def _part(module: str) -> tuple[str, int] | None:
    for chain, parts in ORDERED_PARTS.items():
        for rank, prefixes in enumerate(parts):
            if any(module == p or module.startswith(p + ".") for p in prefixes):
                return chain, rank
    return None


def test_no_import_runs_up_the_parts_of_a_layer():
    edges, _ = _graph()
    wrong = []
    for module, targets in edges.items():
        part = _part(module)
        for target in sorted(targets):
            target_part = _part(target)
            if part and target_part and part[0] == target_part[0] and target_part[1] > part[1]:
                above = ORDERED_PARTS[part[0]][target_part[1]][0]
                wrong.append(f"{module} imports {target}, a part of the {part[0]} above it ({above})")
    assert not wrong, "\n".join(wrong)


def test_layers_keep_their_third_party_promises():
    """A module never imports a forbidden package itself (lazily or not), and importing it never
    loads one through the zgen modules it imports."""
    _, every_pkg = _graph()
    edges, packages = _graph(eager=True)
    wrong = []
    for module in sorted(edges):
        forbidden = FORBIDDEN_PACKAGES.get(_layer(module) or "", set())
        if not forbidden:
            continue
        seen, todo = {module}, [module]
        while todo:
            current = todo.pop()
            for pkg in sorted((every_pkg if current == module else packages)[current] & forbidden):
                via = "" if current == module else f" through {current}"
                wrong.append(f"{module} ({_layer(module)}) reaches {pkg}{via}")
            # Importing zgen.a.b runs zgen/a/__init__.py first: that is reached too.
            reached = edges[current] | {p for m in edges[current] for p in _parents(m) if p in edges}
            todo.extend(reached - seen)
            seen |= reached
    assert not wrong, "\n".join(wrong)


def test_the_import_graph_has_no_circle():
    edges, _ = _graph()
    # A package's __init__ importing its own submodules is how packages re-export; the
    # submodule importing its package's __init__ back would be the circle, so keep those edges.
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)
