"""Which program reads the config, inferred from the training scripts among the checked files.

The sources are read as text and parsed with `ast`; nothing is imported or run.
The signs, strongest reader first:

* `transformers.Trainer` / `TrainingArguments` (or a Trainer subclass from
  `trl`): HF Trainer fills the `"auto"` values (`hf`);
* `accelerate` (`Accelerator`, `DeepSpeedPlugin`): accelerate fills its list (`accelerate`);
* a call of `deepspeed.initialize`: DeepSpeed reads the file as written (`deepspeed`);
* an import of `zgen.runtime` (a script `zgen emit` wrote): zgen's runtime reads it (`zgen`).

HF Trainer itself calls accelerate and `deepspeed.initialize`, and a script using
it often imports accelerate helpers too, so the first sign found in that order wins.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Mapping

from zgen.launch import LaunchFacts

__all__ = ["Evidence", "infer_consumer", "with_consumer"]

_HF_NAMES = {"Trainer", "TrainingArguments", "Seq2SeqTrainer", "Seq2SeqTrainingArguments"}
_TRL_NAMES = {"SFTTrainer", "DPOTrainer", "GRPOTrainer", "PPOTrainer", "RewardTrainer", "SFTConfig", "DPOConfig",
              "GRPOConfig"}
_ORDER = ("hf", "accelerate", "deepspeed", "zgen")


@dataclass(frozen=True, slots=True)
class Evidence:
    """One sign of a reader: `consumer`, where (`path`, `line`) and what was seen."""

    consumer: str
    path: str
    line: int
    what: str


def infer_consumer(sources: Mapping[str, str]) -> Evidence | None:
    """The strongest sign among `sources` (path -> text), or None when no file shows a reader."""
    found: list[Evidence] = []
    for path in sorted(sources):
        text = sources[path]
        if text is None or not any(w in text for w in ("transformers", "trl", "accelerate", "deepspeed", "zgen")):
            continue
        try:
            tree = ast.parse(text, filename=path)
        except (SyntaxError, ValueError):
            continue
        found.extend(_signs(path, tree))
    if not found:
        return None
    return min(found, key=lambda e: (_ORDER.index(e.consumer), e.path, e.line))


def with_consumer(facts: LaunchFacts, sources: Mapping[str, str]) -> LaunchFacts:
    """`facts` with the reader inferred from `sources` when none was given (unchanged otherwise)."""
    if facts.consumer is not None:
        return facts
    sign = infer_consumer(sources)
    if sign is None:
        return facts
    return replace(facts, consumer=sign.consumer, consumer_reason=f"{sign.path}:{sign.line} {sign.what}")


def _signs(path: str, tree: ast.AST) -> list[Evidence]:
    out: list[Evidence] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            names = {a.name for a in node.names}
            if root == "transformers" and names & _HF_NAMES:
                out.append(Evidence("hf", path, node.lineno, f"imports `transformers.{sorted(names & _HF_NAMES)[0]}`"))
            elif root == "trl" and names & _TRL_NAMES:
                out.append(Evidence("hf", path, node.lineno, f"imports `trl.{sorted(names & _TRL_NAMES)[0]}` "
                                    "(an HF Trainer)"))
            elif root == "accelerate":
                out.append(Evidence("accelerate", path, node.lineno, f"imports `{node.module}`"))
            elif root == "deepspeed" and "initialize" in names:
                out.append(Evidence("deepspeed", path, node.lineno, "imports `deepspeed.initialize`"))
            elif node.module.startswith("zgen.runtime") or (node.module == "zgen" and "runtime" in names):
                out.append(Evidence("zgen", path, node.lineno, f"imports `{node.module}` (zgen's runtime)"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "accelerate":
                    out.append(Evidence("accelerate", path, node.lineno, "imports `accelerate`"))
                elif alias.name.startswith("zgen.runtime"):
                    out.append(Evidence("zgen", path, node.lineno, f"imports `{alias.name}` (zgen's runtime)"))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "transformers" and node.attr in _HF_NAMES:
                out.append(Evidence("hf", path, node.lineno, f"uses `transformers.{node.attr}`"))
            elif node.value.id == "deepspeed" and node.attr == "initialize":
                out.append(Evidence("deepspeed", path, node.lineno, "calls `deepspeed.initialize`"))
    return out
