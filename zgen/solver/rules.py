"""Load constraint rules from TOML (`rules/*.toml` shipped as `zgen.rules`, plus user files).

A rule file holds three kinds of tables:

* `[[rule]]`: `code`, `name`, `severity`, `summary`, `require` (an expression
  that must hold), optional `when` (the rule applies only then), `message` (a
  template: `{expr}` is replaced by the expression's value), `help` (may use
  `{fix}`, the smallest change the solver found), `anchor` (the key the
  finding points at), `deepspeed` (a version range such as `">=0.15,<0.19.8"`),
  `each` (a list of keys; the rule is repeated with `$key` replaced by each),
  `consumer` (the config readers it applies to: `deepspeed`, `hf`, `accelerate`, `zgen`),
  `doc` (markdown), and `[[rule.example]]` tables with `bad` or `good` config
  text plus launch facts, which the test suite runs.
* `[[derive]]`: how DeepSpeed fills a key the user left out (`key`, `when`,
  `value`, `explain`), e.g. `gradient_accumulation_steps` from the batch sizes.
* `[[code]]`: documentation for codes the loader reports (no expression).

Expressions are parsed and type-checked when the file loads; a bad user file
raises `ZgenError` naming the file, line and field. Loading is cached by path
and modification time, so a process compiles each file once.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from zgen.config.autofill import CONSUMERS, PARAM_KEYS
from zgen.config.rule_files import builtin_rule_files
from zgen.config.schema import REMOVALS, schema_for
from zgen.errors import ZgenError
from zgen.findings import RuleInfo, Severity
from zgen.solver import expr as E

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Example", "Rule", "Derive", "CodeDoc", "RuleSet", "load_rules", "builtin_rule_files", "KeyTable",
           "LAUNCH_FACTS", "version_in_range"]

# Launch facts a rule may use, with the flag that gives each.
LAUNCH_FACTS = {
    "world_size": "--world-size",
    "gpus_per_node": "--gpus-per-node",
    "gpu_mem": "--gpu-mem",
    "params": "--params",
    "seq_len": "--seq-len",
}

_CODE = re.compile(r"ZC\d{3,4}")
_SEVERITIES = {s.value: s for s in Severity}


@dataclass(frozen=True, slots=True)
class Example:
    """A config text that must (`bad`) or must not (`good`) trigger its rule, with launch facts."""

    text: str
    bad: bool
    facts: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True, slots=True)
class Template:
    """A message or help template: literal text and `{expr}` holes, in order."""

    parts: tuple[str | E.Node, ...]
    source: str


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled `[[rule]]` (one per `$key` of `each`); `keys` are the canonical keys it mentions."""
    code: str
    name: str
    severity: Severity
    summary: str
    doc: str
    require: E.Node
    require_text: str
    when: E.Node | None
    message: Template
    help: Template | None
    anchor: str
    versions: str
    source: str
    keys: tuple[str, ...]
    examples: tuple[Example, ...] = ()
    each: tuple[str, ...] = ()  # the keys `$key` ranged over, and the texts before substitution
    raw: tuple[str, str] = ("", "")
    consumers: tuple[str, ...] = ()  # the config readers the rule applies to; empty: all of them


@dataclass(frozen=True, slots=True)
class Derive:
    """How DeepSpeed fills `key` when it is not written: `value` when `when` holds."""
    key: str
    when: E.Node | None
    value: E.Node
    explain: str
    source: str


@dataclass(frozen=True, slots=True)
class CodeDoc:
    """A documented code without an expression (loader codes, memory, meta)."""
    code: str
    name: str
    severity: Severity
    summary: str
    doc: str
    examples: tuple[Example, ...] = ()


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Every rule, derivation and documented code from the loaded files, in load order."""

    rules: tuple[Rule, ...]
    derives: tuple[Derive, ...]
    docs: tuple[CodeDoc, ...]

    def infos(self) -> list[RuleInfo]:
        """One `RuleInfo` per code (a rule repeated with `each` or variants is one code)."""
        seen: dict[str, RuleInfo] = {}
        for d in self.docs:
            seen[d.code] = RuleInfo(code=d.code, name=d.name, summary=d.summary, doc=_doc(d.summary, d.doc, ()),
                                    severity=d.severity, family="config")
        by_code: dict[str, list[Rule]] = {}
        for r in self.rules:
            by_code.setdefault(r.code, []).append(r)
        for code, rules in by_code.items():
            if code in seen:
                continue
            first = rules[0]
            seen[code] = RuleInfo(code=code, name=first.name, summary=first.summary,
                                  doc=_doc(first.summary, first.doc, rules), severity=first.severity, family="config")
        return sorted(seen.values(), key=lambda i: i.code)


def _doc(summary: str, body: str, rules) -> str:
    parts = [summary.strip(), body.strip()]
    if rules:
        shown = []
        for r in rules:
            when, require = r.raw
            text = (f"when    {' '.join(when.split())}\n" if when else "") + f"require {' '.join(require.split())}"
            if r.each:
                text = "for each $key in: " + ", ".join(r.each) + "\n" + text
            if text not in shown:
                shown.append(text)
        parts.append("## Constraint\n\n```\n" + "\n\n".join(shown) + "\n```")
    return "\n\n".join(p for p in parts if p) + "\n"


class KeyTable:
    """Names a rule may use: every spelling of every schema key, sections, and launch facts."""

    def __init__(self) -> None:
        self.canonical: dict[str, str] = {}
        self.types: dict[str, str] = {}
        # The schema before the removals knows every key any supported release has.
        for schema in (schema_for(REMOVALS), schema_for((0, 19, 7))):
            self._add(schema, "")
        for name in LAUNCH_FACTS:
            self.canonical[name] = name
            self.types[name] = "int"
        for name in PARAM_KEYS:
            self.canonical[name] = name
            self.types[name] = "key" if name.endswith("betas") else "real"
        for name in ("optimizer.type", "scheduler.type"):
            self.types[name] = "str"

    def _add(self, section, prefix: str) -> None:
        for key in section.keys:
            canonical = f"{prefix}{key.name}"
            for spelling in (key.name, *key.aliases):
                self.canonical[f"{prefix}{spelling}"] = canonical
            self.types[canonical] = _kind_type(key)
        for sub in section.sections:
            path = f"{prefix}{sub.name}"
            self.canonical[path] = path
            self.types[path] = "key"
            self._add(sub, path + ".")

    def type_of(self, name: str) -> str | None:
        """The type of a name (int, real, bool, str, key) or None when zgen does not know it."""
        canonical = self.resolve(name)
        return None if canonical is None else self.types.get(canonical)

    def resolve(self, name: str) -> str | None:
        """The canonical key for any spelling, or None."""
        if name in self.canonical:
            return self.canonical[name]
        if name.startswith(("optimizer.params.", "scheduler.params.")) and name.count(".") == 2:
            self.canonical[name] = name
            self.types[name] = "key"
            return name
        return None


def _kind_type(key) -> str:
    if key.kind == "int":
        return "int"
    if key.kind == "float":
        return "real"
    if key.kind == "bool":
        return "bool"
    if key.kind in ("str", "path"):
        return "str"
    if key.kind == "enum":
        return "int" if isinstance(key.choices[0], int) else "str"
    return "key"


@lru_cache(maxsize=1)
def key_table() -> KeyTable:
    """The one `KeyTable` of this process."""
    return KeyTable()


def load_rules(user_files: Sequence[str] = ()) -> RuleSet:
    """The built-in rules plus `user_files`; ZgenError for a bad user file or a clashing code."""
    builtin = [_load_file_cached(p, _mtime(p), True) for p in builtin_rule_files()]
    user = [_load_file_cached(os.path.abspath(p), _mtime(p), False) for p in user_files]
    rules: list[Rule] = []
    derives: list[Derive] = []
    docs: list[CodeDoc] = []
    owner: dict[str, str] = {}
    for loaded, path in zip(builtin + user, [*builtin_rule_files(), *user_files]):
        for item in (*loaded.docs, *loaded.rules):
            previous = owner.get(item.code)
            if previous is not None and previous != path:
                raise ZgenError(f"{path}: rule code {item.code} is already defined in {previous}",
                                help="give the rule a code of its own (e.g. ZC8xx for organisation rules)")
            owner[item.code] = path
        rules.extend(loaded.rules)
        derives.extend(loaded.derives)
        docs.extend(loaded.docs)
    return RuleSet(tuple(rules), tuple(derives), tuple(docs))


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        raise ZgenError(f"{path}: cannot read rule file", help="check the path in `--rules` or `[tool.zgen] rules`") from None


@lru_cache(maxsize=64)
def _load_file_cached(path: str, mtime: float, builtin: bool) -> RuleSet:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ZgenError(f"{path}: cannot read rule file: {e.strerror}") from None
    return _compile_file(path, raw)


def _compile_file(path: str, raw: bytes) -> RuleSet:
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        raise ZgenError(f"{path}: rule file is not UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ZgenError(f"{path}: invalid TOML: {e}") from None
    return _Loader(path, text).load(data)


class _Loader:
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text_ = text
        self.table = key_table()
        self._lines: list[str] | None = None
        self._starts: dict[str, int] = {}

    def line_of(self, code: str, field: str = "") -> int:
        """The line of `code = "ZC..."` (or of `field` after it); TOML parsers do not report positions."""
        if self._lines is None:
            self._lines = self.text_.splitlines()
            for i, line in enumerate(self._lines, 1):
                m = re.match(r"""\s*(?:code|key)\s*=\s*["']([^"']*)["']""", line)
                if m:
                    self._starts.setdefault(m.group(1), i)
        start = self._starts.get(code, 1)
        self.lines = self._lines
        if field:
            for i in range(start, len(self.lines) + 1):
                if re.match(rf"\s*{re.escape(field)}\s*=", self.lines[i - 1]):
                    return i
        return start

    def fail(self, what: str, message: str, field: str = "", hint: str | None = None) -> ZgenError:
        line = self.line_of(what, field)
        where = f" `{field}`" if field else ""
        return ZgenError(f"{self.path}:{line}: {what}{where}: {message}", help=hint)

    def load(self, data: dict) -> RuleSet:
        unknown = set(data) - {"rule", "derive", "code"}
        if unknown:
            raise ZgenError(f"{self.path}: unknown table(s) {', '.join(sorted(unknown))}",
                            help="a rule file holds `[[rule]]`, `[[derive]]` and `[[code]]` tables")
        rules: list[Rule] = []
        for entry in _tables(data.get("rule", []), self.path, "rule"):
            rules.extend(self.rule(entry))
        derives = [self.derive(d) for d in _tables(data.get("derive", []), self.path, "derive")]
        docs = [self.code_doc(d) for d in _tables(data.get("code", []), self.path, "code")]
        return RuleSet(tuple(rules), tuple(derives), tuple(docs))

    def text(self, entry: dict, what: str, field: str, required: bool = True) -> str:
        value = entry.get(field)
        if value is None:
            if required:
                raise self.fail(what, "is missing", field)
            return ""
        if not isinstance(value, str):
            raise self.fail(what, "must be a string", field)
        return value

    def header(self, entry: dict, kind: str) -> tuple[str, str, Severity, str]:
        code = entry.get("code")
        if not isinstance(code, str) or not _CODE.fullmatch(code):
            raise ZgenError(f"{self.path}:{self.line_of(str(code))}: {kind} code {code!r} is not of the form ZC123",
                            help="config rule codes are `ZC` followed by 3 or 4 digits")
        name = self.text(entry, code, "name")
        severity_text = self.text(entry, code, "severity")
        if severity_text not in _SEVERITIES:
            raise self.fail(code, f"is {severity_text!r}; use one of {', '.join(_SEVERITIES)}", "severity")
        summary = self.text(entry, code, "summary")
        return code, name, _SEVERITIES[severity_text], summary

    def expression(self, code: str, field: str, source: str, want: str = "bool") -> E.Node:
        try:
            node = E.parse(source)
            types = E.typecheck(node, self.table.type_of)
        except E.ExprError as e:
            raise self.fail(code, f"{e.message} (column {e.column} of `{source.strip()}`)", field) from None
        got = types[id(node)]
        if want and got != want and not (want == "num" and got in ("int", "real")):
            raise self.fail(code, f"must be a {want} expression, not {got}", field)
        return node

    def template(self, code: str, field: str, source: str) -> Template:
        parts: list[str | E.Node] = []
        pos = 0
        for m in re.finditer(r"\{\{|\}\}|\{([^{}]*)\}", source):
            parts.append(source[pos : m.start()])
            if m.group(0) in ("{{", "}}"):
                parts.append(m.group(0)[0])
            elif m.group(1).strip() == "fix" and field == "help":
                parts.append(E.Name(0, "$fix"))
            else:
                try:
                    parts.append(self.expression(code, field, m.group(1), want=""))
                except ZgenError as e:
                    raise ZgenError(e.message, help="`{...}` in a message is an expression; write `{{` and `}}` "
                                    "for literal braces") from None
            pos = m.end()
        parts.append(source[pos:])
        return Template(tuple(p for p in parts if p != ""), source)

    def rule(self, entry: dict) -> list[Rule]:
        known = {"code", "name", "severity", "summary", "doc", "require", "when", "message", "help", "anchor",
                 "deepspeed", "each", "example", "consumer"}
        code, name, severity, summary = self.header(entry, "rule")
        extra = set(entry) - known
        if extra:
            raise self.fail(code, f"unknown field(s) {', '.join(sorted(extra))}", hint=f"known: {', '.join(sorted(known))}")
        versions = self.text(entry, code, "deepspeed", required=False)
        if versions:
            try:
                version_in_range((0, 19, 8), versions)
            except ValueError as e:
                raise self.fail(code, str(e), "deepspeed") from None
        consumers = entry.get("consumer", [])
        if not isinstance(consumers, list) or not set(consumers) <= set(CONSUMERS):
            raise self.fail(code, f"must be a list of config readers ({', '.join(CONSUMERS)})", "consumer")
        each = entry.get("each", [None])
        if not isinstance(each, list) or not all(isinstance(k, str) or k is None for k in each):
            raise self.fail(code, "must be a list of config keys", "each")
        examples = self.examples(code, entry.get("example", []))
        out = []
        for key in each:
            def sub(s: str) -> str:
                return s.replace("$key", key) if key else s

            require_text = sub(self.text(entry, code, "require"))
            when_text = sub(self.text(entry, code, "when", required=False))
            require = self.expression(code, "require", require_text)
            when = self.expression(code, "when", when_text) if when_text else None
            message = self.template(code, "message", sub(self.text(entry, code, "message")))
            help_text = sub(self.text(entry, code, "help", required=False))
            anchor = sub(self.text(entry, code, "anchor", required=False))
            if anchor and self.table.resolve(anchor) is None:
                raise self.fail(code, f"`{anchor}` is not a config key zgen knows", "anchor")
            names = [self.table.resolve(n) for n in E.names_in(require) + (E.names_in(when) if when else [])]
            keys = tuple(dict.fromkeys(n for n in names if n))
            out.append(Rule(
                code=code, name=name, severity=severity, summary=summary,
                doc=self.text(entry, code, "doc", required=False), require=require, require_text=require_text,
                when=when, message=message, help=self.template(code, "help", help_text) if help_text else None,
                anchor=self.table.resolve(anchor) if anchor else "", versions=versions, source=self.path,
                keys=keys, examples=examples if key in (None, each[0]) else (),
                each=tuple(k for k in each if k), raw=(self.text(entry, code, "when", required=False),
                                                      self.text(entry, code, "require")),
                consumers=tuple(consumers),
            ))
        return out

    def examples(self, code: str, raw: object) -> tuple[Example, ...]:
        out = []
        for ex in _tables(raw, self.path, f"{code} example"):
            if ("bad" in ex) == ("good" in ex):
                raise self.fail(code, "an example needs exactly one of `bad` or `good`", "example")
            text = ex.get("bad", ex.get("good"))
            if not isinstance(text, str):
                raise self.fail(code, "example config must be a string", "example")
            facts = tuple(sorted((k, v) for k, v in ex.items() if k not in ("bad", "good")))
            out.append(Example(text, "bad" in ex, facts))
        return tuple(out)

    def derive(self, entry: dict) -> Derive:
        key = entry.get("key")
        if not isinstance(key, str) or self.table.resolve(key) is None:
            raise ZgenError(f"{self.path}:{self.line_of(str(key))}: derive key {key!r} is not a config key zgen knows")
        canonical = self.table.resolve(key)
        want = self.table.types[canonical]
        when_text = self.text(entry, key, "when", required=False)
        value = self.expression(key, "value", self.text(entry, key, "value"), want="")
        got = E.typecheck(value, self.table.type_of)[id(value)]
        if got != want and not (want == "real" and got == "int"):
            raise self.fail(key, f"is a {got} expression but `{key}` is a {want}", "value")
        return Derive(
            key=canonical,
            when=self.expression(key, "when", when_text) if when_text else None,
            value=value,
            explain=self.text(entry, key, "explain", required=False) or self.text(entry, key, "value"),
            source=self.path,
        )

    def code_doc(self, entry: dict) -> CodeDoc:
        code, name, severity, summary = self.header(entry, "code")
        return CodeDoc(code, name, severity, summary, self.text(entry, code, "doc", required=False),
                       self.examples(code, entry.get("example", [])))


def _tables(raw: object, path: str, what: str) -> list[dict]:
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise ZgenError(f"{path}: `{what}` must be an array of tables (`[[{what}]]`)")
    return raw


def version_in_range(version: tuple[int, int, int], spec: str) -> bool:
    """Whether `version` satisfies `spec` (`">=0.15,<0.19.8"`); ValueError for a bad spec."""
    ok = True
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(>=|<=|==|<|>)\s*(\d+)\.(\d+)(?:\.(\d+))?\s*", part)
        if m is None:
            raise ValueError(f"bad version range {spec!r}; write e.g. \">=0.15,<0.19.8\"")
        op, bound = m.group(1), (int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))
        ok &= {">=": version >= bound, "<=": version <= bound, "==": version == bound,
               "<": version < bound, ">": version > bound}[op]
    return ok
