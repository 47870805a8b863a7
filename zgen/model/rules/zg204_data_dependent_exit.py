"""ZG204: a loop that calls submodules ends early on a per-rank condition."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..analysis.counts import COUNT_ATTR_TEXT, DRAWN_TEXT, HANDS_LENGTH, length_helpers
from ..analysis.divergence import (
    CAUGHT, CHECK, COUNT, EXHAUSTED, EXIT, OWN_VALUE_RAISE_TEXT, RAISE, RETRY, SKIP, WHILE, Divergence, message,
)
from ..analysis.flags import StopSignal, stop_signals
from ..analysis.flow import Flat, flat_of
from ..analysis.script import divergences, script_divergences, script_scopes
from ..analysis.state import state_trigger
from ..analysis.taint import CLOCK, DATA, HOST, extent_exit_text
from ..program import known
from ..program.index import ModelIndex
from ..program.tree import Snippet, code_of, cst
from ..program.trigger import Remembered, line_matches
from .rule import Report, Rule
from .zg203_data_dependent_experts import TRIGGER as _SELECTION

class _LoopExit:
    """Text pre-filter: a data-dependent selection, or a loop that can end early.

    A decoding loop that stops on what its own steps returned needs no
    selection call to be data-dependent: `break`, `while`, or a `return`
    indented inside a `for` (read from the lines' indentation, no parsing).
    """

    _LOOP = re.compile(r"^([ \t]*)(?:async\s+)?(for|while)\b")
    _EXIT = re.compile(r"^([ \t]*)(?:break|return)\b")

    # A loop over a `range` or a split of a tensor, and a length read somewhere: a count the data may set.
    _HOST = ("exists", "isfile", "isdir", "lexists")
    _LENGTHS = ("len(", ".shape", ".size(", "numel(", "max(", "split(", "unbind(", "unfold(", "chunk(", ".num_", ".n_",
                ".natoms")

    def search(self, text: str) -> bool:
        if _SELECTION.search(text):
            return True
        if extent_exit_text(text):
            return True  # `if x.shape[1] < 4: return x`: this rank's short input leaves early
        if "return" in text and _EMPTY_TEST.search(text):
            return True  # `if torch.prod(torch.as_tensor(h.shape[:-1])) == 0:` ... `return h`: an empty input leaves
        if "for" in text and (any(word in text for word in self._LENGTHS) or "Tensor" in text) and _counted_text(text):
            return True
        if "range(" in text and _ranges_a_parameter(text):
            return True
        if "for" in text and any(name not in _NOT_GENERATORS for name in _GENERATOR_LOOP.findall(text)):
            return True  # `for s, e, r in _get_sharded_stacked(x, n)`: a generator of the file yielding per extent
        if "=" in text and HANDS_LENGTH.search(text):
            return True  # `self.decode(step, n_steps=x.size(1))`: a base class's loop counted by a length handed on
        if ("return" in text or "continue" in text) and "os.path." in text and any(
                f".{word}(" in text for word in self._HOST):
            return True  # `if os.path.isfile(out): return` (or `continue`) before the model runs: this host's files
        if "odeint(" in text:
            return True  # `odeint(ode_fn, x, t)`: a solver calling the model as often as its error control decides
        if "backward(" in text and _exit_before_backward(text):
            return True  # `if not torch.isfinite(loss).all(): return` before `loss.backward()`
        if "except" in text and (_OWN_FAILURE_TEXT.search(text) or _EXHAUSTED_TEXT.search(text)):
            return True  # `except RuntimeError as e: if "out of memory" in str(e): return None`, `except StopIteration:`
        if ("raise" in text or "assert" in text or "exit(" in text) and OWN_VALUE_RAISE_TEXT.search(text):
            return True  # `if torch.isnan(loss): raise NanException`, `assert torch.isfinite(loss)`
        if "break" in text or "while" in text:
            if re.search(r"(?m)^[ \t]*(?:break|while)\b", text):
                return True
        if "return" not in text or "for" not in text:
            return False
        loops: list[int] = []  # indentation of the loops open at this line
        for line in text.splitlines():
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
            indent = len(line) - len(stripped)
            while loops and indent <= loops[-1]:
                loops.pop()
            if self._LOOP.match(line):
                loops.append(indent)
            elif loops and self._EXIT.match(line):
                return True
        return False


# A test of an extent against zero (`if x.numel() == 0:`, `if torch.prod(torch.as_tensor(h.shape[:-1])) == 0:`).
_EMPTY_TEST = re.compile(r"if(?<!\wif)\b[^\n]*(?:\.shape\b|\.size\(|numel\()[^\n]*(?:==|<=)[ \t]*0\b[^\n]*:")
# A loop over `range(...)` (its arguments) or over a split, and the words that read a length.
_RANGE_LOOP = re.compile(r"for(?<!\wfor)\b[^\n]*?\bin\b[^\n]*?\bt?range\(([^\n]*)")  # (`trange`: a progress bar's range)
_SPLIT_LOOP = re.compile(r"for(?<!\wfor)\b[^\n]*?\bin\b[^\n]*?(?:\b|\.)(?:split|unbind|unfold|tensor_split|chunk)\(")
_SPLIT_LOCAL = re.compile(r"^[ \t]*(\w+)[ \t]*=[^\n]*\.(?:split|unbind|unfold|tensor_split|chunk)\(", re.M)
_RANGE_LOCAL = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*(?:[\w.]+\.)?t?range\b(?![ \t]*\()", re.M)  # (`counts._range_locals`)
_BOUND_RANGE = re.compile(r"^[ \t]*(\w+)[ \t]*=[^\n]*?\brange\(([^\n]*)", re.M)  # (`divergence._bound_ranges`)
# A draw of a given size, walked by a loop or bound to a local a loop walks (`counts.drawn_length`): its size's words.
_DRAW_LOOP = re.compile(r"for(?<!\wfor)\b[^\n]*?\bin\b[^\n]*?" + DRAWN_TEXT)
_BOUND_DRAW = re.compile(r"^[ \t]*(\w+)[ \t]*=[^\n]*?" + DRAWN_TEXT, re.M)
_WALK_LOOP = re.compile(r"for(?<!\wfor)\b[^\n]*?\bin[ \t]+(?:enumerate\([ \t]*)?(\w+)\b(?![ \t]*[.(\[])")
_LENGTH_READ = re.compile(
    r"len(?<!\wlen)\(|\.shape\b|\.size\(|numel(?<!\wnumel)\(|max(?<!\wmax)\(|\.max\("
    rf"|\.(?:{COUNT_ATTR_TEXT})\b"  # (a batch's own count of its items)
)
# A loop over a call of a function by its bare name (`counts._yield_counts` tells whether it yields per extent).
_GENERATOR_LOOP = re.compile(r"for(?<!\wfor)\b[^\n]*?\bin[ \t]+([a-z_]\w*)\(")
_NOT_GENERATORS = frozenset({
    "range", "enumerate", "zip", "reversed", "sorted", "list", "tuple", "iter", "map", "filter", "tqdm", "trange",
    "len", "set", "dict", "chain", "product", "super", "getattr",
})
_NOT_A_COUNT = frozenset({"self", "range", "len", "int", "min", "max", "math", "np", "torch", "ceil", "floor"})


def _counted_text(text: str) -> bool:
    """Text pre-filter of a loop counted by a length: a `for` over a split (or a local bound to one), or over
    `range(...)` whose arguments read a length, directly or through locals assigned from one (two assignments
    deep: `n_chunks = x.shape[-1]`, `n = ceil(len(w) / b)`)."""
    if _SPLIT_LOOP.search(text):
        return True
    for local in _SPLIT_LOCAL.findall(text):
        if re.search(rf"\bfor\b[^\n]*?\bin\b[^\n]*?(?<![\w.]){local}\b", text):  # (also in `enumerate(zip(...))`)
            return True
    for loop in _RANGE_LOOP.finditer(text):
        if _reads_length(text, loop.group(1), 2):
            return True
    for walked in _WALK_LOOP.findall(text):  # `for x_t in x` over a tensor `x` (`counts.tensor_names`)
        if re.search(rf"(?<![\w.]){walked}\.(?:shape\b|ndim\b|size\(|dim\()", text):
            return True
        if re.search(rf"(?<![\w.]){walked}[ \t]*:[ \t]*(?:Optional\[)?(?:(?:torch|th)\.)?(?:Float|Long|Bool)?Tensor\b", text) \
                and not known.CONVENTION_INPUT.search(walked):
            return True  # (an argument annotated as a tensor: `counts.tensor_names`)
    for loop in _DRAW_LOOP.finditer(text):  # `for i in torch.randperm(x.size(0))`: as many items as the size says
        if _reads_length(text, loop.group(1), 2):
            return True
    for local, counted in _BOUND_DRAW.findall(text):  # `order = torch.randperm(len(x))` ... `for i in order:`
        if re.search(rf"\bfor\b[^\n]*?\bin[ \t]+{local}[ \t]*:", text) and _reads_length(text, counted, 2):
            return True
    for local, counted in _BOUND_RANGE.findall(text):  # `steps = reversed(range(len(x))) if rev else range(len(x))`
        if re.search(rf"\bfor\b[^\n]*?\bin[ \t]+{local}[ \t]*:", text) and _reads_length(text, counted, 2):
            return True
    for local in _RANGE_LOCAL.findall(text) if "range " in text else ():  # `range_fn = range if ... else trange`
        for loop in re.finditer(rf"\bfor\b[^\n]*?\bin\b[^\n]*?(?<![\w.]){local}\(([^\n]*)", text):
            if _reads_length(text, loop.group(1), 2):
                return True
    return False


def _ranges_a_parameter(text: str) -> bool:
    """Text pre-filter of a loop counted by a parameter (`for t in range(seq_length)`): a caller of the method may
    hand it a length of its data (`counts.handed_counts`)."""
    params: set[str] | None = None
    for loop in _RANGE_LOOP.finditer(text):
        if params is None:
            params = _parameters_text(text)
        # (named bare: `range(config.n_layers)` reads a setting of the object handed in)
        if _names_parameter(text, loop.group(1), params, 1):
            return True
    return False


_BARE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\b(?![ \t]*[.\[(])")


def _names_parameter(text: str, expr: str, params: set[str], depth: int) -> bool:
    """Does `expr` name one of `params` bare, directly or through locals assigned from one (`depth` assignments deep:
    `num_block = (batch_size + bs - 1) // bs` ... `range(num_block)`)?"""
    names = set(_BARE.findall(expr))
    if params & names:
        return True
    if depth == 0:
        return False
    for name in names - _NOT_A_COUNT:
        assigned = re.compile(rf"^[ \t]*{name}[ \t]*=(?!=)([^\n]*)", re.M)
        for bound in line_matches(assigned, text, name):
            if _names_parameter(text, bound.group(1), params, depth - 1):
                return True
    return False


_SIGNATURE = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(([^)]*)\)")


def _parameters_text(text: str) -> set[str]:
    """The parameter names of the function whose text starts `text` (read from its signature, no parsing)."""
    signature = _SIGNATURE.match(text)
    if signature is None:
        return set()
    return set(re.findall(r"(?:^|,)\s*\**([A-Za-z_]\w*)", signature.group(1))) - {"self", "cls"}


def _reads_length(text: str, expr: str, depth: int) -> bool:
    if _LENGTH_READ.search(expr):
        return True
    if depth == 0:
        return False
    for name in set(re.findall(r"(?<![\w.])([A-Za-z_]\w*)", expr)) - _NOT_A_COUNT:
        assigned = re.compile(rf"^[ \t]*(?:[\w, ()*]*[,( ])?{name}\b[\w, ()*]*=(?!=)([^\n]*)", re.M)
        for bound in line_matches(assigned, text, name):  # (an assignment stays on the line naming it)
            if _reads_length(text, bound.group(1), depth - 1):
                return True
    return False


_SKIP_TEST = re.compile(r"(?m)^[ \t]*(?:el)?if\b[^\n]*:[ \t]*(?:#[^\n]*)?(?:\n[^\n]*){0,4}?\n?[ \t]*(?:return|continue)\b")


def _exit_before_backward(text: str) -> bool:
    """Text pre-filter: a test whose block returns or continues (within its first lines), before a `.backward(`."""
    last = text.rfind(".backward(")
    found = _SKIP_TEST.search(text, 0, last) if last > 0 else None
    return found is not None


# `except:`, `except Exception`, `except (RuntimeError, ValueError)`, `except torch.cuda.OutOfMemoryError`, an
# exception class of the program (`except NaNLoss:`): any handler but one of a single API probe (`except ImportError:`).
# `except StopIteration:`, `except DataloaderExhaustedError:`: this rank's data ran out
_EXHAUSTED_TEXT = re.compile(r"(?m)^[ \t]*except[ \t(]+(?:[\w.]*\.)?(?:StopIteration|\w*Exhausted)")
_OWN_FAILURE_TEXT = re.compile(
    r"(?m)^[ \t]*except\b(?![ \t]+(?:ImportError|ModuleNotFoundError|TypeError|AttributeError|KeyError|IndexError"
    r"|StopIteration|NotImplementedError|FileNotFoundError)\b[ \t]*(?:as[ \t]+\w+[ \t]*)?:)"
)

TRIGGER = Remembered(_LoopExit())


class DataDependentExit(Rule):
    """A loop that calls submodules stops early on a condition that depends on this rank's data.

    ## What it does
    Flags a `break` or `return` inside (or a `while` test around) a loop
    that calls submodules with parameters, when the condition depends on the
    data this rank holds: `if finished.all(): break`, `while not done.any():`,
    `if (logits.max() > t).item(): return x`, or on what the loop's own
    submodule calls returned: a decoding loop that calls a step method
    (`best = self.search(hyps)`) and stops when this rank's hypotheses
    end (`if len(running) == 0: break`), also through a function defined
    in the method (`def evaluate(): return self.policy(s)`); a `break`
    reached through the final `else` of a chain of such tests (a line
    search that stops at the first acceptable step) is reported at the
    `break`. Shapes, dtypes and `is None` tests of those outputs do not count. A condition that also holds when
    `synced_gpus` is set is not flagged. A loop stopped, skipped or run on
    this host's clock (`if time.time() - start > limit: break`, `while
    perf_counter() < deadline:`) is flagged too; a value all-reduced or
    broadcast before the test (`dist.all_reduce(elapsed)`) is the same on
    every rank and is not. So is a loop that leaves on a flag (`if
    self._stop_training: break`, `while not self.should_stop:`) that another
    method of the file or of the package files it imports sets on a value it
    was handed (an early-stopping callback comparing this rank's validation
    loss, a NaN guard); a flag set on a counter (`epoch >= max_epochs`) or on
    an all-reduced metric is not. The callback's own file is checked too: a
    method of a callback class that sets such a flag on the engine, trainer or
    state it is handed (`engine.terminate()`, `state[pkg.STOP_TRAINING] =
    True`) on that object's values or on this host's clock, where a loop of the
    package leaves on the flag, is reported at the setter; so is a `raise` of an
    exception class of the package (`raise StopTraining()`) that a `try` of the
    package around a training loop catches.

    Also flagged: a loop that runs submodules as often as this rank's input
    is long: `for i in range(n_chunks)` with `n_chunks = unfolded.shape[-1]`,
    `range(0, x.shape[-1], hop)`, `for piece in torch.split(x, 256)`,
    `range(ceil(len(windows) / size))` for windows a method made from the
    batch, `range(max(lengths))`, a length read from each of the batches a
    loop walks (`for batch in batches: n = batch["tgt"].size(1)`), a loop
    over `range(seq_length)` when the class's own call hands `seq_length =
    x.shape[0]` (reported at the loop), and a call handing a base class of
    another file a length to loop over along with a function that runs
    submodules (`self.decode_autoregressive(decode_one,
    n_decoder_steps=x.size(1))`, reported at the call); and a `return` taken on this host's files
    (`if os.path.isfile(out): return`) before the model runs, or a loop
    running while they say so (`while not os.path.exists(stop):`, or a flag
    set from them). Loops over a
    configured count (`range(self.n_layers)`, `for blk in self.blocks`), over
    the outputs of submodules or the items of a module container, loops whose
    variable picks an item of the module's own state (`self.convs[i]`),
    counts the function checks against a setting (raising otherwise), a
    split given a list of configured sizes (`x.split([d // 2] * 2)`: as many
    pieces as the list), and loops that only do tensor maths are not. A split
    given sizes read from the data (`(idx[1:] - idx[:-1]).tolist()`) is.

    Also flagged: a retry, a `try` in a loop whose body runs submodules and
    leaves on success while the handler neither re-raises nor leaves
    (`except torch.cuda.OutOfMemoryError: chunks *= 2`): the rank that raised
    runs the body's submodules again, its peers do not. And any handler of a
    failure a rank raises on its own (`except RuntimeError`, `except
    torch.cuda.OutOfMemoryError`, `except Exception`, a bare `except`) around
    a call that runs submodules, with a way through that neither re-raises
    nor ends the process: skipping the batch on out of memory (`if "out of
    memory" in str(e): return None`), `continue`, or a fallback pass in
    halves. The rank that failed stops partway through a pass its peers
    finish, or runs another. A handler of `TypeError`, `ImportError`,
    `AttributeError` or `KeyError` (an API or a config probed, the same on
    every rank) is not flagged, nor one that always raises again. And a
    decoding loop told not to synchronise (`self._sample(ids, ...,
    synced_gpus=False)`, `model.generate(x, synced_gpus=False)`).

    ## Why is this bad under ZeRO-3?
    Every submodule call all-gathers its parameters with all ranks. A rank
    whose samples finish early leaves the loop while the others still call
    the next layer (or decoding step) and wait for it in the all-gather: the
    job hangs. This is why `generate` has `synced_gpus`.

    ## Example
    ```python
    for layer in self.layers:
        x = layer(x)
        if (self.exit_head(x).softmax(-1).max(-1).values > 0.9).all():
            break  # early exit: ranks leave at different layers
    ```

    ## Use instead
    ```python
    for layer in self.layers:
        x = layer(x)
        done = (self.exit_head(x).softmax(-1).max(-1).values > 0.9).all()
        flag = done.float()
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MIN)
        if flag.item() == 1:  # the same decision on every rank
            break
    ```
    """

    code = "ZG204"
    name = "data-dependent-exit"

    VALID = (
        # A loop over decoding steps that stops on the step count or on an output's shape.
        """
from torch import nn

class Search(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = nn.Linear(8, 8)

    def step(self, x):
        return self.decoder(x)

    def decode(self, x, max_len):
        out = x
        for i in range(100):
            out = self.step(out)
            if out.shape[1] >= max_len or i == max_len:
                break
        return out
""",
        # Config-driven early exit: the same on every rank.
        """
from torch import nn

class Net(nn.Module):
    def __init__(self, n_used):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(6)])
        self.n_used = n_used

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            if i == self.n_used:
                break
            x = layer(x)
        return x
""",
        # The exit waits for every rank when synced_gpus is set.
        """
from torch import nn

class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = nn.Linear(8, 8)

    def generate(self, x, synced_gpus=False):
        for _ in range(10):
            x = self.step(x)
            if (x > 0).all() and not synced_gpus:
                break
        return x
""",
    )
    VALID += (
        # The loop's variable picks a layer of the model: as many steps as the model has layers.
        """
from torch import nn

class FPN(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(8, 8, 3) for _ in range(4)])

    def forward(self, feats):
        return [self.convs[i](feats[i]) for i in range(len(feats))]
""",
        # Every rank runs all steps and only trims the result; the step count is the same everywhere.
        """
import torch

def generate(model, prompt, max_new):
    tokens = prompt
    for step in range(max_new):
        logits = model(tokens)
        tokens = torch.cat([tokens, logits[:, -1:].argmax(-1)], dim=1)
        if step + 1 == max_new:
            break
    return tokens
""",
    )
    INVALID = (
        # Overlap-add: the wrapped network runs once per chunk of this rank's signal.
        """
import torch
from torch import nn

class OverlapAdd(nn.Module):
    def __init__(self, window, hop):
        super().__init__()
        self.net = nn.Linear(window, window)
        self.window, self.hop = window, hop

    def forward(self, x):
        chunks = torch.nn.functional.unfold(x.unsqueeze(-1), (self.window, 1), stride=(self.hop, 1))
        return torch.stack([self.net(chunks[..., i]) for i in range(chunks.shape[-1])])
""",
        # A decoding loop that stops when this rank's hypotheses end, through helper methods.
        """
from torch import nn

class Search(nn.Module):
    def __init__(self, decoder):
        super().__init__()
        self.decoder = nn.Linear(8, 8)

    def step(self, hyps):
        return [h for h in self.decoder(hyps) if h.max() < 0.5]

    def decode(self, x, max_len):
        running = [x]
        for _ in range(max_len):
            running = self.step(running)
            if len(running) == 0:
                break
        return running
""",
        """
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(6)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            if (x.abs() < 1e-3).all():
                break
        return x
""",
        # A stop sequence matched token by token: the `return` in the inner loop leaves the generation loop.
        """
def next_token(model, x):
    return model(x)[:, -1].argmax(-1)

def generate(model, prompt, max_new, stop_sequences):
    progress = [0] * len(stop_sequences)
    token = prompt
    for _ in range(max_new):
        token = next_token(model, token)
        value = token.item()
        for i, seq in enumerate(stop_sequences):
            if value == seq[progress[i]]:
                progress[i] += 1
                if progress[i] == len(seq):
                    return
            else:
                progress[i] = 0
        yield token
""",
        # The step function comes from the caller; the loop stops once this rank's rows all hit a stop token.
        """
def generate(model, prompt, max_new, stop_tokens, next_token=None):
    if next_token is None:
        next_token = default_next_token
    tokens = next_token(model, prompt)
    done = torch.isin(tokens, stop_tokens)
    for _ in range(max_new - 1):
        if done.all().item():
            break
        tokens = next_token(model, tokens)
        done = done | torch.isin(tokens, stop_tokens)
    return tokens
""",
        # Decoding through a closure around the model, until this rank's sequences end.
        """
def decode(input_ids, model, max_length, eos_token_id=None):
    def get_logits(ids):
        return model(ids).logits[:, -1]

    def should_stop(token):
        return eos_token_id is not None and bool((token == eos_token_id).all())

    sequences = [input_ids]
    while not should_stop(sequences[-1]) and len(sequences) < max_length:
        sequences.append(get_logits(sequences[-1]).argmax(-1))
    return sequences
""",
        # A generation function handed the model: the step helper runs it, the loop stops at this rank's EOS.
        """
import torch

def next_token(model, x):
    return model(x)[:, -1].argmax(-1, keepdim=True)

def generate(model, prompt, max_new, eos_id):
    tokens = prompt
    for _ in range(max_new):
        token = next_token(model, tokens)
        tokens = torch.cat([tokens, token], dim=1)
        if (token == eos_id).all():
            break
    return tokens
""",
        """
from torch import nn

class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = nn.Linear(8, 8)

    def generate(self, x, done):
        while not done.all():
            x = self.step(x)
            done = x.sum(-1) > 0
        return x
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        for cls, method in index.methods("all", state_trigger(index, length_helpers(index, TRIGGER), True)):
            for d in divergences(index, cls, method):
                if _exit(d):
                    yield self.finding(index, method.snippet, d.node, message(d, code_of(d.node)), _help(d), d.site)
        for kind in (DATA, HOST, CLOCK):
            for snippet, d in script_divergences(index, state_trigger(index, length_helpers(index, TRIGGER), True), kind):
                if _exit(d):
                    yield self.finding(index, snippet, d.node, message(d, code_of(d.node)), _help(d), d.site)
        for signal in stop_signals(index):
            if signal.method.snippet is not None:
                yield self.finding(index, signal.method.snippet, signal.node, _signal_message(signal), _SIGNAL_HELP)
        if "synced_gpus" in index.source:
            for snippet, flat in _functions_naming(index, _NO_SYNC):
                for node, _ctx in flat.nodes:
                    if type(node) is cst.Call and (arg := _unsynced(node)) is not None:
                        yield self.finding(index, snippet, arg, _unsynced_message(node), _SYNC_HELP)


class _NoSync:
    """Text pre-filter: a call told not to synchronise its decoding loop (`synced_gpus=False`)."""

    _TEXT = re.compile(r"synced_gpus\s*=\s*False\b")

    def search(self, text: str) -> bool:
        return "synced_gpus" in text and self._TEXT.search(text) is not None


_NO_SYNC = _NoSync()


def _functions_naming(index: ModelIndex, trigger: _NoSync) -> Iterator[tuple[Snippet, Flat]]:
    """The methods of module classes and the functions and methods outside them whose text `trigger` matches."""
    for _cls, method in index.methods("all", trigger):
        flat = flat_of(method)
        if flat is not None:
            yield method.snippet, flat
    for scope in script_scopes(index, trigger):
        yield scope.snippet, scope.flat


def _unsynced(call: cst.Call) -> cst.Arg | None:
    """`self._sample(ids, ..., synced_gpus=False)`: the argument, if the call is told not to synchronise."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "synced_gpus":
            value = arg.value
            return arg if isinstance(value, cst.Name) and value.value == "False" else None
    return None


def _unsynced_message(call: cst.Call) -> str:
    return (
        f"`{code_of(call.func)}(..., synced_gpus=False)` runs a decoding loop in which each rank stops at its own "
        "last token; under ZeRO-3 a rank whose sequences finish first stops calling the model while its peers "
        "wait for it in the parameter all-gather"
    )


_SYNC_HELP = "pass `synced_gpus=True` (or leave it unset so the library turns it on under ZeRO-3)"


def _signal_message(signal: StopSignal) -> str:
    if type(signal.node) is cst.Raise:
        return (
            f"`{code_of(signal.node)}` ends the loop of `{signal.loop}`, which catches it, under {signal.test}, which "
            "depends on this rank's own values; one rank stops while its peers run the model on and hang in its "
            "parameter all-gather"
        )
    return (
        f"`{code_of(signal.node)}` sets the flag the loop of `{signal.loop}` leaves on, under {signal.test}, which "
        "depends on this rank's own values; one rank stops while its peers run the model on and hang in its "
        "parameter all-gather"
    )


_SIGNAL_HELP = (
    "decide the stop on every rank together: all-reduce the monitored value (or a 'stop' flag) before testing it"
)


def _exit(d: Divergence) -> bool:
    """A loop cut short or counted by the data, a `return`/`continue` or a `while` taken on this host's files, or a
    module run, skipped or stopped on this host's clock (a time limit)."""
    return (
        (d.kind == DATA and d.effect in (EXIT, WHILE, COUNT, RETRY, CAUGHT, EXHAUSTED, RAISE, CHECK))
        or (d.kind == HOST and d.effect in (EXIT, SKIP, WHILE))
        or d.kind == CLOCK
    )


_HELP = (
    "make the exit decision collectively (all-reduce the flag so every rank sees the same value), "
    "or keep calling the layers on finished samples"
)
_CAUGHT_HELP = (
    "let the failure propagate (re-raise), or agree on it: all-reduce a 'failed' flag after the pass and skip "
    "or shrink the step on every rank together"
)


_RAISE_HELP = (
    "agree on it first: all-reduce a 'non-finite' flag (or the loss) and raise, or skip the step, on every rank "
    "together"
)


def _help(d: Divergence) -> str:
    return _CAUGHT_HELP if d.effect == CAUGHT else _RAISE_HELP if d.effect in (RAISE, CHECK) else _HELP
