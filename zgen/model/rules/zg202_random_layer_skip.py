"""ZG202: a random draw decides whether a submodule runs (LayerDrop)."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.divergence import Divergence, message
from ..analysis.script import divergences, script_divergences
from ..analysis.state import state_trigger
from ..analysis.flow import SAME_ITEMS
from ..analysis.taint import DATA, HOST_RANDOM, RANDOM, draw_kind, draw_trigger, draws_in
from ..program.index import ClassInfo, ModelIndex
from ..program.members import facts_of
from ..program.tree import access_path, code_of, cst, walk
from .rule import Report, Rule


class RandomLayerSkip(Rule):
    """A random draw decides whether a submodule runs (LayerDrop, stochastic depth by skipping).

    ## What it does
    Flags a test on a random draw (`torch.rand`, `torch.bernoulli`,
    `random.random()`, `np.random.*`) that decides whether a submodule with
    parameters runs: `if torch.rand([]) < self.layerdrop: continue`, a skip
    flag set from such a draw, or an early return. A branch that also holds
    when `synced_gpus` (or `is_deepspeed_zero3_enabled()`) is set is not
    flagged: ZeRO-3 then runs the layer on every rank.

    ## Why is this bad under ZeRO-3?
    Running a layer all-gathers its parameters, which needs every rank. Each
    rank draws its own number, so sooner or later one rank skips a layer the
    others run, and the job hangs. With torch's generator this happens as soon
    as seeds differ per rank (a common choice for data augmentation); with
    `random` or `numpy.random` it happens even with equal seeds, because the
    data loader and augmentations consume those streams unevenly.

    Randomness that masks a module's output but still runs the module
    (dropout, drop-path multiplying by a mask) is fine and not flagged.
    Iterating a layer container whose `__iter__` draws random numbers to
    drop layers (a LayerDrop module list) is flagged at the loop.

    ## Example
    ```python
    for layer in self.layers:
        if self.training and torch.rand([]) < self.layerdrop:
            continue
        x = layer(x)
    ```

    ## Use instead
    ```python
    for layer in self.layers:
        skip = self.training and torch.rand([]) < self.layerdrop
        if not skip or synced_gpus:  # under ZeRO-3 every rank runs every layer
            x = layer(x)
    ```
    """

    code = "ZG202"
    name = "random-layer-skip"

    VALID = (
        # Per-layer switches from the configuration, zipped with the layers; a filter on the modules themselves.
        """
from torch import nn

class Net(nn.Module):
    def __init__(self, n, active):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])
        self.active = active

    def forward(self, x):
        for layer, on in zip(self.layers, self.active):
            if on:
                x = layer(x)
        for layer in [l for l in self.layers if l.out_features == 512]:
            x = layer(x)
        return x
""",
        # A module list whose `__iter__` is deterministic.
        """
from torch import nn

class Stack(nn.ModuleList):
    def __iter__(self):
        return iter(list(super().__iter__())[::-1])

class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = Stack([nn.Linear(d, d) for _ in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
""",
        # drop-path: the random mask scales the output, the block always runs.
        """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Linear(8, 8)

    def forward(self, x):
        keep = (torch.rand(x.shape[0], 1) > 0.1).float()
        return x + self.mlp(x) * keep
""",
        # LayerDrop with the synced_gpus escape hatch.
        """
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x, synced_gpus=False):
        for layer in self.layers:
            skip = self.training and torch.rand([]) < 0.1
            if not skip or synced_gpus:
                x = layer(x)
        return x
""",
        # Dropout module called under a random test: it owns no parameters.
        """
import random
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        if random.random() < 0.5:
            x = self.drop(x)
        return x
""",
    )
    INVALID = (
        # A helper of the same file drops layers at random; an extra forward through a helper method, half the time.
        """
import random
import torch
from torch import nn

def drop_some(layers, p):
    keep = torch.rand(len(layers)) >= p
    return [layer for layer, k in zip(layers, keep) if k]

class Net(nn.Module):
    def __init__(self, n, p):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])
        self.head = nn.Linear(512, 512)
        self.p = p

    def predict(self, x):
        return self.head(x)

    def forward(self, x):
        for layer in drop_some(self.layers, self.p):
            x = layer(x)
        cond = None
        if random.random() < 0.5:
            cond = self.predict(x).detach()
        return x, cond
""",
        # The draws made up front: zipped with the layers, a filtered list, a random depth, an aliased import.
        """
import random
from random import random as draw
import numpy as np
from torch import nn

class Net(nn.Module):
    def __init__(self, n, p):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(n)])
        self.p = p

    def forward(self, x):
        keep = np.random.rand(len(self.layers)) > self.p
        for layer, k in zip(self.layers, keep):
            if k:
                x = layer(x)
        kept = [l for l in self.layers if draw() > self.p]
        for layer in kept:
            x = layer(x)
        for layer in self.layers[: random.randint(1, len(self.layers))]:
            x = layer(x)
        return x
""",
        # A module list that drops layers while it is iterated.
        """
import torch
from torch import nn

class SkippingStack(nn.ModuleList):
    def __init__(self, blocks, skip_rate):
        super().__init__(blocks)
        self.skip_rate = skip_rate

    def __iter__(self):
        blocks = list(super().__iter__())
        if self.training:
            keep = torch.rand(len(blocks)) >= self.skip_rate
            blocks = [b for b, k in zip(blocks, keep.tolist()) if k]
        return iter(blocks)

class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = SkippingStack([nn.Linear(d, d) for _ in range(4)], 0.1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
""",
        """
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])
        self.layerdrop = 0.1

    def forward(self, x):
        for layer in self.layers:
            if self.training and torch.rand([]) < self.layerdrop:
                continue
            x = layer(x)
        return x
""",
        # A flag set under the draw, numpy's stream.
        """
import numpy as np
from torch import nn

class Adapter(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Conv1d(8, 8, 3) for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            to_drop = False
            if np.random.random() < 0.1:
                to_drop = True
            if not to_drop:
                x = layer(x)
        return x
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        yield from self._random_iterables(index)
        for cls, method in index.methods("all", state_trigger(index, draw_trigger(index))):
            found = divergences(index, cls, method)
            data_nodes = {id(d.node) for d in found if d.kind == DATA}
            for d in found:
                if d.kind not in (RANDOM, HOST_RANDOM) or id(d.node) in data_nodes:
                    continue  # a decision on this rank's data as well: ZG203/ZG204 report it
                yield self.finding(index, method.snippet, d.node, _text(d), _HELP, d.site)
        for kind in (RANDOM, HOST_RANDOM):  # code outside the model that runs a model it is handed or holds
            for snippet, d in script_divergences(index, state_trigger(index, draw_trigger(index)), kind):
                yield self.finding(index, snippet, d.node, _text(d), _HELP, d.site)


    def _random_iterables(self, index: ModelIndex) -> Iterator[Report]:
        """`for layer in self.layers:` where the class of `self.layers` drops layers at random in `__iter__`."""
        random_lists = {name for name, info in index.classes.items() if _iterates_at_random(index, info)}
        if not random_lists:
            return
        for name in sorted(random_lists):  # the container itself: where it decides which layers it hands out
            info = index.classes[name]
            iterate = info.method("__iter__")
            at = _iteration_gate(index, iterate.node) if info.is_module and iterate is not None else None
            if at is not None:
                message = (
                    f"`{name}.__iter__` hands out only the layers a random draw keeps (`{code_of(at, limit=60)}`), "
                    "so every loop over it runs layers chosen per rank; ranks run different layers and hang in "
                    "their parameter all-gathers"
                )
                yield self.finding(index, iterate.snippet, at, message, _HELP)
        for cls, method in index.methods("forward"):
            members = [m for m in facts_of(cls).members.values() if any(c in random_lists for c in m.classes)]
            if not members or method.node is None:
                continue
            names = {m.name for m in members}
            for node in walk(method.node):
                if isinstance(node, (cst.For, cst.CompFor)):
                    paths = [access_path(it) for it in _iterated(node.iter)]
                    if any(p is not None and p.root == "self" and p.parts[:1] and p.parts[0] in names for p in paths):
                        message = (
                            f"iterating `{code_of(node.iter)}` skips layers at random: its class draws a random "
                            "number per layer in `__iter__`, so ranks run different layers and hang in their "
                            "parameter all-gathers"
                        )
                        yield self.finding(index, method.snippet, node.iter, message, _HELP)


def _text(d: Divergence) -> str:
    text = message(d, code_of(d.node))
    if d.kind == HOST_RANDOM:
        text += " (the host `random`/`numpy` stream is also consumed by data loading)"
    return text


# Builtins that iterate their argument, so the container's `__iter__` still runs (not reversed(): it indexes).
_PASS_THROUGH = (SAME_ITEMS - {"reversed"}) | {"enumerate", "zip"}


def _iterated(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The expressions whose `__iter__` a loop over `expr` runs: `enumerate(self.layers)` iterates `self.layers`."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _PASS_THROUGH:
        return [inner for arg in expr.args for inner in _iterated(arg.value)]
    return [expr]


def _iteration_gate(index: ModelIndex, node: cst.FunctionDef | None) -> cst.CSTNode | None:
    """In a container's `__iter__`, the test that decides whether a layer is yielded (`if dropout_probs[i] > p:
    yield m`), else the random draw that picks the layers it returns."""
    if node is None:
        return None
    for found in walk(node):
        if isinstance(found, cst.If) and any(isinstance(n, cst.Yield) for n in walk(found.body)):
            return found.test
    return next((c for c in walk(node) if isinstance(c, cst.Call) and draw_kind(index, c) is not None), None)


def _iterates_at_random(index: ModelIndex, info: ClassInfo) -> bool:
    """A container class (of this file) whose `__iter__` makes a random draw."""
    iterate = info.method("__iter__")
    return iterate is not None and draws_in(index, iterate) is not None

_HELP = (
    "make the decision identical on every rank (draw it on one rank and broadcast it), "
    "run the layer when `synced_gpus` is set, or disable the layer skipping under ZeRO-3"
)
