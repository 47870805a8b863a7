"""`zgen rule CODE` prints a rule's documentation; `zgen rule --all` lists every rule."""

from __future__ import annotations

import json

from zgen.errors import ZgenError
from zgen.settings import suggest

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser("rule", help="show a rule's documentation", description=__doc__)
    p.add_argument("code", nargs="?", help="rule code, e.g. ZG201 or ZC101")
    p.add_argument("--all", action="store_true", help="list every rule (code, severity, summary)")
    p.add_argument("--output-format", choices=("text", "json"), default="text")
    p.add_argument("--rules", action="append", default=[], metavar="FILE", help="also load these config rule files")
    p.add_argument("--settings", metavar="PYPROJECT", help="read [tool.zgen] from this pyproject.toml")


def run(args, settings) -> int:
    from zgen.registry import all_rules

    rules = all_rules(tuple(settings.rules) + tuple(args.rules))
    if args.all:
        chosen = list(rules.values())
    elif args.code:
        code = args.code.upper()
        if code not in rules:
            raise ZgenError(f"unknown rule `{args.code}`{suggest(code, rules)}", help="`zgen rule --all` lists every rule")
        chosen = [rules[code]]
    else:
        raise ZgenError("give a rule code or --all", help="e.g. `zgen rule ZG201`")
    if args.output_format == "json":
        print(json.dumps([
            {"code": r.code, "name": r.name, "severity": r.severity.value, "family": r.family,
             "summary": r.summary, "doc": r.doc} for r in chosen
        ], indent=2))
    elif args.all:
        width = max(len(r.name) for r in chosen)
        for r in chosen:
            print(f"{r.code}  {r.severity.value:<7}  {r.name:<{width}}  {r.summary}")
    else:
        r = chosen[0]
        print(f"# {r.code} {r.name} ({r.severity.value})\n")
        print(r.doc.strip())
    return 0
