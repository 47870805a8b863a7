"""The `zgen` command line: `check`, `rule`, `plan`, `emit`.

`main(argv) -> int` is the only entry point; it is also what the tests call.
Exit codes are decided here and nowhere else:

* 0 - the command did its job and found nothing (or `--exit-zero`),
* 1 - errors or warnings (info notes alone do not fail), or a stale generated file for `emit --check`,
* 2 - zgen could not do its job: bad arguments, bad settings, unreadable
  input. Printed as `zgen: error: ...` with a `help:` line, never a traceback.
  A file `check` cannot read, decode or parse (`findings.UNREADABLE`) is
  reported as a finding beside the other files' findings, then the run exits 2.

Each subcommand lives in `zgen/commands/<name>.py` with `add_parser` and
`run(args, settings)`. Modules are imported only when needed, so `zgen
check` never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from zgen import __version__
from zgen.errors import ZgenError
from zgen.kept_code import kept_dataclass_code

__all__ = ["main", "build_parser", "COMMANDS"]

COMMANDS = ("check", "rule", "plan", "emit")
# Commands that import the model and torch; the rest run on the check's layer alone.
TRAIN_COMMANDS = ("plan", "emit")


class _Parser(argparse.ArgumentParser):
    """argparse that raises ZgenError (exit 2 with our format) instead of printing usage and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise ZgenError(message, help=f"run `{self.prog} --help` for usage")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with `only` of that command alone (what `main` builds when the first
    argument names a command: the other commands' modules, and what they import, are then never loaded)."""
    parser = _Parser(
        prog="zgen",
        description="Static verifier and code generator for ZeRO stage-3 models and DeepSpeed configs.",
    )
    parser.add_argument("--version", action="version", version=f"zgen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"zgen.commands.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run zgen with `argv` (default: `sys.argv[1:]`) and return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        # zgen's own modules (findings, settings, launch facts, ...) define dozens of dataclasses: their methods are
        # compiled from code kept by an earlier run (`zgen.kept_code`), a twentieth of a one-file check otherwise
        with kept_dataclass_code("zgen"):
            parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
            args = parser.parse_args(argv)
            if not args.command:
                parser.print_help()
                return 2
            from zgen.settings import load_settings

            command = importlib.import_module(f"zgen.commands.{args.command}")
        settings = load_settings(getattr(args, "settings", None))
        if args.command in TRAIN_COMMANDS:
            _require_train_extra(args.command)
        return command.run(args, settings)
    except ZgenError as e:
        _print_error(e.message, e.help)
        return 2
    except KeyboardInterrupt:
        print("zgen: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` and closed early: not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as e:  # a bug in zgen: say so plainly, keep the traceback behind a switch
        if os.environ.get("ZGEN_DEBUG"):
            raise
        _print_error(
            f"internal error: {type(e).__name__}: {e}",
            "this is a bug in zgen; rerun with ZGEN_DEBUG=1 for the traceback and report it",
        )
        return 2


def _require_train_extra(command: str) -> None:
    """Stop with one line when torch is missing: `zgen check` needs only the base install."""
    if importlib.util.find_spec("torch") is None:
        raise ZgenError(
            f"`zgen {command}` needs torch, which is not installed",
            help="install the training extra: pip install 'zgen[train]' (or the torch build you train with, then zgen)",
        )


def _print_error(message: str, help: str | None) -> None:
    print(f"zgen: error: {message}", file=sys.stderr)
    if help:
        print(f"  help: {help}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
