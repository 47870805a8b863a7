"""`path/to/file.py:function`: how a user names the model factory, inputs, loss, data and init functions.

Parsed and checked once where the command line and `[tool.zgen]` are read,
before torch is imported; `zgen.plan.trace.load_callable` imports the file
(re-exported there with `Target` and `parse_target`).
"""

from __future__ import annotations

from dataclasses import dataclass

from zgen.errors import ZgenError

__all__ = ["Target", "parse_target"]


@dataclass(frozen=True, slots=True)
class Target:
    """A `path/to/file.py:function` reference as written by the user, split and validated."""

    path: str
    function: str
    option: str  # the flag or [tool.zgen] key it came from, for messages

    def __str__(self) -> str:
        return f"{self.path}:{self.function}"


def parse_target(text: str, option: str) -> Target:
    """Split and validate `path/to/file.py:function`; a bad spelling is a `ZgenError`."""
    path, sep, func = text.rpartition(":")
    if not sep or not path or not func:
        raise ZgenError(
            f"{option} `{text}` is not `path/to/file.py:function`",
            help=f"write it as {option} path/to/model.py:build_model",
        )
    if not path.endswith(".py"):
        raise ZgenError(f"{option} `{text}`: `{path}` is not a Python file", help="name a .py file before the `:`")
    if not all(part.isidentifier() for part in func.split(".")):
        raise ZgenError(f"{option} `{text}`: `{func}` is not a Python identifier", help="name a module-level function")
    return Target(path, func, option)
