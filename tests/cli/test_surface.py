"""The public surface, frozen: commands, their flags, output formats, settings keys and rule codes.

Users script against these; SARIF fingerprints and `# noqa` comments name the
codes. Changing any of them must be a deliberate edit of this file.
"""

from __future__ import annotations

from zgen.cli import build_parser
from zgen.registry import all_rules
from zgen.report import FORMATS
from zgen.settings import _KEYS

LAUNCH = ["--deepspeed-version", "--gpu-mem", "--gpus-per-node", "--params", "--rules", "--seq-len", "--settings",
          "--world-size"]
AUTO = ["--attention-tflops", "--auto", "--gemm-tflops", "--hbm-gbps", "--margin"]  # `zgen plan --auto` (issue 21)
FLAGS = {
    "check": sorted(LAUNCH + ["--config", "--consumer", "--diff", "--entry", "--exit-zero", "--extend-select", "--fix",
                              "--force-exclude", "--help", "--ignore", "--inputs", "--jobs", "--loss", "--model",
                              "--no-cache", "--output-file", "--output-format", "--select", "--show-memory",
                              "--show-resolved", "--statistics", "--trace"]),
    "rule": ["--all", "--help", "--output-format", "--rules", "--settings"],
    "plan": sorted(LAUNCH + AUTO + ["--config", "--help", "--inputs", "--json", "--loss", "--model", "--plot", "--units"]),
    "emit": sorted(LAUNCH + AUTO + ["--check", "--config", "--data", "--force", "--help", "--init", "--inputs", "--loss", "--max-steps",
                             "--model", "--out", "--precision", "--units", "--warmup-steps"]),
}
SETTINGS = ["auto", "cache-dir", "config", "consumer", "data", "deepspeed-version", "exclude", "extend-exclude", "extend-select",
            "gpu-mem", "gpus-per-node", "ignore", "init", "inputs", "model", "out", "output-format", "params",
            "per-file-ignores", "rules", "select", "seq-len", "src", "units", "world-size"]
CODES = {
    "ZC0": "001 002 003 004 005 006 010 011 012 013 014 015 016 017 018 019 020 021 022",
    "ZC1": "101 102 103 104",
    "ZC2": "201 202 203 204 205 206 207",
    "ZC3": "301 302 303 304 305 306 307 308 309 310 311 312 313 314",
    "ZC4": "401 402 403 404 405 406 407",
    "ZC5": "501 502 503",
    "ZC6": "601",
    "ZC9": "901 902",
    "ZG1": "101 102 103 104 105 106 107 108 109 110",
    "ZG2": "201 202 203 204 205 290",
    "ZG3": "301 302 303",
    "ZG9": "901 902 903",
}


def _subparsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def test_commands_and_flags():
    subs = _subparsers()
    assert list(subs) == ["check", "rule", "plan", "emit"]
    for name, parser in subs.items():
        flags = sorted(o for a in parser._actions for o in a.option_strings if o.startswith("--"))
        assert flags == FLAGS[name], name


def test_output_formats():
    assert FORMATS == ("full", "concise", "json", "sarif", "github")


def test_settings_keys():
    assert sorted(_KEYS) == SETTINGS


def test_rule_codes():
    expected = sorted(f"{family[:2]}{n}" for family, ns in CODES.items() for n in ns.split())
    assert sorted(all_rules()) == expected
