"""Write `zgen/config/deepspeed_models.py`: every config section DeepSpeed validates strictly, with its fields.

DeepSpeed validates some sections with pydantic models (`DeepSpeedConfigModel`,
`extra="forbid"`) and reads the rest with `dict.get`. Which is which is not
picked by hand: for each top-level key DeepSpeed knows (its `runtime/constants.py`
names plus the ones zgen's schema lists), this script parses a config whose
section holds one unknown probe key, with `DeepSpeedConfigModel.__init__`
patched to record which model receives it. Nested models (ZeRO's offload
blocks, the monitors) come from the models' own field annotations.

Run it with the DeepSpeed release the data is for installed (the test extra pins
it): `python bench/configs/derive_models.py`. The output is committed; zgen never
imports DeepSpeed. `--check` exits 1 when the committed file differs from what
the installed DeepSpeed gives.
"""

from __future__ import annotations

import enum
import logging
import pprint
import sys
import typing
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "zgen" / "config" / "deepspeed_models.py"
PROBE = "zgen_probe_key"


def _candidates() -> list[str]:
    """Every lower-case identifier DeepSpeed's config code names as a constant, and zgen's section names."""
    import deepspeed.runtime.config  # noqa: F401  (loads every config module)

    from zgen.config.schema import schema_for

    names = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("deepspeed") and module is not None:
            names |= {v for k, v in vars(module).items() if k.isupper() and isinstance(v, str) and v.isidentifier()
                      and v.islower()}
    names |= {s.name for s in schema_for((0, 19, 8)).sections}
    return sorted(names)


def _probe(config: dict, recorded: list) -> type | None:
    """The model that received the probe key when DeepSpeed parsed `config`, if any."""
    from deepspeed.runtime.config import DeepSpeedConfig

    recorded.clear()
    try:
        DeepSpeedConfig(dict(config, train_batch_size=1))
    except Exception:  # the probe key is meant to be rejected where a model reads the section
        pass
    hits = [cls for cls, keys in recorded if PROBE in keys]
    return hits[0] if hits else None


def _strict_paths(candidates: list[str], recorded: list) -> dict[str, type]:
    """Dotted path -> model, for sections a model reads directly or one level inside a loosely read one."""
    found = {}
    for section in candidates:
        model = _probe({section: {PROBE: 1}}, recorded)
        if model is not None:
            found[section] = model
            continue
        # A loosely read section ignores unknown keys, so one parse finds whether any sub-key is a model.
        if _probe({section: {c: {PROBE: 1} for c in candidates}}, recorded) is None:
            continue
        for sub in candidates:
            model = _probe({section: {sub: {PROBE: 1}}}, recorded)
            if model is not None:
                found[f"{section}.{sub}"] = model
    return found


def _kind(annotation) -> tuple[str, tuple, bool]:
    """(kind, choices, nullable) in zgen's schema words for a pydantic annotation."""
    from deepspeed.runtime.config_utils import DeepSpeedConfigModel

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or str(origin) == "types.UnionType":
        inner = [a for a in args if a is not type(None)]
        kind, choices, _ = _kind(inner[0]) if len(inner) == 1 else ("any", (), False)
        return kind, choices, type(None) in args
    if origin is typing.Literal:
        return "enum", tuple(args), False
    if isinstance(annotation, type):
        if issubclass(annotation, DeepSpeedConfigModel):
            return "model", (), False
        if issubclass(annotation, enum.Enum):
            return "enum", tuple(m.value for m in annotation), False
        for py, word in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (dict, "dict"),
                         (list, "list"), (tuple, "list")):
            if issubclass(annotation, py):
                return word, (), False
    if origin in (dict, typing.Dict):
        return "dict", (), False
    if origin in (list, typing.List, tuple, set):
        return "list", (), False
    return "any", (), False


def _plain(value):
    if isinstance(value, enum.Enum):
        return value.value
    # DeepSpeed's `pp_int` prints as "500,000,000": keep plain Python values only.
    for py in (bool, int, float, str):
        if isinstance(value, py):
            return py(value)
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and not value:
        return {}
    return None


def _fields(model: type) -> dict:
    """name -> field facts, and nested models under their own names."""
    out = {}
    for name, info in model.model_fields.items():
        kind, choices, nullable = _kind(info.annotation)
        bounds = {}
        for m in info.metadata:
            for b in ("ge", "gt", "le", "lt"):
                if getattr(m, b, None) is not None:
                    bounds[b] = getattr(m, b)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        default = info.default if info.default is not ... else None
        facts = {
            "kind": kind,
            "default": _plain(default),
            "aliases": [info.alias] if info.alias and info.alias != name else [],
            "nullable": nullable or default is None,
        }
        if choices:
            facts["choices"] = list(choices)
        if bounds:
            facts["bounds"] = bounds
        if extra.get("deprecated"):
            facts["deprecated"] = extra.get("new_param", "") or True
        if kind == "model":
            sub = typing.get_args(info.annotation)
            sub = next((a for a in sub if a is not type(None)), info.annotation) if sub else info.annotation
            facts["fields"] = _fields(sub)
            facts["model"] = sub.__name__
        out[name] = facts
    return out


def main() -> int:
    import deepspeed
    from deepspeed import comm as dist
    from deepspeed.runtime.config_utils import DeepSpeedConfigModel

    logging.getLogger("DeepSpeed").setLevel(logging.CRITICAL)
    dist.get_rank = lambda *a, **k: 0
    dist.get_world_size = lambda *a, **k: 1
    recorded: list = []
    original = DeepSpeedConfigModel.__init__

    def spy(self, strict=False, **data):
        recorded.append((type(self), set(data)))
        original(self, strict=strict, **data)

    DeepSpeedConfigModel.__init__ = spy
    strict = {path: {"model": model.__name__, "fields": _fields(model)}
              for path, model in _strict_paths(_candidates(), recorded).items()}
    DeepSpeedConfigModel.__init__ = original
    body = pprint.pformat(strict, width=116, sort_dicts=True)
    text = (
        '"""The config sections DeepSpeed validates strictly, with their fields (generated; do not edit).\n\n'
        f"Written by `bench/configs/derive_models.py` from DeepSpeed {deepspeed.__version__}'s pydantic\n"
        "models: a section listed here rejects unknown keys and drops `\"auto\"`.\n"
        '"""\n\n'
        f'VERSION = "{deepspeed.__version__}"\n\n'
        f"MODELS: dict = {body}\n"
    )
    if "--check" in sys.argv[1:]:
        same = OUT.read_text() == text
        print(f"{OUT}: {'up to date' if same else 'differs from DeepSpeed ' + deepspeed.__version__}")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"{OUT}: {len(strict)} strict sections: {', '.join(sorted(strict))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
