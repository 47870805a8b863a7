"""Check DeepSpeed-style configs: loader with positions, key schema per DeepSpeed version, z3 rules.

The public surface the CLI, the runtime and the emitter use. Importing this
package is cheap: it never imports torch, and z3 is imported only when a config
is actually solved. The functions below import their modules when called, so
that importing the package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from zgen.errors import ZgenError

if TYPE_CHECKING:
    from zgen.config.check import ConfigReport
    from zgen.config.resolved import ResolvedConfig
    from zgen.findings import RuleInfo
    from zgen.launch import LaunchFacts
    from zgen.memory import MemoryBreakdown

__all__ = ["ConfigReport", "check_config", "rule_codes", "rule_infos", "render_resolved", "render_memory", "load_config_dict",
           "format_world_sizes"]


def __getattr__(name: str):
    if name == "ConfigReport":
        from zgen.config.check import ConfigReport

        return ConfigReport
    raise AttributeError(name)


def check_config(path: str, data: bytes, facts: LaunchFacts, rule_files: Sequence[str] = ()) -> ConfigReport:
    """Check the config `data` read from `path` under the launch `facts`.

    Never raises for bad config content (malformed text, wrong types, huge
    numbers, deep nesting, non-UTF-8 bytes all become ZC0xx findings with
    positions). Raises ZgenError only for a bad user rule file or an unknown
    `facts.deepspeed_version`.
    """
    from zgen.config.check import check_config as run

    return run(path, data, facts, rule_files)


def rule_codes() -> frozenset[str]:
    """Every built-in ZC code (loader codes included), read from the rule files without compiling a rule."""
    from zgen.config.rule_files import builtin_codes

    return builtin_codes()


def rule_infos(rule_files: Sequence[str] = ()) -> list[RuleInfo]:
    """Documentation of every ZC code (loader codes included), built from the rule TOML files."""
    from zgen.solver.rules import load_rules

    return load_rules(rule_files).infos()


def render_resolved(resolved: ResolvedConfig) -> str:
    """Every resolved value with its origin (for `--show-resolved`)."""
    from zgen.config.render import render_resolved as run

    return run(resolved)


def render_memory(breakdown: MemoryBreakdown) -> str:
    """The per-GPU memory table with formulas (for `--show-memory`)."""
    from zgen.config.render import render_memory as run

    return run(breakdown)


def format_world_sizes(sizes: tuple[int, ...]) -> str:
    """A short description of a list of valid world sizes (`every world size from 1 to 1024`, ...)."""
    from zgen.config.render import format_world_sizes as run

    return run(sizes)


def load_config_dict(path: str) -> dict:
    """Parse a DeepSpeed config file (JSON or hjson) into the plain dict DeepSpeed would see.

    Raises ZgenError naming the file and position when it cannot be read or parsed.
    """
    from zgen.config.parse import parse, to_plain

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ZgenError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ZgenError(f"{path}: not valid UTF-8 at byte {e.start}", help="save the file as UTF-8") from None
    parsed = parse(text)
    if parsed.root is None:
        p = parsed.problem
        raise ZgenError(f"{path}:{p.span.line}:{p.span.column}: invalid config: {p.message}")
    value = to_plain(parsed.root)
    if not isinstance(value, dict):
        raise ZgenError(f"{path}: the config must be an object of settings")
    return value
