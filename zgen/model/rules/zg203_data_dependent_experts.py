"""ZG203: only the submodules selected by this rank's data run (hit-only MoE experts)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..analysis.divergence import GATE, ITERATE, PICK, SKIP, message
from ..analysis.script import divergences, script_divergences
from ..analysis.state import state_trigger
from ..analysis.taint import (
    DATA, ITEM_COUNTS, VALUE_REDUCTIONS, extent_exit_text, output_test_text, stored_sample_text,
)
from ..program.index import ModelIndex
from ..program.tree import code_of
from ..program.trigger import Remembered
from .rule import Report, Rule

# Data-dependent selections; `where` only with one argument (the index form).
_SELECTION_WORDS = (" not in ", ".shape[0]", ".size(0)", ".numel()", "nonzero", "unique", "argwhere", "masked_select", "bincount", ".item()",
                    ".any(", ".all(", "torch.equal", "where(", "all(", "any(", "sum(", "mean(", "max(", "min(", "norm(",
                    "std(")
# Names that are a selection wherever they occur.
_SELECTION_NAMES = ("nonzero", "unique", "argwhere", "masked_select", "bincount", ".any(", ".all(", "torch.equal")
# The selections that need a pattern, each after the text it cannot match without (one alternation over
# all of them tried every pattern at every position of every method).
_SELECTION_PATTERNS = (
    (("where(",), re.compile(r"where(?<!\wwhere)\((?:[^,()]|\([^()]*\))*\)")),
    (("all(", "any("), re.compile(r"(?<![\w.])(?:all|any)\([\w.]+\(")),
    (("sum(", "mean(", "max(", "min(", "norm(", "std("),
     re.compile(r"\.(?:sum|mean|max|min|amax|amin|norm|count_nonzero|std)\((?:[^()\n]|\([^()\n]*\))*\)(?:\.item\(\))?\)*\s*(?:[<>]=?|==|!=)")),
    # one value read into a number, compared (`labels.item() > 0`) or kept (`n_pos = int((labels > 0).sum())`)
    ((".item()", ".sum(", ".mean(", ".max(", ".min(", ".norm(", ".count_nonzero("), re.compile(
        r"\.item\(\)\)*\s*(?:[<>]=?|==|!=)|^[ \t]*\w+\s*=\s*(?:int|float)\([^\n]*\.(?:sum|mean|max|min|norm|count_nonzero)\(",
        re.M,
    )),
    # a key missing from an input mapping (`if key not in feats`), the batch size tested against 0 or 1
    (("not",), re.compile(r"if(?<!\wif)\b[^\n]*\bnot\s+in\s+\w+\s*:")),  # `\bif`, the word first (10x faster)
    ((".numel()",), re.compile(r"\.numel\(\)\s*(?:==|<=?)\s*0\b")),  # `x.numel() == 0`: an empty tensor on this rank
    ((".shape[0]", ".size(0)"), re.compile(
        r"(?:\.shape\[0\]|\.size\(0\))\s*(?:[<>]=?|[=!]=)\s*[01]\b|\b[01]\s*(?:[<>]=?|[=!]=)\s*[\w.]+(?:\.shape\[0\]|\.size\(0\))"
        r"|(?:\.shape\[0\]|\.size\(0\))\s*%\s*\d+\s*[=!]="  # `x.size(0) % 2 == 0`: a batch of an even size
    )),
    # an extent tested against 0 (`edge_index.shape[1] == 0`): whether this rank's input holds any at all
    ((".shape[", ".size("), re.compile(r"(?:\.shape\[-?\d\]|\.size\(-?\d\))\s*(?:[=!]=|>)\s*0\b")),
    # the batch size ordered against a setting (`x.size(0) > self.max_batch`: `taint._batch_limit_test`)
    ((".shape[0]", ".size(0)"), re.compile(
        r"(?:\.shape\[0\]|\.size\(0\))\s*[<>]=?\s*[A-Za-z_]|[A-Za-z_][\w.]*\s*[<>]=?\s*[\w.]+(?:\.shape\[0\]|\.size\(0\))"
    )),
)


# `b = x.shape[0]`, `b, n = x.shape[:2]`, `b, *_ = x.size()`: a local bound to the batch size (its first name)
_BATCH_LOCAL = re.compile(r"^\s*(\w+)\s*(?:,[^=\n]*)?=\s*[\w.]+\.(?:shape\b|size\()", re.M)


def _has_selection(text: str) -> bool:
    """A data-dependent selection in `text`: one of the words, then a name or a pattern it needs."""
    if any(word in text for word in _SELECTION_WORDS) and (
        any(name in text for name in _SELECTION_NAMES)
        or any(any(w in text for w in words) and pattern.search(text) for words, pattern in _SELECTION_PATTERNS)
    ):
        return True
    return _tests_batch_local(text) or _tests_selected_count(text) or _tests_reduced_local(text) or _masks_index(text)


# `boxes[scores > t]`, `x[labels == c]` (one level of brackets inside: `x[x[:, 0] > 0.5]`): an index by a mask of values
_MASK_INDEX = re.compile(
    r"\w\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*?\s(?:[<>]=?|[=!]=)\s(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]"
)
# `keep = scores > t` (... `boxes[keep]`): a local bound to a comparison of values
_MASK_LOCAL = re.compile(r"^[ \t]*(\w+)[ \t]*=[^\n=]*?\s(?:[<>]=?|[=!]=)\s", re.M)


def _masks_index(text: str) -> bool:
    """Is a value indexed by a mask of values (`boxes[scores > t]`, `x[keep]` for `keep = scores > t`): as many items
    as this rank's values pass (`taint.mask_expression`)?"""
    if _MASK_INDEX.search(text):
        return True
    return any(re.search(rf"\[\s*~?\(?{m.group(1)}\b", text) for m in _MASK_LOCAL.finditer(text))


_LEN_TEST = re.compile(r"len(?<!\wlen)\((\w+)\)\s*(?:[<>]=?|[=!]=)\s*[01]\b")


def _tests_selected_count(text: str) -> bool:
    """`if len(idx) > 0:` ... `x[idx]`, `len(x) == 1` ... `x.shape`: how many samples an index selects, or a tensor's
    batch size, tested against 0 or 1."""
    if "len(" not in text:
        return False
    return any(
        re.search(rf"\w\[{re.escape(m.group(1))}\b|\b{re.escape(m.group(1))}\.(?:shape|size|dim|view|reshape)\b", text)
        for m in _LEN_TEST.finditer(text)
    )


def _tests_batch_local(text: str) -> bool:
    """`b = x.shape[0]` ... `if b > 1:`: a local bound to the batch size, tested against 0 or 1."""
    if ".shape" not in text and ".size(" not in text:
        return False
    bound = {m.group(1) for m in _BATCH_LOCAL.finditer(text)}
    return bool(bound) and not (bound.isdisjoint(_NAME_TEST.findall(text)) and bound.isdisjoint(_LIMIT_TEST.findall(text)))


def _tests_reduced_local(text: str) -> bool:
    """`n = mask.sum()` ... `if n > 0:`: a local bound to one value reduced from a tensor, tested later."""
    if "()" not in text:
        return False
    return any(
        re.search(rf"\b{m.group(1)}\s*(?:[<>]=?|[=!]=)|\b(?:if|elif|while)\s+(?:not\s+)?{m.group(1)}\s*:", text)
        for m in _REDUCED_LOCAL.finditer(text)
    )


# `n = mask.sum()`, `total = (labels > 0).sum()`: a local bound to a whole reduction (no dimension) of a tensor
_REDUCED_LOCAL = re.compile(
    r"^[ \t]*(\w+)[ \t]*=[^\n=]*\.(?:" + "|".join(sorted(VALUE_REDUCTIONS)) + r")\(\)[ \t]*(?:#[^\n]*)?$", re.M
)


_NAME_TEST = re.compile(r"\b(\w++)\s*(?:[<>]=?|[=!]=)\s*[01]\b")
# `if b > self.max_batch:` (`taint._batch_limit_test`): a name ordered against a setting
_LIMIT_TEST = re.compile(r"\b(\w++)\s*[<>]=?\s*[A-Za-z_]")


# Reductions whose result is an index the tensor's values choose.
_REDUCTIONS = ("argmax", "argmin", "argsort", "topk", "kthvalue")


class _Selections:
    """Text pre-filter: a data-dependent selection, or a loop over an input mapping's keys that picks a submodule
    from a container by the key (`for k, v in feats.items(): out[k] = self.proj[k](v)`; `model.encoders[k](v)` in
    a function handed the model)."""

    _BY_KEY = re.compile(r"for(?<!\wfor)\s+(\w+)\b[^\n]*\bin\s+\w+\.(?:items|keys)\(\)")  # `\bfor`, word first
    # `for name in names:`, `for i, name in enumerate(names):`: a loop taking items (not `range`'s positions)
    _ITEM_LOOP = re.compile(r"for(?<!\wfor)\s+(?:\w+\s*,\s*)?(\w+)\s+in\s+(?!range\b)")
    _WALK = re.compile(r"for(?<!\wfor)\s+(\w+)\s+in\s+(\w+)\s*[:)\]}]")  # `for key in feats:` (and in a comprehension)

    # `self.heads[batch["task"]](x)`, or through a local (`task = batch["task"]` ... `self.heads[task](x)`)
    _PICK = re.compile(r"self(?:\.\w+)+\[\s*\w+\[\s*[\"']")
    _FIELD = re.compile(r"^\s*(\w+)\s*=\s*\w+(?:\[|\.get\()\s*[\"'][^\n]*$", re.M)  # (`task = batch.get("task")`)

    # `if "image" in batch:`, `if "image" in batch.keys():`, `if batch.get("image") is not None:`: a key this rank's
    # input mapping may lack (also beside settings: `if "image" in batch and self.training:`)
    _PRESENCE = re.compile(
        r"if(?<!\wif)\b[^\n]*(?:\bin\s+\w+(?:\[\w+\]|\.keys\(\))?\s*(?::|\)|and\b|or\b)|\.get\([^()\n]*\)\s+is\s)"
    )
    # `if batch is None: continue` (a batch this rank's collate dropped), `if g.num_edges() > 0:` (a graph's own count)
    _NONE_SKIP = re.compile(r"if(?<!\wif)\s+\w+\s+is\s+None\s*:\s*(?:#[^\n]*)?\n\s*continue\b")
    _ITEM_COUNT = re.compile(r"\.(?:" + "|".join(sorted(ITEM_COUNTS)) + r")\(\)")
    # `for key, value in batch.items():`: as many iterations as this rank's mapping has keys
    _VIEW_LOOP = re.compile(r"for(?<!\wfor)\s[^\n]*\bin\s+\w+\.(?:items|keys|values)\(\)")

    # `x.ndim == 5`, `x.dim() != 4`, `len(x.shape) == 3`, `mel.shape[-2:] != (...)`: which kind of input it is
    _KIND = re.compile(
        r"(?:\.ndim\b|\.dim\(\)|len\(\w+\.shape\))\s*(?:[<>]=?|[=!]=)\s*\d|\d\s*(?:[<>]=?|[=!]=)\s*\w+(?:\.ndim\b|\.dim\(\))"
        r"|\.shape\[-\d+:\]\s*[=!]=\s*\("
    )
    # `if offset[-1] > 0:`, `if lengths[0] == 0`: one item of a local at a literal position, against a number
    _ELEMENT = re.compile(r"if(?<!\wif)\b[^\n]*\b\w+\[-?\d+\]\s*(?:[<>]=?|[=!]=)\s*-?\d")
    # `for _ in range(int(n.item())):`: a trip count read from this rank's tensor
    _COUNT = re.compile(r"range\([^\n]*\.item\(\)")
    _CONTAINER_ITEM = re.compile(r"\w\.\w+\[")  # an item of a container (`self.experts[k]`, `model.heads[k]`)
    _NAMED_ITEM_CALL = re.compile(r"self(?<!\wself)\.\w+\[\s*\w+\s*\]\(")
    # `self.seen += len(features)`: a count each call grows by this rank's data (`Taint._running_test`)
    _GROWN = re.compile(r"self\.\w+[ \t]*\+=[^\n]*(?:len\(|\.shape\b|\.size\(|\.numel\(|\.sum\(|\.count_nonzero\()")

    def search(self, text: str) -> bool:
        if _has_selection(text):
            return True
        if output_test_text(text):
            return True  # `o = self.sub(h)` ... `if o.argmax(-1)[0] == 0: self.alt(h)`: a submodule's output decides
        if extent_exit_text(text):
            return True  # `if len(ids) < 4: continue`: this rank's short input skips the rest
        if stored_sample_text(text):
            return True  # `terms = self.memory.sample(n)[-1]` ... `if not terms[0]: self.target_net(s)`
        if any(word in text for word in _REDUCTIONS) and self._CONTAINER_ITEM.search(text):
            return True  # `self.experts[str(scores.argmax().item())]`: a module picked by this rank's data
        if "](" in text and self._NAMED_ITEM_CALL.search(text):
            return True  # `self.heads[task](x)`: a key a caller may hand in from this rank's batch (`handed_parameters`)
        if (" in " in text or ".get(" in text) and self._PRESENCE.search(text):
            return True
        if "()" in text and self._VIEW_LOOP.search(text):
            return True
        if "None" in text and "continue" in text and self._NONE_SKIP.search(text):
            return True
        if "()" in text and self._ITEM_COUNT.search(text):
            return True
        if (".ndim" in text or ".dim()" in text or ".shape" in text) and self._KIND.search(text):
            return True  # `x.ndim == 5`: the kind of input this call was given (`taint._kind_test`)
        if "]" in text and self._ELEMENT.search(text):
            return True  # `if offset[-1] > 0:`: one value of this call's input (`taint._element_test`)
        if ".item()" in text and self._COUNT.search(text):
            return True
        if "+=" in text and self._GROWN.search(text):
            return True  # `if self.seen >= self.min_batch: self._train()`: tested once it grew past a bound
        if '["' in text or "['" in text or '.get("' in text or ".get('" in text:
            if self._PICK.search(text):
                return True
            for match in self._FIELD.finditer(text):  # (called, or walked: `for m in self.routes[task]:`)
                field = re.escape(match.group(1))  # (or what a call handed it returns: `route = self.route_of(task)`)
                keys = [field, *(re.escape(m) for m in re.findall(rf"^\s*(\w+)\s*=[^\n]*\(\s*[^\n]*\b{field}\b", text, re.M))]
                if re.search(r"self(?:\.\w+)+\[\s*(?:" + "|".join(keys) + r")\s*\]\s*[(.:]", text):
                    return True
        if "self." in text:
            for match in self._ITEM_LOOP.finditer(text):  # `for name in set(adapter_names):` ... `self.lora_A[name]`
                # (or a key made of it: `self.layers[str(level)]`, `self.heads[f"{name}_mod"]`)
                if match.group(1) in text and re.search(
                        r"self(?:\.\w+)+\[[^\]\n]*\b" + match.group(1) + r"\b[^\]\n]*\]", text):
                    return True
        matches = [*self._BY_KEY.finditer(text)] if ".items()" in text or ".keys()" in text else []
        matches += (m for m in self._WALK.finditer(text) if f"{m.group(2)}[{m.group(1)}]" in text)  # `feats[key]`
        for match in matches:
            key = re.escape(match.group(1))
            # `self.proj[k](v)`, or `model.encoders[k](v)` of a model a function or a trainer is handed
            if re.search(r"\b\w+(?:\.\w+)+\[[^\]\n]*\b" + key + r"\b[^\]\n]*\]\s*\(", text):
                return True
        return False


TRIGGER = Remembered(_Selections())


class DataDependentSubmodules(Rule):
    """Which submodules run depends on this rank's data (experts that received tokens).

    ## What it does
    Flags a loop or branch that runs separate submodules only for the
    indices a data-dependent selection returns: a loop over
    `mask.nonzero()`, `indices.unique()` or one-argument `torch.where`, a
    `continue` when an expert's token selection is empty, or an `if` on
    `.any()`/`.all()` around a submodule call; a loop over the keys of an
    input mapping that calls the module of each key (`for k in feats:
    self.proj[k](feats[k])`), a submodule named by a field of the batch
    (`self.heads[batch["task"]](x)`), and a branch on the batch size
    (`x.shape[0] > 1`, `b == 1` for `b, n = x.shape[:2]`, `len(idx) > 0` of
    an index argument), and a submodule taken out of a container by an index
    this rank's values choose (`self.experts[str(scores.argmax().item())]`,
    a loop over `topk(...)` indices), called at once or through a local.
    Only submodules whose call
    gathers parameters count (not activations, dropout, or norm layers,
    whose small weights stay gathered), and a loop over slices of one fused
    expert parameter (`self.gate_up_proj[expert_idx]`) is fine.

    ## Why is this bad under ZeRO-3?
    Each expert call all-gathers that expert's parameters, a collective every
    rank has to join. Ranks route different tokens, so the set of experts
    that receive any token differs between ranks: one rank calls expert 3,
    another does not, and both wait forever in mismatched all-gathers.

    ## Example
    ```python
    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        expert = self.experts[expert_idx]
        out[idx] += expert(hidden[idx])
    ```

    ## Use instead
    ```python
    for expert_idx, expert in enumerate(self.experts):  # every expert, on every rank
        idx, top_x = torch.where(expert_mask[expert_idx])
        out.index_add_(0, top_x, expert(hidden[top_x]))   # an empty batch is fine
    ```
    """

    code = "ZG203"
    name = "data-dependent-submodules"

    VALID = (
        # Fused experts: one parameter, sliced per expert.
        """
import torch
from torch import nn

class Experts(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.empty(n, 2 * d, d))
        self.act_fn = nn.SiLU()

    def forward(self, x, mask):
        hit = mask.sum(-1).nonzero()
        for idx in hit:
            if idx == 0:
                continue
            h = torch.nn.functional.linear(x, self.gate_up_proj[idx])
            x = x + self.act_fn(h)
        return x
""",
        # Every expert runs; the data only picks rows.
        """
import torch
from torch import nn

class Moe(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x, mask):
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            idx = torch.where(mask[i])[0]
            out[idx] += expert(x[idx])
        return out
""",
    )
    INVALID = (
        # Token counts per expert turned into offsets in a list; an expert with no tokens is skipped.
        """
import torch
from torch import nn

class Moe(nn.Module):
    def __init__(self, n=8):
        super().__init__()
        self.n = n
        self.experts = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])

    def forward(self, x, selected):
        counts = torch.bincount(selected.flatten(), minlength=self.n).tolist()
        offsets = [0]
        for c in counts:
            offsets.append(offsets[-1] + c)
        order = selected.flatten().argsort()
        out = torch.zeros_like(x)
        for i in range(self.n):
            start, end = offsets[i], offsets[i + 1]
            if start == end:
                continue
            rows = order[start:end]
            out[rows] += self.experts[i](x[rows])
        return out
""",
        """
import torch
from torch import nn

class Moe(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x, expert_mask):
        out = torch.zeros_like(x)
        expert_hit = torch.greater(expert_mask.sum(dim=-1), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[expert_idx]
            out = out + expert_layer(x)
        return out
""",
        """
import torch
from torch import nn

class Moe(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x, expert_mask):
        out = torch.zeros_like(x)
        for expert_idx in range(len(self.experts)):
            idx, top_x = torch.where(expert_mask[expert_idx])
            if top_x.shape[0] == 0:
                continue
            out[top_x] += self.experts[expert_idx](x[top_x])
        return out
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for cls, method in index.methods("all", state_trigger(index, TRIGGER, True)):
            for d in divergences(index, cls, method):
                if d.kind == DATA and d.effect in (GATE, ITERATE, SKIP, PICK):
                    yield self.finding(index, method.snippet, d.node, message(d, code_of(d.node)), _HELP, d.site)
        for snippet, d in script_divergences(index, state_trigger(index, TRIGGER, True), DATA):  # code outside the model, running one it holds
            if d.effect in (GATE, ITERATE, SKIP, PICK):
                yield self.finding(index, snippet, d.node, message(d, code_of(d.node)), _HELP, d.site)


_HELP = (
    "call every submodule on every rank (an empty selection is a valid input), "
    "or store the experts as one fused parameter and index it"
)
