"""Check a parsed config against DeepSpeed's key schema and collect its values.

The walk reports what DeepSpeed would reject or silently ignore while parsing
(unknown keys with a did-you-mean, wrong types, out-of-range values, removed and
deprecated keys, `"auto"` that nothing fills) and produces `ConfigValues`: every
written value, coerced the way DeepSpeed coerces it, under its canonical dotted
key, with the span of the key. The solver and the resolver read only that.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

from zgen.config.autofill import describe, fill_for
from zgen.config.parse import Entry, Node, Span
from zgen.config.schema import (
    DEEPSPEED_OPTIMIZERS,
    OPTIMIZER_PARAMS,
    PYDANTIC_V2,
    REMOVALS,
    REMOVED_OPTIMIZERS,
    SCHEDULER_PARAMS,
    TORCH_OPTIMIZERS,
    TORCH_SCHEDULERS,
    Key,
    Section,
    Version,
)
from zgen.findings import Severity

__all__ = ["AUTO", "Setting", "Problem", "ConfigValues", "validate"]


class _Auto:
    """The `"auto"` placeholder: a value the config's reader fills in before DeepSpeed sees it."""

    def __repr__(self) -> str:
        return '"auto"'


AUTO = _Auto()


@dataclass(frozen=True, slots=True)
class Setting:
    """A value the user wrote. `key` is canonical, `written` is the path as spelled in the file.

    `state` is `user` (a usable value), `auto` (to be solved; `fill` says what
    fills it and `assumed` is the filler's default, None when it depends on the
    run) or `invalid` (reported already; its value is unknown).
    """

    key: str
    written: str
    value: object
    span: Span
    state: str = "user"
    fill: str = ""
    assumed: object = None


@dataclass(frozen=True, slots=True)
class Problem:
    """A finding without a path yet: `code`, message, help, and where."""

    code: str
    message: str
    span: Span
    key: str
    help: str | None = None
    severity: Severity | None = None
    rename: str = ""  # the one key the written one is a typo of, when renaming it is the fix


@dataclass
class ConfigValues:
    """The written values by canonical key, the sections present, the schema and the reader they were read for."""

    version: Version
    schema: Section
    consumer: str = "hf"
    settings: dict[str, Setting] = field(default_factory=dict)
    sections: dict[str, Span] = field(default_factory=dict)

    def has(self, key: str) -> bool:
        """Whether `key` is written with a value (`null` reads as absent, as `dict.get` does in DeepSpeed)."""
        s = self.settings.get(key)
        if s is not None:
            return not (s.state == "user" and s.value is None)
        return key in self.sections

    def span_of(self, key: str) -> Span | None:
        """The span of `key`, else of its nearest written parent section."""
        if key in self.settings:
            return self.settings[key].span
        while key:
            if key in self.sections:
                return self.sections[key]
            key = key.rpartition(".")[0]
        return None


def _fmt(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _closest(word: str, choices) -> str | None:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return match[0] if match else None


def _unique_close(word: str, choices) -> bool:
    """Whether exactly one of `choices` is close to `word` (a typo with one reading)."""
    return len(difflib.get_close_matches(word, list(choices), n=2, cutoff=0.75)) == 1


# -- pydantic v2 lax-mode coercions (strict sections) ---------------------------------------------

_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


def _as_bool(v: object) -> tuple[bool, object]:
    if isinstance(v, bool):
        return True, v
    if isinstance(v, int) and v in (0, 1):
        return True, bool(v)
    if isinstance(v, float) and v in (0.0, 1.0):
        return True, bool(v)
    if isinstance(v, str) and v.lower() in _TRUE | _FALSE:
        return True, v.lower() in _TRUE
    return False, None


def _as_int(v: object, pydantic_v2: bool) -> tuple[bool, object, str]:
    """(ok, value, why-not). `why-not` is `fraction` for a float with a fractional part."""
    if isinstance(v, bool):
        return True, int(v), ""
    if isinstance(v, int):
        return True, v, ""
    if isinstance(v, float):
        if not math.isfinite(v):
            return False, None, "not a finite number"
        if v != int(v):
            return (False, None, "fraction") if pydantic_v2 else (True, int(v), "fraction")
        if abs(v) >= 2**63:
            return False, None, "too large"
        return True, int(v), ""
    if isinstance(v, str):
        try:
            return True, int(v.strip()), ""
        except ValueError:
            return False, None, "not an integer"
    return False, None, "not an integer"


def _as_float(v: object) -> tuple[bool, object]:
    if isinstance(v, bool):
        return True, float(v)
    if isinstance(v, (int, float)):
        try:
            return True, float(v)
        except OverflowError:
            return False, None
    if isinstance(v, str):
        try:
            return True, float(v.strip())
        except ValueError:
            return False, None
    return False, None


_KIND_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "path": "a path string",
    "list": "a list",
    "dict": "an object",
    "enum": "one of",
}


class _Walker:
    def __init__(self, schema: Section, version: Version, consumer: str) -> None:
        self.values = ConfigValues(version, schema, consumer=consumer)
        self.problems: list[Problem] = []
        self.v2 = version >= PYDANTIC_V2
        self.all_paths = _all_paths(schema)
        self.siblings: set[str] = set()  # keys written next to the one being checked

    def problem(self, code: str, message: str, span: Span, key: str, help: str | None = None,
                severity: Severity | None = None, rename: str = "") -> None:
        self.problems.append(Problem(code, message, span, key, help, severity, rename))

    # -- sections -------------------------------------------------------
    def section(self, node: Node, section: Section, path: str) -> None:
        outer = self.siblings
        self.siblings = {e.key for e in node.entries}
        self._section(node, section, path)
        self.siblings = outer

    def _section(self, node: Node, section: Section, path: str) -> None:
        written_by_key: dict[str, str] = {}
        for entry in node.entries:
            dotted = f"{path}.{entry.key}" if path else entry.key
            if entry.key in section.section_index:
                sub = section.section_index[entry.key]
                self.subsection(entry, sub, dotted, section)
                continue
            key = section.key_index.get(entry.key)
            if key is None:
                self.unknown(entry, section, path, dotted)
                continue
            canonical = f"{path}.{key.name}" if path else key.name
            if key.name in written_by_key and written_by_key[key.name] != entry.key:
                other = written_by_key[key.name]
                self.problem("ZC017", f"`{dotted}` and `{_join(path, other)}` are two spellings of one setting",
                             entry.key_span, dotted, help=f"keep only `{_join(path, key.name)}`")
                continue
            written_by_key[key.name] = entry.key
            self.scalar(entry, key, section, canonical, dotted)

    def subsection(self, entry: Entry, sub: Section, dotted: str, parent: Section) -> None:
        node = entry.value
        if sub.removed:
            self.problem("ZC016", f"`{dotted}` is no longer supported: {sub.removed}", entry.key_span, dotted,
                         help=f"remove `{dotted}` (DeepSpeed {_v(self.values.version)} raises an error on it)")
            return
        if sub.deprecated:
            self.problem("ZC015", f"`{dotted}` is deprecated", entry.key_span, dotted, help=sub.deprecated,
                         severity=Severity.WARNING)
        if node.kind == "string" and node.value == "auto":
            # Inside a pydantic model the key is dropped; a section DeepSpeed unpacks itself (`Model(**value)`)
            # fails on the string.
            if parent.mode == "strict" or dotted in _MONITORS:
                self.problem("ZC022", f"`{dotted}` is \"auto\", which {self.nobody()} fills: DeepSpeed drops it and "
                             "the section keeps its defaults", entry.key_span, dotted,
                             help=f"write the `{dotted}` settings explicitly or remove the key")
            else:
                self.problem("ZC020", f"`{dotted}` is \"auto\", which {self.nobody()} fills: DeepSpeed reads the "
                             "section as an object and fails on the string", entry.key_span, dotted,
                             help=f"write the `{dotted}` settings as an object or remove the key")
            return
        if node.kind == "bool" and sub.bool_form:
            stage = 1 if node.value else 0
            self.problem("ZC015", f"`{dotted}: {_fmt(node.value)}` is a deprecated form (ZeRO stage {stage})",
                         entry.key_span, dotted, help=f'write `"{dotted}": {{"stage": {stage}}}`',
                         severity=Severity.WARNING)
            self.values.sections[dotted] = entry.key_span
            self.values.settings[f"{dotted}.stage"] = Setting(f"{dotted}.stage", dotted, stage, entry.key_span)
            return
        if node.kind == "null" and sub.nullable:
            return
        if node.kind != "object":
            self.problem("ZC012", f"`{dotted}` must be an object, not {_describe(node)}", entry.key_span, dotted,
                         help=f"write `\"{entry.key}\": {{...}}`")
            return
        self.values.sections[dotted] = entry.key_span
        if sub.mode == "opaque":
            return
        if sub.replaced_by:
            if self.values.has(sub.replaced_by):
                return  # DeepSpeed reads the new section and ignores the old one
            dotted = sub.replaced_by
            self.values.sections[dotted] = entry.key_span
        self.section(node, sub, dotted)

    def unknown(self, entry: Entry, section: Section, path: str, dotted: str) -> None:
        where = f"`{path}`" if path else "the top level"
        if entry.key.startswith("_"):
            self.comment_key(entry, section, dotted, where)
            return
        guess = _closest(entry.key, section.names())
        # Renaming is the fix only when one name is close and it is not written already.
        rename = guess if guess is not None and _unique_close(entry.key, section.names()) and \
            guess not in self.siblings else ""
        if guess is not None:
            hint = f"did you mean `{_join(path, guess)}`?"
        else:
            elsewhere = [p for p in self.all_paths if p.rpartition(".")[2] == entry.key and p != dotted]
            hint = f"it belongs at `{elsewhere[0]}`" if elsewhere else ""
        if section.mode == "strict" and entry.value.kind == "string" and entry.value.value == "auto":
            # DeepSpeedConfigModel drops "auto" values before pydantic sees the keys: no rejection, no effect.
            self.problem("ZC011", f"`{dotted}` is not a key DeepSpeed accepts in {where}; its value \"auto\" makes "
                         "DeepSpeed drop it silently", entry.key_span, dotted, help=hint or f"remove `{dotted}`",
                         severity=Severity.WARNING, rename=rename)
        elif section.mode == "strict":
            self.problem("ZC010", f"`{dotted}` is not a key DeepSpeed accepts in {where}; it rejects the config",
                         entry.key_span, dotted, help=hint or f"remove `{dotted}`", rename=rename)
        else:
            self.problem("ZC011", f"`{dotted}` is not a key DeepSpeed reads in {where}; it is silently ignored",
                         entry.key_span, dotted, help=hint or f"remove `{dotted}` or fix its name",
                         severity=Severity.WARNING, rename=rename)

    def comment_key(self, entry: Entry, section: Section, dotted: str, where: str) -> None:
        """`"_comment": ...` is the JSON comment idiom: silent where DeepSpeed ignores unknown keys.

        No did-you-mean: the key was never meant as a setting. A strict section
        still rejects it, so there it stays an error, with a help that says where
        a comment can go instead.
        """
        if section.mode == "strict":
            self.problem("ZC010", f"`{dotted}` is not a key DeepSpeed accepts in {where}; it rejects the config, "
                         "comment keys included", entry.key_span, dotted,
                         help="move the comment to the top level, or use a `//` comment (DeepSpeed reads hjson)")

    # -- scalars ---------------------------------------------------------
    def scalar(self, entry: Entry, key: Key, section: Section, canonical: str, dotted: str) -> None:
        node, span = entry.value, entry.key_span
        if key.removed:
            self.problem("ZC016", f"`{dotted}` is no longer supported: {key.removed}", span, dotted,
                         help=f"remove `{dotted}` (DeepSpeed {_v(self.values.version)} raises an error on it)")
            return
        if key.deprecated:
            self.problem("ZC015", f"`{dotted}` is deprecated", span, dotted, help=key.deprecated,
                         severity=Severity.WARNING)
        if node.kind == "string" and node.value == "auto" and key.kind not in ("str", "any"):
            self.auto(entry, key, section, canonical, dotted)
            return
        ok, value = self.coerce(node, key, section, dotted, span)
        if not ok:
            self.values.settings[canonical] = Setting(canonical, dotted, None, span, "invalid")
            return
        if key.replaced_by:
            self.deprecated_value(key, value, canonical, dotted, span)
            return
        self.values.settings[canonical] = Setting(canonical, dotted, value, span)

    def deprecated_value(self, key: Key, value: object, canonical: str, dotted: str, span: Span) -> None:
        target = key.replaced_by
        # DeepSpeed refuses the pair whatever the order or value (even `null`) of the replacement.
        names = {target.rpartition(".")[2]}
        spec = self.values.schema.section_index.get("zero_optimization")
        replacement = spec.key_index.get(target.rpartition(".")[2]) if spec else None
        if replacement is not None:
            names.update(replacement.aliases)
        if names & self.siblings:
            self.problem("ZC017", f"`{dotted}` and its replacement `{target}` are both set", span, dotted,
                         help=f"keep only `{target}`")
            return
        if target.endswith(("offload_optimizer", "offload_param")):
            if value:
                self.values.sections[target] = span
                self.values.settings[f"{target}.device"] = Setting(f"{target}.device", dotted, "cpu", span)
            return
        self.values.settings[target] = Setting(target, dotted, value, span)

    def nobody(self) -> str:
        """Who leaves an `"auto"` in place, for messages: `nothing` or `nothing under HF Trainer`."""
        consumer = self.values.consumer
        return "nothing" if consumer == "deepspeed" else f"nothing under {describe(consumer)}"

    def auto(self, entry: Entry, key: Key, section: Section, canonical: str, dotted: str) -> None:
        span = entry.key_span
        fill = fill_for(self.values.consumer, canonical)
        if fill is not None:
            self.values.settings[canonical] = Setting(canonical, dotted, AUTO, span, "auto", fill.source, fill.value)
            return
        if section.mode == "strict":
            # pydantic's DeepSpeedConfigModel drops "auto" before validating: the default applies, silently.
            self.problem("ZC022", f"`{dotted}` is \"auto\", which {self.nobody()} fills: DeepSpeed drops it and "
                         f"uses the default {_fmt(key.default)}{_default_note(canonical, key.default)}", span, dotted,
                         help=f"write the value you want for `{dotted}`, or `{_fmt(key.default)}` to keep the default")
        else:
            self.problem("ZC020", f"`{dotted}` is \"auto\", which {self.nobody()} fills: DeepSpeed reads the string "
                         f"\"auto\" as the value{_string_failure(canonical)}", span, dotted,
                         help=f"write the value you want for `{dotted}`")
            self.values.settings[canonical] = Setting(canonical, dotted, None, span, "invalid")

    def coerce(self, node: Node, key: Key, section: Section, dotted: str, span: Span) -> tuple[bool, object]:
        v = node.value if node.kind not in ("object", "array") else None
        if node.kind == "null":
            if key.nullable or key.kind == "any":
                return True, None
            return self.bad_type(key, node, dotted, span)
        if key.kind == "any":
            return True, v
        if key.kind in ("list", "dict"):
            want = "array" if key.kind == "list" else "object"
            return (True, node) if node.kind == want else self.bad_type(key, node, dotted, span)
        if node.kind in ("object", "array"):
            return self.bad_type(key, node, dotted, span)
        strict = section.mode == "strict"
        if key.no_bool and isinstance(v, bool):
            return self.bad_type(key, node, dotted, span)
        if key.kind == "bool":
            if not strict:
                if isinstance(v, bool) or (isinstance(v, int) and v in (0, 1)):
                    return True, bool(v)
                return self.bad_type(key, node, dotted, span)
            ok, value = _as_bool(v)
            return (True, value) if ok else self.bad_type(key, node, dotted, span)
        if key.kind in ("int", "enum") and (key.kind == "int" or isinstance(key.choices[0], int)):
            if not strict and (isinstance(v, bool) or not isinstance(v, int)):
                return self.bad_type(key, node, dotted, span)
            ok, value, why = _as_int(v, self.v2)
            if why == "fraction":
                if ok:
                    self.problem("ZC014", f"`{dotted}` is {_fmt(v)}, not an integer; DeepSpeed "
                                 f"{_v(self.values.version)} truncates it to {value}", span, dotted,
                                 help=f"write an integer, e.g. {int(v)}", severity=Severity.WARNING)
                else:
                    self.problem("ZC014", f"`{dotted}` is {_fmt(v)}, not an integer; DeepSpeed rejects "
                                 "a number with a fractional part here", span, dotted,
                                 help=f"write an integer, e.g. {int(v)}")
                    return False, None
            elif not ok:
                return self.bad_type(key, node, dotted, span)
            return self.in_range(key, value, dotted, span)
        if key.kind == "float":
            if not strict and (isinstance(v, bool) or not isinstance(v, (int, float))):
                return self.bad_type(key, node, dotted, span)
            ok, value = _as_float(v)
            return self.in_range(key, value, dotted, span) if ok else self.bad_type(key, node, dotted, span)
        # str, path, enum of strings
        if not isinstance(v, str):
            return self.bad_type(key, node, dotted, span)
        if key.kind == "enum" and v not in key.choices:
            close = _closest(v, [str(c) for c in key.choices]) or _closest(v.lower(), [str(c) for c in key.choices])
            self.problem("ZC013", f"`{dotted}` is {_fmt(v)}; DeepSpeed accepts only "
                         f"{', '.join(_fmt(c) for c in key.choices)}", span, dotted,
                         help=f"did you mean {_fmt(close)}?" if close else "use one of the accepted values")
            return False, None
        return True, v

    def in_range(self, key: Key, value: object, dotted: str, span: Span) -> tuple[bool, object]:
        checks = (
            (key.gt, lambda b: value > b, "greater than"),
            (key.ge, lambda b: value >= b, "at least"),
            (key.le, lambda b: value <= b, "at most"),
        )
        for bound, holds, words in checks:
            if bound is not None and not holds(bound):
                self.problem("ZC013", f"`{dotted}` is {_fmt(value)}; DeepSpeed requires it to be {words} "
                             f"{_fmt(bound)}", span, dotted, help=f"set `{dotted}` to a value {words} {_fmt(bound)}")
                return False, None
        if key.choices and value not in key.choices:
            self.problem("ZC013", f"`{dotted}` is {_fmt(value)}; DeepSpeed accepts only "
                         f"{', '.join(_fmt(c) for c in key.choices)}", span, dotted,
                         help="use one of the accepted values")
            return False, None
        return True, value

    def bad_type(self, key: Key, node: Node, dotted: str, span: Span) -> tuple[bool, object]:
        want = _KIND_WORDS.get(key.kind, key.kind)
        if key.kind == "enum":
            want = "one of " + ", ".join(_fmt(c) for c in key.choices)
        self.problem("ZC012", f"`{dotted}` must be {want}, not {_describe(node)}", span, dotted,
                     help=f"write {want} for `{dotted}`")
        return False, None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _v(version: Version) -> str:
    return ".".join(map(str, version))


def _default_note(canonical: str, default: object) -> str:
    if canonical == "zero_optimization.stage":
        return " (ZeRO off)"
    if canonical in ("fp16.enabled", "bf16.enabled"):
        return " (the run trains in fp32 unless the other precision is on)"
    if canonical.endswith(".device"):
        return " (no offload)"
    return ""


# Top-level sections DeepSpeed hands to one pydantic model together (`DeepSpeedMonitorConfig`), which drops "auto".
_MONITORS = {"tensorboard", "wandb", "csv_monitor", "comet"}

# What DeepSpeed does with the string "auto" in a key it reads with `dict.get` (runtime/config.py, engine.py).
_STRING_FAILURES = {
    "train_batch_size": "; `_batch_assertion` compares it with 0 and fails with a TypeError before training",
    "train_micro_batch_size_per_gpu": "; `_batch_assertion` compares it with 0 and fails with a TypeError before "
    "training",
    "gradient_accumulation_steps": "; `_batch_assertion` compares it with 0 and fails with a TypeError before training",
    "gradient_clipping": "; the first optimizer step compares it with 0 and fails with a TypeError",
}


def _string_failure(canonical: str) -> str:
    return _STRING_FAILURES.get(canonical, "")


def _describe(node: Node) -> str:
    if node.kind == "object":
        return "an object"
    if node.kind == "array":
        return "a list"
    if node.kind == "number":
        return f"the number {_fmt(node.value)}"
    if node.kind == "bool":
        return _fmt(node.value)
    if node.kind == "null":
        return "null"
    return f"the string {_fmt(node.value)}"


def _all_paths(section: Section, prefix: str = "") -> list[str]:
    out: list[str] = []
    for key in section.keys:
        out.append(_join(prefix, key.name))
    for sub in section.sections:
        out.append(_join(prefix, sub.name))
        out.extend(_all_paths(sub, _join(prefix, sub.name)))
    return out


# -- optimizer and scheduler parameters -------------------------------------------------------------


def _check_named_block(walker: _Walker, root: Node) -> None:
    """Optimizer/scheduler `type` and `params`, which DeepSpeed passes on as keyword arguments."""
    for block in ("optimizer", "scheduler"):
        entry = root.get(block)
        if entry is None or entry.value.kind != "object":
            continue
        type_entry = entry.value.get("type")
        params_entry = entry.value.get("params")
        name = type_entry.value.value if type_entry is not None and type_entry.value.kind == "string" else None
        known = _check_type(walker, block, type_entry, name)
        if block == "optimizer":
            table = OPTIMIZER_PARAMS.get(name.lower()) if known and name else None
            required: tuple[str, ...] = ()
        else:
            spec = SCHEDULER_PARAMS.get(name) if known and name else None
            required, table = (spec[0], spec[0] + spec[1]) if spec else ((), None)
        if params_entry is None:
            if required:
                _missing(walker, block, name, required, type_entry.key_span, set())
            continue
        if params_entry.value.kind != "object":
            if params_entry.value.kind != "null":
                walker.problem("ZC012", f"`{block}.params` must be an object, not {_describe(params_entry.value)}",
                               params_entry.key_span, f"{block}.params", help="write `\"params\": {...}`")
            continue
        written = set()
        for p in params_entry.value.entries:
            dotted = f"{block}.params.{p.key}"
            written.add(p.key)
            if table is not None and p.key not in table:
                guess = _closest(p.key, table)
                walker.problem("ZC018", f"`{dotted}` is not a parameter of {block} `{name}`; DeepSpeed passes it "
                               "on and the engine fails with a TypeError at start-up", p.key_span, dotted,
                               help=f"did you mean `{block}.params.{guess}`?" if guess else f"remove `{dotted}`")
            value = p.value.value if p.value.kind not in ("object", "array") else None
            if p.value.kind == "string" and value == "auto":
                fill = fill_for(walker.values.consumer, dotted)
                if fill is None:
                    walker.problem("ZC020", f"`{dotted}` is \"auto\", which {walker.nobody()} fills: the {block} "
                                   "receives the string \"auto\" and fails when the engine starts", p.key_span,
                                   dotted, help=f"write the value for `{dotted}`")
                else:
                    walker.values.settings[dotted] = Setting(dotted, dotted, AUTO, p.key_span, "auto", fill.source,
                                                             fill.value)
            elif p.value.kind in ("number", "bool", "string"):
                walker.values.settings[dotted] = Setting(dotted, dotted, value, p.key_span)
            elif p.value.kind == "array":
                walker.values.settings[dotted] = Setting(dotted, dotted, [i.value for i in p.value.items], p.key_span)
        if required:
            _missing(walker, block, name, required, params_entry.key_span, written)


def _missing(walker: _Walker, block: str, name: str, required, span: Span, written: set[str]) -> None:
    for arg in required:
        if arg not in written:
            walker.problem("ZC019", f"{block} `{name}` needs `{block}.params.{arg}`; without it the engine fails "
                           "at start-up", span, f"{block}.params", help=f"add `\"{arg}\": ...` to `{block}.params`")


# What DeepSpeed can build for `optimizer.type` / `scheduler.type`: (is it known, names to suggest, what, example).
_BUILDERS = {
    "optimizer": (lambda n: n.lower() in DEEPSPEED_OPTIMIZERS or n in TORCH_OPTIMIZERS,
                  [*TORCH_OPTIMIZERS, *DEEPSPEED_OPTIMIZERS], "a DeepSpeed optimizer nor a `torch.optim` class", "AdamW"),
    "scheduler": (lambda n: n in SCHEDULER_PARAMS or n in TORCH_SCHEDULERS,
                  [*SCHEDULER_PARAMS, *TORCH_SCHEDULERS],
                  "a DeepSpeed scheduler nor a `torch.optim.lr_scheduler` class", "WarmupLR"),
}


def _check_type(walker: _Walker, block: str, entry: Entry | None, name: object) -> bool:
    """Record `<block>.type` and whether DeepSpeed can build it (ZC012/ZC020/ZC021 otherwise)."""
    if entry is None or entry.value.kind == "null":
        return False
    known, names, what, example = _BUILDERS[block]
    key = f"{block}.type"
    if not isinstance(name, str):
        walker.problem("ZC012", f"`{key}` must be a string, not {_describe(entry.value)}", entry.key_span, key,
                       help=f'write a name such as "{example}"')
        return False
    if name == "auto":
        walker.problem("ZC020", f"`{key}` is \"auto\", which nothing fills", entry.key_span, key,
                       help=f'write a name such as "{example}"')
        return False
    walker.values.settings[key] = Setting(key, key, name, entry.key_span)
    if known(name):
        return True
    if block == "optimizer" and name.lower() in REMOVED_OPTIMIZERS:
        if walker.values.version < REMOVALS:
            return True
        walker.problem("ZC021", f"`{key}` \"{name}\": DeepSpeed {_v(walker.values.version)} removed the 1-bit "
                       "optimizers; the engine fails at start-up", entry.key_span, key,
                       help='use "AdamW", or check against an older release with `--deepspeed-version`')
        return False
    guess = _closest(name, names) or _closest(name.lower(), [n.lower() for n in names])
    walker.problem("ZC021", f"`{key}` \"{name}\" is neither {what}; the engine fails at start-up", entry.key_span,
                   key, help=f'did you mean "{guess}"?' if guess else f'use e.g. "{example}"')
    return False


def _check_choices(walker: _Walker) -> None:
    """String settings DeepSpeed compares against a fixed set after normalising case."""
    table = {
        "gradient_allreduce_op": (str.lower, ("mean", "sum")),
        "communication_data_type": (str.lower, ("fp16", "bf16", "fp32")),
        "seq_parallel_communication_data_type": (str.lower, ("fp16", "bf16", "fp32")),
        "checkpoint.tag_validation": (str.upper, ("WARN", "IGNORE", "FAIL")),
    }
    for key, (norm, allowed) in table.items():
        s = walker.values.settings.get(key)
        if s is None or s.state != "user" or s.value is None:
            continue
        if norm(s.value) not in allowed:
            walker.problem("ZC013", f"`{s.written}` is {_fmt(s.value)}; DeepSpeed accepts only "
                           f"{', '.join(_fmt(a) for a in allowed)} (any case)", s.span, s.written,
                           help="use one of the accepted values")
            walker.values.settings[key] = Setting(key, s.written, None, s.span, "invalid")
        else:
            walker.values.settings[key] = Setting(key, s.written, norm(s.value), s.span)


def validate(root: Node, schema: Section, version: Version, consumer: str = "hf") -> tuple[ConfigValues, list[Problem]]:
    """Walk `root` (an object node) against `schema` as `consumer` hands it to DeepSpeed; see the module docstring."""
    walker = _Walker(schema, version, consumer)
    top = Node("object", root.span, entries=tuple(e for e in root.entries if e.key not in ("optimizer", "scheduler")))
    # The precision sections first so `bfloat16` knows whether `bf16` is present.
    ordered = sorted(top.entries, key=lambda e: e.key != "bf16")
    walker.section(Node("object", root.span, entries=tuple(ordered)), schema, "")
    for block in ("optimizer", "scheduler"):
        entry = root.get(block)
        if entry is None:
            continue
        sub = schema.section_index[block]
        node = entry.value
        if node.kind != "object":
            walker.problem("ZC012", f"`{block}` must be an object, not {_describe(node)}", entry.key_span, block,
                           help=f"write `\"{block}\": {{\"type\": ..., \"params\": {{...}}}}`")
            continue
        walker.values.sections[block] = entry.key_span
        for e in node.entries:
            if e.key not in ("type", "params"):
                walker.section(Node("object", node.span, entries=(e,)), sub, block)
    _check_named_block(walker, root)
    _check_choices(walker)
    return walker.values, walker.problems
