"""The one exception type for "zgen could not do its job" (exit code 2).

Raise `ZgenError` for bad input anywhere (unreadable file, bad settings, a
config that cannot be parsed at all, a model factory that cannot be imported).
The CLI prints it as `zgen: error: <message>` plus an optional `help:` line and
exits 2; nothing else in zgen decides exit codes.
"""

from __future__ import annotations

__all__ = ["ZgenError"]


class ZgenError(Exception):
    """A problem with zgen's input that stops it from doing its job.

    `message` names the file, line and key where known; `help` says what to do.
    """

    def __init__(self, message: str, *, help: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.help = help

    def __str__(self) -> str:
        return self.message
