"""ZG205: whether a submodule runs depends on whether an optional input was passed."""

from __future__ import annotations

import ast
import copy
import re
from collections import Counter
from collections.abc import Iterator

from zgen.findings import Severity

from ..analysis.callers import optional_inputs, structural_inputs
from ..analysis.calls import ModuleCalls, follow
from ..analysis.divergence import NOT_RUNS
from ..analysis.script import method_runs
from ..analysis.reach import duck_instances, function_target
from ..analysis.taint import presence_helpers
from ..analysis.flow import Flat
from ..analysis.instances import attribute_classes
from ..analysis.persistence import gathers, member_gathers
from ..analysis.runs import HelperRuns, ast_function, ast_loop_items, ast_nodes, runs_argument, self_path
from ..program import known
from ..program.index import ClassInfo, MethodInfo, ModelIndex, memoised
from ..program.holds import held_attributes, module_arguments, module_like_name, patched_forward
from ..program.members import UNKNOWN_CLASS, Kind, facts_of
from ..program.skeleton import FunctionSpan
from ..program.tree import call_name, code_of, cst, walk
from ..program.trigger import word_first
from .rule import Report, Rule

# `name=None` in a signature, and `if [not] name [is [not] None]` in a body: the text pre-filter.
_OPTIONAL = re.compile(r"\b(\w+)\s*(?::[^=,()]*(?:\[[^\]]*\])?[^=,()]*)?=\s*(?:None\b|\[\]|\(\)|\{\})")
_EMPTY_DEFAULT = re.compile(r"=\s*(?:\[\]|\(\)|\{\})")  # `conditions=[]`: an input given as an empty container
_PRESENCE_IF = re.compile(r"if(?<!\wif)\s+(?:not\s+)?\(?\s*(\w+)(?:\.get\([^)]*\))?(?:\s+is(?:\s+not)?\s+None)?\s*(?:and\b|or\b|:)")
_NOT_A_TOWER_INPUT = known.CONVENTION_INPUT  # states, caches, masks, ids, labels, flags: the calling convention
# ... but for what a cross-attention block attends to: a decoder layer run without it skips the block's gather
_CROSS_ATTENDED = frozenset({"encoder_hidden_states"})


def _conventional(name: str) -> bool:
    """Is the input `name` part of the calling convention (`_NOT_A_TOWER_INPUT`), not what a block runs on?"""
    return name not in _CROSS_ATTENDED and _NOT_A_TOWER_INPUT.search(name) is not None


# Of those, the ones other than plain ids: still the caller's convention when a layer runs on them a second time
# (`token_type_ids` through the token table, `position_ids`), where ids of a sequence of their own are not.
_CONVENTION = re.compile(known.CONVENTION_INPUTS)


class OptionalInputSkipsModule(Rule):
    """A submodule runs only when an optional input of `forward` was given.

    ## What it does
    Flags, in `forward`, an `if` that tests only whether optional inputs
    (parameters defaulting to `None`) were passed, when one branch runs a
    whole tower (a submodule built of submodules with parameters) that the
    other branch does not run (either way round: a caller-supplied input
    that replaces a tower's output skips it too), or returns before the towers that follow:
    `if pixel_values is not None: feats = self.vision_tower(pixel_values)`.
    A helper method that runs submodules (`self.encode_text(text)`), a
    child's method that runs the child's submodules
    (`self.clip.embed_image(image)`) and a `Sequential` of two or more
    layers with parameters count as a tower (a block a loop takes out of a container, `for attn, cross_attn,
    ff in self.layers`, is of the classes the container holds); the presence test may be combined with settings (`not
    exists(embed) and not self.unconditional`) and with the presence of such a block (`exists(cross_attn) and
    exists(context)`: which blocks were built is the configuration). A single layer counts when it
    runs on the optional input itself (`if exists(edges): edges = self.edge_emb(edges)`: a rank
    called without edges skips the embedding's gather) or on a value computed from it on every path to
    the call (`recyclables.pairwise`, `dist = torch.cdist(coords, coords)`, `h = torch.cat([h, desc])`);
    one gated on an optional input but run on another value (an expert projection given routing
    indices, `self.proj(x[indices])`) is left alone: that is usually the caller's fixed convention. Inputs
    whose presence `forward` asserts
    (outright, or in every branch of a test on `self`: `if self.cross is
    None: assert src is None else: assert src is not None`) are fixed by
    the configuration; so are inputs that every parent in the file passes by
    its structure (a U-Net decoder walking its blocks with `skips[i] if i <
    len(skips) else None`: the last block never gets one, on every rank), not
    from its own inputs or a presence test on one. Tests on `self` attributes
    (fixed by the configuration) and branches that run the same submodule
    both ways are not flagged. A method of a plain object holding a model (a
    trainer's step, an agent) is flagged too when it runs the model, a submodule
    of it or a method of it that runs submodules on an optional input (or a value
    computed from one) only when given: `if exists(images): feats =
    self.model.vision(images)`. So is a module's public method declared to
    run without gradients (`@torch.no_grad() def generate_images(self, text,
    img=None)`), called on the built model with the call's inputs as `forward`
    is; and any other public method, counting only what runs on the optional
    input or what the input stands in for (`def decode(self, z=None, n=None):
    if z is None: z = self.sample_prior(n)`), where the class's own calls do not
    hand the parameter a setting (`self.fuse(x, self.extra)`). Two inputs asserted exclusive (`assert exists(images) ^
    exists(image_token_ids)`) are one presence: testing either decides. It is
    a warning: when every rank always gets the same inputs, nothing diverges.

    ## Why is this bad under ZeRO-3?
    Each submodule's forward all-gathers its parameters, a collective every
    rank must join. If the batches of some ranks carry the input (images,
    a text batch, control signals) and others do not, only some ranks enter
    the gather and the job hangs or mixes up later collectives.

    ## Example
    ```python
    def forward(self, input_ids, pixel_values=None):
        h = self.embed(input_ids)
        if pixel_values is not None:
            h = h + self.vision_tower(pixel_values)
        return self.decoder(h)
    ```

    ## Use instead
    ```python
    def forward(self, input_ids, pixel_values=None):
        h = self.embed(input_ids)
        if pixel_values is None:
            pixel_values = self.empty_images(input_ids)  # run the tower on a dummy batch
        image = self.vision_tower(pixel_values)
        h = h + image * has_images
        return self.decoder(h)
    ```
    or make sure every rank's batch carries the same optional inputs.
    """

    code = "ZG205"
    name = "optional-input-skips-module"
    severity = Severity.WARNING

    VALID = (
        # A single layer gated on an optional input but run on another value (routing indices pick its rows).
        """
from torch import nn

class Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x, indices=None):
        if indices is not None:
            x = self.proj(x)[indices]
        return x
""",
        # Both branches run the same submodule.
        """
from torch import nn

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x, targets=None):
        if targets is not None:
            logits = self.head(x)
        else:
            logits = self.head(x[:, -1:])
        return logits
""",
        # Internal inputs a parent passes by its own convention, tested together with the configuration.
        """
from torch import nn

class Bias(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos_proj = nn.Linear(4, 4)
        self.pos_out = nn.Linear(4, 4)

class Attention(nn.Module):
    def __init__(self, relative):
        super().__init__()
        self.relative = relative
        self.bias = Bias()
        self.qkv = nn.Linear(4, 12)

    def forward(self, x, rel_embeddings=None, relative_pos=None):
        scores = self.qkv(x)
        if self.relative and rel_embeddings is not None and relative_pos is not None:
            scores = scores + self.bias(rel_embeddings)
        return scores
""",
        # A test on the configuration (`self`), and an optional input that only picks a value.
        """
from torch import nn

class Net(nn.Module):
    def __init__(self, extra):
        super().__init__()
        self.extra = nn.Linear(4, 4) if extra else None
        self.body = nn.Linear(4, 4)

    def forward(self, x, mask=None):
        if self.extra is not None:
            x = self.extra(x)
        if mask is not None:
            x = x * mask
        return self.body(x)
""",
        # The optional input is asserted present exactly when the configuration built its tower.
        """
from torch import nn

class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(4, 4)
        self.kv = nn.Linear(4, 4)


class Layer(nn.Module):
    def __init__(self, cross):
        super().__init__()
        self.attn = nn.Linear(4, 4)
        self.cross = Tower() if cross else None

    def forward(self, x, src=None):
        if self.cross is None:
            assert src is None
        else:
            assert src is not None
        x = self.attn(x)
        if src is not None:
            x = x + self.cross(src)
        return x
""",
    )
    INVALID = (
        # A single embedding run on distances computed from the optional coordinates.
        """
import torch
from torch import nn

class Fold(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Linear(d, d)
        self.dist_emb = nn.Embedding(4096, d)

    def forward(self, x, coords=None):
        x = self.body(x)
        if coords is not None:
            dist = torch.cdist(coords, coords)
            x = x + self.dist_emb(torch.bucketize(dist, torch.linspace(0, 1, 8)))
        return x
""",
        # A single embedding run on the optional input itself.
        """
from torch import nn

class Graph(nn.Module):
    def __init__(self):
        super().__init__()
        self.node_emb = nn.Embedding(100, 64)
        self.edge_emb = nn.Embedding(512, 1024)

    def forward(self, nodes, edges=None):
        h = self.node_emb(nodes)
        if edges is not None:
            edges = self.edge_emb(edges)
        return h, edges
""",
        """
from torch import nn

class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.out = nn.Linear(4, 4)


class VLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision = Tower()
        self.text = nn.Linear(4, 4)

    def forward(self, ids, pixels=None):
        h = self.text(ids)
        if pixels is not None:
            h = h + self.vision(pixels)
        return h
""",
        # A caller-supplied input replaces the embedding tower's output.
        """
from torch import nn

class Embedding(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.words = nn.Embedding(v, d)
        self.positions = nn.Embedding(v, d)

class GPT(nn.Module):
    def __init__(self, v, d):
        super().__init__()
        self.embedding = Embedding(v, d)
        self.decoder = nn.Linear(d, d)

    def forward(self, ids, decoder_input=None):
        if decoder_input is not None:
            pass
        else:
            decoder_input = self.embedding(ids)
        return self.decoder(decoder_input)
""",
        # The presence test written with a helper (`exists(x)` is `x is not None`).
        """
from torch import nn

def exists(val):
    return val is not None

class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.out = nn.Linear(4, 4)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.audio = Tower()
        self.text = nn.Linear(4, 4)

    def forward(self, ids, audio=None):
        h = self.text(ids)
        if exists(audio):
            h = h + self.audio(audio)
        return h
""",
        # A flag recording whether this batch has images (a required input that may be None or empty).
        """
from torch import nn

class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.out = nn.Linear(4, 4)


class VLM(nn.Module):
    def __init__(self, add_encoder):
        super().__init__()
        self.add_encoder = add_encoder
        self.vision = Tower()
        self.text = nn.Linear(4, 4)

    def forward(self, images, ids):
        has_images = images is not None and images.shape[0] > 0
        image_embeddings = None
        if self.add_encoder and has_images:
            image_embeddings = self.vision(images)
        return self.text(ids), image_embeddings
""",
        # An early return before the text tower, through a helper method.
        """
from torch import nn

class Clip(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = nn.Linear(4, 4)
        self.text = nn.Linear(4, 4)

    def encode_text(self, t):
        return self.text(t)

    def forward(self, image, text=None):
        feats = self.visual(image)
        if text is None:
            return feats
        return feats, self.encode_text(text)
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        yield from self._forwards(index)
        yield from self._holders(index)

    def _holders(self, index: ModelIndex) -> Iterator[Report]:
        """Methods of plain objects holding a model (a trainer, an agent) that run it, or a part of it, on an optional
        input only when the call was given one: `if exists(images): feats = self.model.vision(images)`."""
        helpers = presence_helpers(index)
        for cls in index.classes.values():
            if cls.is_module or "None" not in cls.text and not any(f"{h}(" in cls.text for h in helpers):
                continue
            held = held_attributes(index, cls)
            if not held:
                continue
            for method in cls.all_methods():
                if method.index is not index or method.name == "__init__" or not _may_gate(method.text, helpers):
                    continue
                yield from self._held_gates(index, method, held, helpers, "self")
        # a function of the file handed the model (`def step(model, x, ctx=None)`): its arguments hold it
        for span in index.skeleton.functions.values():
            info = index.function_info(span.name)
            if info is None or not _may_gate(info.text, helpers) or info.node is None:
                continue
            held = dict(module_arguments(index, info.node))
            held.update(_duck_holders(index, info.node, held))
            if patched_forward(info.node):
                held["self"] = (UNKNOWN_CLASS,)  # a forward written for a module the file does not show
            if held:
                yield from self._held_gates(index, info, held, helpers, "")

    def _held_gates(
        self, index: ModelIndex, method: MethodInfo, held: dict[str, tuple[str, ...]], helpers: frozenset[str],
        root: str,
    ) -> Iterator[Report]:
        """The presence tests of one method (of a plain class, `root` "self") or function (`root` "") holding models
        (`held`: attribute or argument -> classes) that decide whether a held model, or a part of it, runs."""
        func = ast_function(method)
        if func is None:
            return
        nodes = ast_nodes(index, func)
        maybe_absent = optional_inputs(func) | _none_tested(func, nodes) | _batch_entries(func, nodes)
        optional = _tower_inputs(nodes, maybe_absent) - set(held)
        optional |= _presence_aliases(nodes, optional)
        optional -= _asserted(func.body, optional, helpers)
        if not optional:
            return
        carriers = _carriers(func, frozenset(optional))
        for position, (stmt, _later) in enumerate(_ifs(func)):
            if not _presence_test(stmt.test, optional, helpers):
                continue
            tested = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)} & optional
            held_carried = {  # (the tested input's own carriers: the others run on what this call was given)
                id(call): carriers.get(id(call), frozenset()) - (optional - tested)
                for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call))
            }
            body = _held_runs(index, stmt.body, held, held_carried, root)
            other = _held_runs(index, stmt.orelse, held, held_carried, root)
            skipped = (body[0] - other[1]) | (other[0] - body[1])
            if skipped:
                yield self._report(index, method, stmt, position, skipped)

    def _forwards(self, index: ModelIndex) -> Iterator[Report]:
        for cls in index.module_classes():
            yield from self._called_on_model(index, cls)
            method = cls.method("forward")
            if method is None:
                continue
            helpers = presence_helpers(index)
            gates = _may_gate(method.text, helpers | lazy_defaults(index))
            again = _may_call_again(method.text)
            if not gates and not again and not _may_hand_on(cls, method.text, helpers):
                continue  # no test of its own, and no method that tests what it could be handed
            func = ast_function(method)
            if func is None:
                continue
            nodes = ast_nodes(index, func)
            entries = _batch_entries(func, nodes)
            maybe_absent = optional_inputs(func) | _none_tested(func, nodes) | entries
            maybe_absent |= _optional_fields(index, func, nodes)  # `prompt = cond.prompt_emb`, defaulting to `None`
            optional = _tower_inputs(nodes, maybe_absent)
            runs = _Runs(index, cls)
            runs.entries = frozenset(entries)
            if again:  # `self.token_emb(cond_ids)` under the ids' presence test, `self.token_emb(x)` beside it
                conventional = {n for n in maybe_absent if _conventional(n) and not _CONVENTION.search(n)}
                conventional -= _asserted(func.body, conventional, helpers)
                conventional -= _filled(func.body, conventional, helpers)
                yield from self._called_again(index, method, func, conventional, helpers, runs)
            if not optional:
                yield from self._handed_functions(index, cls, nodes, maybe_absent, set(), helpers)
                continue
            optional |= _presence_aliases(nodes, optional) | _alternatives(nodes, optional, maybe_absent, helpers)
            optional -= _asserted(func.body, optional, helpers)
            optional -= _filled(func.body, optional, helpers)
            if optional:  # `skips[i] if i < len(skips) else None` from the parent that walks its blocks
                positional = tuple(a.arg for a in (*func.args.posonlyargs, *func.args.args))[1:]
                given = {*positional, *(a.arg for a in func.args.kwonlyargs)}
                optional -= structural_inputs(index, cls, frozenset(optional & given), positional)
            if gates:
                yield from self._gates(index, method, func, optional, helpers, runs)
            # `return self.branch(x, ctx)`: a method forward hands an optional input to decides the same way
            for name, params in _handed_inputs(cls, nodes, optional).items():
                helper = cls.method(name)
                text = helper.text if helper is not None else ""
                inner = ast_function(helper) if "None" in text or any(f"{h}(" in text for h in helpers) else None
                if inner is not None:
                    params = params | _presence_aliases(ast_nodes(index, inner), params)
                    params -= _asserted(inner.body, params, helpers)
                    params -= _filled(inner.body, params, helpers)
                    yield from self._gates(index, helper, inner, params, helpers, runs)
            yield from self._handed_functions(index, cls, nodes, maybe_absent, optional, helpers)

    def _handed_functions(
        self, index: ModelIndex, cls: ClassInfo, nodes: tuple[ast.AST, ...], maybe_absent: set[str],
        optional: set[str], helpers: frozenset[str],
    ) -> Iterator[Report]:
        """`return cl_forward(self, self.bert, input_ids, mlm_input_ids=mlm_input_ids)`: a function of the file that
        forward hands itself runs as part of forward, and decides as forward would on the inputs it is handed: a
        presence test of an optional one, or a second sequence of ids run through a layer it also runs on the first."""
        for name, (received, inner) in _handed_to_functions(index, nodes, maybe_absent).items():
            helper = index.function_info(name)
            runs = _Runs(index, cls)
            inner_nodes = ast_nodes(index, inner)
            params = {p for p, given in received.items() if given in optional}
            again = {
                p for p, given in received.items()
                if given in maybe_absent - optional and _conventional(given) and not _CONVENTION.search(given)
            }
            if again:
                again -= _asserted(inner.body, again, helpers)
                yield from self._called_again(index, helper, inner, again, helpers, runs)  # type: ignore[arg-type]
            if params:
                params |= _presence_aliases(inner_nodes, params)
                params -= _asserted(inner.body, params, helpers)
                params -= _filled(inner.body, params, helpers)
                yield from self._gates(index, helper, inner, params, helpers, runs)  # type: ignore[arg-type]

    def _called_on_model(self, index: ModelIndex, cls: ClassInfo) -> Iterator[Report]:
        """The module's public methods, entry points a caller runs on the built model as it runs `forward`
        (`decode(conditions=None, z=None, n=None)`, `sample(x, cond=None)`), and the submodules they run gather as in
        `forward`; so a presence test in one decides the same way. One declared to run without gradients
        (`@torch.no_grad() def generate_images(self, text, img=None)`) is an inference entry run on this call's
        inputs; in any other (`fit(train, test=None)`, `plot(name=None)`, `sample(x, steps=None)`: mostly settings
        or values a caller computed once) only what runs on the optional input, or what it stands in for (`if z is
        None: z = self.sample_prior(n)`), counts."""
        helpers = presence_helpers(index)
        for method in cls.span.methods:
            if method.startswith("_") or method == "forward":
                continue
            info = cls.method(method)
            if info is None or info.index is not index or not _may_gate(info.text, helpers | lazy_defaults(index)):
                continue
            func = ast_function(info)
            if func is None:
                continue
            linked = not any(_GRADIENT_FREE.search(ast.unparse(d)) for d in func.decorator_list)
            if linked and _walks_a_source(func):
                continue  # `fit(self, train_loader, test_loader=None)`: a procedure over the caller's data sources
            nodes = ast_nodes(index, func)
            maybe_absent = optional_inputs(func) | _none_tested(func, nodes) | _batch_entries(func, nodes)
            optional = _tower_inputs(nodes, maybe_absent)
            optional |= _presence_aliases(nodes, optional) | _alternatives(nodes, optional, maybe_absent, helpers)
            optional -= _asserted(func.body, optional, helpers)
            optional -= _filled(func.body, optional, helpers)
            if optional and linked:
                optional -= _given_settings(index, cls, func)
            if optional:
                runs = _Runs(index, cls)
                runs.entries = frozenset(_batch_entries(func, nodes))
                yield from self._gates(index, info, func, optional, helpers, runs, linked)

    def _gates(
        self, index: ModelIndex, method: MethodInfo, func: ast.FunctionDef, optional: set[str],
        helpers: frozenset[str], runs: _Runs, linked: bool = False,
    ) -> Iterator[Report]:
        """The presence tests on `optional` in one method that decide whether a tower runs (with `linked`, only a
        tower run on an optional input or one whose output an optional input stands in for)."""
        runs.start(func, optional)
        if optional:
            for position, expr in enumerate(_if_expressions(func)):
                # `t = self.time_mlp(times) if exists(times) else None`: a conditional expression gates the same way
                if _presence_test(expr.test, optional, helpers, runs.parts):
                    skipped = (runs.of([expr.body]) - runs.of([expr.orelse])) | (runs.of([expr.orelse]) - runs.of([expr.body]))
                    skipped = runs.towers_or_inputs(skipped, expr.test)
                    skipped = runs.linked(skipped, [expr.body, expr.orelse]) if linked else skipped
                    if skipped:
                        yield self._report_expression(index, method, position, skipped)
            fillers = lazy_defaults(index)
            for position, call in enumerate(_lazy_fills(func, fillers)):
                # `ctx = default(ctx, lambda: self.encoder(h))`: the lambda runs only when the input was not given
                if not (isinstance(call.args[0], ast.Name) and call.args[0].id in optional):
                    continue
                fill = [ast.Expr(value=call.args[1].body)]  # type: ignore[attr-defined]
                # (what the lambda computes is what the input stands in for: linked by its form)
                skipped = runs.towers_or_inputs(runs.of(fill), call.args[0])
                if skipped:
                    yield self._report_fill(index, method, position, fillers, skipped)
            cleared = _cleared(ast_nodes(index, func))
            for position, (stmt, later) in enumerate(_ifs(func)):
                if not _presence_test(stmt.test, optional, helpers, runs.parts):
                    continue
                tested = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)} & optional
                if tested and all(any(line < stmt.lineno for line in cleared.get(n, ())) for n in tested):
                    continue  # `if cached: key = None` ... `if key is None:`: the method's own state decides
                body, other = runs.of(stmt.body), runs.of(stmt.orelse)
                if _returns(stmt.body) and not stmt.orelse and runs.counts(stmt.body) == runs.counts(later):
                    continue  # `if exists(c): return self.mlp(x + c)` ... `return self.mlp(x)`: the same calls either way
                elif_ = stmt.orelse[0] if len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If) else None
                if not body and elif_ is not None and _presence_test(elif_.test, optional, helpers, runs.parts):
                    continue  # `if not has_x: ... elif has_x: tower(x)`: the `elif` is the decision to report
                skipped = (body - other) | (other - body)  # a given input may also skip a tower
                if _returns(stmt.body) and not stmt.orelse and _calls_itself(stmt.body, func.name):
                    # `if batch_size is not None: return cat([self(x[i:i + batch_size]) ...])`: the branch runs the
                    # method again, and with it what the method runs after the test; only its own calls differ
                    skipped = body - runs.of(later)
                elif not skipped and _returns(stmt.body):
                    skipped = runs.of(later) - runs.of(stmt.orelse)
                skipped = runs.towers_or_inputs(skipped, stmt.test)
                skipped = {name for name in skipped if name not in runs.singles or not _substituted(stmt, name)}
                skipped = runs.linked(skipped, [stmt, *later]) if linked else skipped
                if skipped:
                    yield self._report(index, method, stmt, position, skipped)

    def _called_again(
        self, index: ModelIndex, method: MethodInfo, func: ast.FunctionDef, inputs: set[str],
        helpers: frozenset[str], runs: _Runs,
    ) -> Iterator[Report]:
        """Presence tests on inputs the name lists leave alone (ids, states, masks: the caller's convention when a
        layer runs on them or not) that run a layer on the input which the method also runs outside the test, on
        another value (`if exists(cond_ids): c = self.token_emb(cond_ids)` ... `x = self.token_emb(x)`): a rank given
        the input runs the layer once more, and gathers its parameters once more, than a rank without it."""
        if not inputs:
            return
        runs.start(func, inputs)
        paths = _paths(func.body)
        for position, (stmt, _later) in enumerate(_ifs(func)):
            if not _presence_test(stmt.test, inputs, helpers):
                continue
            beside = runs.counts(paths.get(id(stmt), []))  # (what runs on the same path, not in another branch)
            tested = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)} & inputs
            body, other = runs.counts(stmt.body), runs.counts(stmt.orelse)
            on_input = {
                name for node in (n for b in stmt.body for n in ast.walk(b)) if isinstance(node, ast.Call)
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in tested
                for name in runs._call(node)
            }
            again = {
                name for name in on_input
                if body[name] != other[name] and beside[name] > 0
            }
            if again:
                yield self._report(index, method, stmt, position, again, "how many times")

    def _report_expression(self, index: ModelIndex, method: MethodInfo, position: int, skipped: set[str]) -> Report:
        """Place the finding on the test of the `position`-th conditional expression of the method."""
        snippet = method.snippet
        found = [n for n in walk(snippet.node) if isinstance(n, cst.IfExp)] if snippet is not None else []
        node = found[position].test if position < len(found) else (snippet.node if snippet else None)
        return self.finding(index, snippet, node, _message(skipped, code_of(node)), _HELP)

    def _report_fill(
        self, index: ModelIndex, method: MethodInfo, position: int, fillers: frozenset[str], skipped: set[str]
    ) -> Report:
        """Place the finding on the `position`-th lazy fill (`default(ctx, lambda: ...)`) of the method."""
        snippet = method.snippet
        found = [
            n for n in walk(snippet.node)
            if type(n) is cst.Call and isinstance(n.func, cst.Name) and n.func.value in fillers and len(n.args) == 2
            and isinstance(n.args[1].value, cst.Lambda)
        ] if snippet is not None else []
        node = found[position] if position < len(found) else (snippet.node if snippet else None)
        return self.finding(index, snippet, node, _message(skipped, code_of(node), "whether"), _HELP)

    def _report(
        self, index: ModelIndex, method: MethodInfo, stmt: ast.If, position: int, skipped: set[str],
        how: str = "whether",
    ) -> Report:
        """Parse only the `if` statement with libcst (the whole method for an `elif`) to place the finding."""
        snippet = index.parse(FunctionSpan("if", stmt.lineno, stmt.end_lineno or stmt.lineno, stmt.col_offset))
        node = snippet.node if snippet is not None else None
        if not isinstance(node, cst.If):
            snippet = method.snippet
            ifs = [n for n in walk(snippet.node) if isinstance(n, cst.If)] if snippet is not None else []
            node = ifs[position] if position < len(ifs) else None
        target = node.test if isinstance(node, cst.If) else (snippet.node if snippet else None)
        through = _first_call_of(node, skipped) if isinstance(node, cst.If) else None
        return self.finding(index, snippet, target, _message(skipped, code_of(target), how), _HELP, through)


def _first_call_of(stmt: cst.If, skipped: set[str]) -> cst.Call | None:
    """The first call in the branches of `stmt` of a module it decides (`self.vision(image)` under `if exists(image):`):
    the finding reaches down to it."""
    names = {name.removesuffix("()") for name in skipped}
    branches = [stmt.body] + ([stmt.orelse] if stmt.orelse is not None else [])
    for branch in branches:
        for node in walk(branch):
            if type(node) is cst.Call and code_of(node.func) in names:
                return node
    return None


def _walks_a_source(func: ast.FunctionDef) -> bool:
    """Does the method loop over one of its parameters (`for batch in train_loader`, `enumerate(loader)`)? A procedure
    walking a data source (a `fit`, an evaluation) takes its other optional arguments as the caller's settings."""
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)} - {"self"}
    for node in ast.walk(func):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            source = node.iter
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "enumerate":
                source = source.args[0] if source.args else source
            if isinstance(source, ast.Name) and source.id in params:
                return True
    return False


def _given_settings(index: ModelIndex, cls: ClassInfo, func: ast.FunctionDef) -> set[str]:
    """Parameters of the method `func` that a call of it on `self` in the class hands a setting (`self.fuse(x,
    self.extra)`): the configuration, not a call's input."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)][1:]
    found: set[str] = set()
    for method in cls.all_methods():
        if f"self.{func.name}(" not in method.text:
            continue
        caller = ast_function(method)
        for node in ast.walk(caller) if caller is not None else ():
            if not (isinstance(node, ast.Call) and self_path(node.func) == (func.name,)):
                continue
            pairs = [(params[i], a) for i, a in enumerate(node.args) if i < len(params)]
            pairs += [(k.arg, k.value) for k in node.keywords if k.arg]
            found |= {name for name, value in pairs if _is_config(value)}
    return found


def _message(skipped: set[str], test: str, how: str = "whether") -> str:
    names = ", ".join(f"`{s}`" for s in sorted(skipped)[:3])
    return (
        f"{how} {names} runs depends on `{test}`, i.e. on which optional inputs "
        "this call was given; ranks whose batch differs skip its parameter all-gather"
    )


def _paths(block: list[ast.stmt], around: tuple[ast.stmt, ...] = ()) -> dict[int, list[ast.stmt]]:
    """For each `if` of the block (at any depth), the statements that run on every path through it: the others of its
    own block and of each block around it, not the compound statements that hold it (whose other branches exclude
    it)."""
    found: dict[int, list[ast.stmt]] = {}
    for stmt in block:
        others = [*around, *(s for s in block if s is not stmt)]
        if isinstance(stmt, ast.If):
            found[id(stmt)] = others
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                found.update(_paths(inner, tuple(others)))
        for handler in getattr(stmt, "handlers", ()):
            found.update(_paths(handler.body, tuple(others)))
    return found


def _may_call_again(text: str) -> bool:
    """Text pre-filter: forward runs `self.<layer>(<name>` on an optional input the name lists leave alone
    (`conditioning_token_ids=None`) and calls that layer more than once."""
    if "None" not in text and not _EMPTY_DEFAULT.search(text):
        return False
    end = text.find(":\n")
    names = {m.group(1) for m in _OPTIONAL.finditer(text[: end + 1] if end >= 0 else text)}
    for name in (n for n in names if _conventional(n) and not _CONVENTION.search(n)):
        for match in re.finditer(r"self\.(\w+)\(\s*" + name + r"\b", text):
            if text.count(f"self.{match.group(1)}(") > 1:
                return True
    return False


def _may_hand_on(cls: ClassInfo, text: str, helpers: frozenset[str]) -> bool:
    """Text pre-filter: forward has an optional input and calls a method of its class, or hands `self` to a
    function of the file (`cl_forward(self, ...)`), that tests a value for presence (`if ctx is not None:`, `if
    exists(ctx):`)."""
    if "None" not in text[: text.find(":\n") + 1]:
        return False
    index = cls.index
    handed = [name for name in _SELF_HANDED.findall(text) if name in index.skeleton.functions]
    for name in (*(n for n in cls.span.methods if n != "forward" and f"self.{n}(" in text), *handed):
        inner = cls.method(name) if name in cls.span.methods else index.function_info(name)
        body = inner.text if inner is not None else ""
        if _PRESENCE_IF.search(body) or any(f"{h}(" in body for h in helpers):
            return True
    return False


_SELF_HANDED = re.compile(r"(?<![\w.])(\w+)\(\s*self\s*[,)]")


def _handed_inputs(cls: ClassInfo, nodes: tuple[ast.AST, ...], optional: set[str]) -> dict[str, set[str]]:
    """Methods of the class that `forward` (its `nodes`) calls with one of its optional inputs
    (`self.branch(x, ctx=ctx)`), and the parameters that receive them."""
    found: dict[str, set[str]] = {}
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner, name = node.func.value, node.func.attr
        if not (isinstance(owner, ast.Name) and owner.id == "self") or name in ("forward", "__call__"):
            continue
        method = cls.method(name)
        callee = ast_function(method) if method is not None else None
        if callee is None:
            continue
        params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)][1:]
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Name) and arg.id in optional and position < len(params):
                found.setdefault(name, set()).add(params[position])
        for keyword in node.keywords:
            if isinstance(keyword.value, ast.Name) and keyword.value.id in optional and keyword.arg:
                found.setdefault(name, set()).add(keyword.arg)
    return found


def _handed_to_functions(
    index: ModelIndex, nodes: tuple[ast.AST, ...], optional: set[str]
) -> dict[str, tuple[dict[str, str], ast.FunctionDef]]:
    """Module-level functions of the file that `forward` (its `nodes`) calls with `self` and one of its optional
    inputs (`cl_forward(self, self.bert, input_ids, mlm_input_ids=mlm_input_ids)`): the parameters that receive the
    inputs (-> the input each receives), and the function read as a method of the class (`_as_method`)."""
    found: dict[str, tuple[dict[str, str], ast.FunctionDef]] = {}
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)) or node.func.id in found:
            continue
        info = index.function_info(node.func.id)
        callee = ast_function(info) if info is not None and "None" in info.text else None
        if callee is None:
            continue
        params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
        bound = dict(zip(params, node.args))
        keywords = {*params, *(a.arg for a in callee.args.kwonlyargs)}
        bound.update((k.arg, k.value) for k in node.keywords if k.arg in keywords)
        selves = [p for p, value in bound.items() if isinstance(value, ast.Name) and value.id == "self"]
        received = {
            p: value.id for p, value in bound.items() if isinstance(value, ast.Name) and value.id in optional
            and p not in selves
        }
        if len(selves) == 1 and received:
            members = {p: value for p, value in bound.items() if self_path(value)}
            found[node.func.id] = (received, _as_method(callee, selves[0], members))
    return found


def _as_method(func: ast.FunctionDef, own: str, members: dict[str, ast.expr]) -> ast.FunctionDef:
    """A copy of `func` read as a method: its parameter `own`, given the module, named `self`, and each parameter
    given a member of it bound to that member first (`encoder = self.bert`), so calls through it run the member.
    Line numbers stay the file's."""

    class _Own(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            return ast.copy_location(ast.Name("self", node.ctx), node) if node.id == own else node

    method = _Own().visit(copy.deepcopy(func))
    for arg in (*method.args.posonlyargs, *method.args.args):
        if arg.arg == own:
            arg.arg = "self"
    first = method.body[0]
    bindings = [
        ast.copy_location(ast.Assign([ast.Name(param, ast.Store())], copy.deepcopy(value)), first)
        for param, value in members.items() if param != own
    ]
    method.body[:0] = bindings
    return ast.fix_missing_locations(method)


@memoised
def lazy_defaults(index: ModelIndex) -> frozenset[str]:
    """Functions of the file that hand back their first argument when it was given and otherwise call their second
    (`def default(val, d): if exists(val): return val; return d() if callable(d) else d`): `default(ctx, lambda:
    self.encoder(h))` runs the encoder only for a call given no `ctx`."""
    found = set()
    skeleton = index.skeleton
    for span in skeleton.functions.values():
        if span.end - span.start > 6:
            continue
        text = skeleton.text(span.start, span.end)
        match = _LAZY_DEFAULT_DEF.match(text.strip())
        if match is not None and f"{match.group(2)}()" in text and re.search(
            rf"\b{match.group(1)}\s+is\s+(?:not\s+)?None|\w+\(\s*{match.group(1)}\s*\)", text
        ):
            found.add(span.name)
    return frozenset(found)


# `def default(val, d):`: a function of two arguments (annotations and defaults aside).
_LAZY_DEFAULT_DEF = re.compile(r"def\s+\w+\(\s*(\w+)[^,()]*,\s*(\w+)[^,()]*\)")


def _lazy_fills(func: ast.FunctionDef, fillers: frozenset[str]) -> list[ast.Call]:
    """The calls `default(name, lambda: ...)` of a lazy default in the method, in source order (not in closures)."""
    if not fillers:
        return []
    found = [
        node for node in ast.walk(func)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in fillers
        and len(node.args) == 2 and not node.keywords and isinstance(node.args[1], ast.Lambda)
    ]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _if_expressions(func: ast.FunctionDef) -> list[ast.IfExp]:
    """Every conditional expression of the method in source pre-order (as libcst walks them)."""
    found: list[ast.IfExp] = []
    for stmt in func.body:
        _add_if_expressions(stmt, found)
    return found


def _add_if_expressions(node: ast.AST, found: list[ast.IfExp]) -> None:
    # (a module function, not a closure calling itself: that would be a cycle left to the collector)
    if isinstance(node, ast.IfExp):
        found.append(node)
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            _add_if_expressions(child, found)


def _helper_name(func: ast.expr, plain: bool = True) -> str | None:
    """The name a presence helper is called by: `exists` (with `plain`), or `self.exists` for a method of the
    class."""
    if isinstance(func, ast.Name):
        return func.id if plain else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return f"self.{func.attr}"
    return None


def _may_gate(text: str, helpers: frozenset[str] = frozenset()) -> bool:
    """Does the text have an `if` on a parameter that defaults to `None` or is tested against `None`?"""
    if helpers and any(f"{h}(" in text for h in helpers):
        return True
    if "None" not in text:
        return False
    end = text.find(":\n")
    optional = {m.group(1) for m in _OPTIONAL.finditer(text[: end + 1] if end >= 0 else text)}
    optional = {n for n in optional if not _conventional(n) or _labels_embedded(text, n)}
    if optional and any(m.group(1) in optional for m in _PRESENCE_IF.finditer(text)):
        return True
    signature = text[: end + 1] if end >= 0 else text
    return any(
        (
            re.search(word_first(m.group(1)) + r"\b", signature)
            or (".get(" in text and re.search(rf"(?<![.\w]){m.group(1)}\s*=\s*\w+\.get\(", text))  # a batch's entry
            # a field of an input (`prompt = cond.prompt_emb`: `_optional_fields`)
            or re.search(rf"^[ \t]*{m.group(1)}[ \t]*=[ \t]*(?!self\.)\w+\.\w+[ \t]*$", text, re.M)
        )
        and (not _conventional(m.group(1)) or _labels_embedded(text, m.group(1)))
        for m in _NONE_TEST.finditer(text, len(signature))
    )


# `x is None` / `x is not None` on a plain name: a required input that may still be left out.
_NONE_TEST = re.compile(r"(?<![.\w])(\w++)\s+is\s+(?:not\s+)?None\b")


def _none_tested(func: ast.FunctionDef, nodes: tuple[ast.AST, ...]) -> set[str]:
    """Parameters (with or without a default) that the body (the function's `nodes`) tests against `None`:
    effectively optional."""
    args = func.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self"}
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            right = node.comparators[0]
            if isinstance(node.left, ast.Name) and isinstance(right, ast.Constant) and right.value is None:
                if node.left.id in params:
                    found.add(node.left.id)
    return found


def _batch_entries(func: ast.FunctionDef, nodes: tuple[ast.AST, ...]) -> set[str]:
    """Locals read from an input with `.get` (`advantage = tensordict.get("advantage", None)`, `batch.get(key)`): an
    entry this call's batch may lack, as optional as a parameter defaulting to `None`. Not an entry of `self` (a
    setting)."""
    args = func.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self", "cls"}
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if (
                isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"
                and isinstance(value.func.value, ast.Name) and value.func.value.id in params
                and not value.keywords and (
                    len(value.args) == 1
                    or (len(value.args) == 2 and isinstance(value.args[1], ast.Constant) and value.args[1].value is None)
                )
            ):
                found.add(node.targets[0].id)
    return found


def _optional_fields(index: ModelIndex, func: ast.FunctionDef, nodes: tuple[ast.AST, ...]) -> set[str]:
    """Locals bound to a field of an input whose declared class defaults that field to `None` (`prompt =
    cond.prompt_emb` for `cond: T3Cond`, a dataclass declaring `prompt_emb: Optional[Tensor] = None`): as optional as
    a parameter defaulting to `None`."""
    declared = {
        a.arg: ast.unparse(a.annotation) for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)
        if a.annotation is not None and a.arg not in ("self", "cls")
    }
    found: set[str] = set()
    for node in nodes if declared else ():
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in declared:
            if value.attr in _none_fields(index, declared[value.value.id]):
                found.add(node.targets[0].id)
    return found


def _none_fields(index: ModelIndex, annotation: str) -> frozenset[str]:
    """The fields the class an annotation names (of this file or another) declares with a `None` default."""
    name = annotation.strip("\"'")
    if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
        return frozenset()
    local = index.classes.get(name)
    found = (index, local) if local is not None else index.external(index.qualify(name))
    if found is None:
        return frozenset()
    return frozenset(_NONE_FIELD.findall(found[1].text))


# `    prompt_emb: Optional[Tensor] = None` at a class body's level (one indent): a field that defaults to `None`
_NONE_FIELD = re.compile(r"^[ \t]{4}(\w+)[ \t]*:[^=\n]+=[ \t]*None[ \t]*(?:#[^\n]*)?$", re.M)


def _asserted(block: list[ast.stmt], optional: set[str], helpers: frozenset[str] = frozenset()) -> set[str]:
    """Inputs whose presence `block` asserts outright, tied to the configuration, or in every branch of a test on
    `self` alone.

    `if self.cross is None: assert src is None` / `else: assert src is not None`, or in one line
    `assert not (exists(cond) ^ exists(self.cond_mlp))`: whether the input is given is then fixed
    by the configuration, the same on every rank. Not an assert after an `if` that may return first (`if not
    return_loss: return logits` ... `assert exists(image)`): it holds on the training path only, and the gates before
    it run on both.
    """
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, ast.Assert):
            found |= {n for n in optional if _presence_of(stmt.test, n, helpers) or _tied(stmt.test, n, helpers)}
        elif isinstance(stmt, ast.If) and stmt.orelse and _only_self(stmt.test):
            found |= _asserted(stmt.body, optional, helpers) & _asserted(stmt.orelse, optional, helpers)
        elif isinstance(stmt, ast.If) and any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
            break
    return found


def _tower_inputs(nodes: tuple[ast.AST, ...], maybe_absent: set[str]) -> set[str]:
    """The inputs that may be absent and could feed a tower: not the calling convention's states, caches, masks or
    ids (`_NOT_A_TOWER_INPUT`), nor embeddings handed in instead of what they are computed from. Labels of a kind a
    layer of the module embeds (`self.map_augment(augment_labels)`) are a conditioning input, not a loss's targets."""
    embedded = _embedded_labels(nodes, maybe_absent)
    return {n for n in maybe_absent if not _conventional(n) or n in embedded} - _embeddings_filled(
        nodes, maybe_absent)


# Labels named for what they label (`augment_labels`, `class_labels`; not the convention's bare `labels`).
# (or masks, which a layer runs on as an image: `self._embed_masks(masks)` of a mask prompt; not the attention or
# padding masks of the calling convention)
_NAMED_LABELS = re.compile(r"\w+_labels?$|(?!\w*(?:attention|attn|padding|causal))\w*masks?(?:_inputs?)?$"
                           # (and ids, classes or positions a table of the module looks up as given:
                           # `self.token_type_embeddings(token_type_ids)`, `self.class_emb(labels)`,
                           # `self.wpe(position_ids)`)
                           r"|\w*_ids$|^ids$|^labels?$|^position\w*$|^token_type\w*$")


def _embedded_labels(nodes: tuple[ast.AST, ...], names: set[str]) -> set[str]:
    """Of `names`, the named labels a layer of the module runs on as given (`self.map_augment(augment_labels)`):
    what the module embeds, as it would a class or a prompt, not targets only a loss reads."""
    labels = {n for n in names if _NAMED_LABELS.match(n)}
    if not labels:
        return set()
    return {
        a.id for call in nodes if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"
        for i, a in enumerate(call.args)
        if isinstance(a, ast.Name) and a.id in labels and (i == 0 or "mask" not in a.id)  # (a mask as the input)
    }


def _labels_embedded(text: str, name: str) -> bool:
    """Text pre-filter of `_embedded_labels`: a named label handed to a method of `self` as given."""
    return bool(_NAMED_LABELS.match(name)) and re.search(r"self\.\w+\(\s*" + re.escape(name) + r"\s*[,)]", text) is not None


def _embeddings_filled(nodes: tuple[ast.AST, ...], names: set[str]) -> set[str]:
    """Embeddings handed in instead of what they are computed from, computed where absent (`if image_embeds is None:
    image_embeds = self.vision_model(pixel_values)`, or `embedding_output = self.embeddings(input_ids)` with the
    embeddings taken as they are otherwise): the calling convention of `inputs_embeds`, a choice of every caller
    alike. (Embeddings tested only for presence, `if exists(text_embeds): h = h + self.cond(text_embeds)`, are a
    conditioning input a rank's batch may lack.)"""
    found: set[str] = set()
    if not any(name.endswith("embeds") for name in names):
        return found
    for node in nodes:
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is):
            tested = test.left  # `x is None`
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            tested = test.operand.args[0] if isinstance(test.operand, ast.Call) and test.operand.args else test.operand
        else:
            continue
        if not (isinstance(tested, ast.Name) and tested.id.endswith("embeds")):
            continue
        if any(isinstance(stmt, (ast.Assign, ast.AnnAssign)) for stmt in node.body):
            found.add(tested.id)  # (what it computes where they are absent: them, or what they stand for)
    return found


def _filled(block: list[ast.stmt], optional: set[str], helpers: frozenset[str] = frozenset()) -> set[str]:
    """Inputs `block` fills in where absent before it tests or loops over anything else (`if not exists(msa): msa =
    rearrange(seq, "b n -> b () n")`, running nothing of `self`) and never sets back to `None`: present from then
    on, so a later presence test of them is the same on every rank."""
    found: set[str] = set()
    for stmt in block:
        if isinstance(stmt, ast.If):
            name = _fill_of(stmt, optional - found, helpers)
            if name is None:
                break
            found.add(name)
        elif not isinstance(stmt, (ast.Assert, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass)):
            break  # a loop, a `with`, a `try`: what runs in it may test the input first
        elif not isinstance(stmt, ast.Assert) and any(isinstance(n, (ast.IfExp, ast.BoolOp)) for n in ast.walk(stmt)):
            break  # `h = self.enc(x) if x is not None else 0`: a test before the fill
    if not found:
        return found
    unset = {
        t.id for n in ast.walk(ast.Module(body=block, type_ignores=[])) if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Constant) and n.value.value is None for t in n.targets if isinstance(t, ast.Name)
    }
    return found - unset


def _fill_of(stmt: ast.If, optional: set[str], helpers: frozenset[str]) -> str | None:
    """The input `if x is None: x = <value>` (or `if not exists(x):`) fills in: an `if` with no `else` testing its
    absence, whose body only assigns, `x` among the names, and calls nothing of `self` (a fill that runs a submodule
    is itself a gate on the input)."""
    test = stmt.test
    if stmt.orelse or not all(isinstance(s, (ast.Assign, ast.AnnAssign)) for s in stmt.body):
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        absent = test.operand
        names = [n for n in optional if isinstance(absent, (ast.Name, ast.Call)) and _presence_of(absent, n, helpers)]
    else:
        names = [n for n in optional if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Is)
                 and _presence_of(test, n, helpers)]
    if len(names) != 1:
        return None
    for node in ast.walk(ast.Module(body=stmt.body, type_ignores=[])):
        if isinstance(node, ast.Call) and "self" in {n.id for n in ast.walk(node.func) if isinstance(n, ast.Name)}:
            return None
    assigned = {
        t.id for s in stmt.body for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        if isinstance(t, ast.Name) and not (isinstance(s.value, ast.Constant) and s.value.value is None)
    }
    return names[0] if names[0] in assigned else None


def _tied(test: ast.expr, name: str, helpers: frozenset[str]) -> bool:
    """`not (exists(x) ^ exists(self.m))`, `(x is None) == (self.m is None)`: the input's presence equals a setting;
    `not (self.has_edges and not exists(edges))`: a setting requires it (and without the setting the layers it
    feeds are not built)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.BoolOp):
        values = test.operand.values
        if isinstance(test.operand.op, ast.And) and len(values) == 2:
            for setting, absent in (values, values[::-1]):
                if _only_self(setting) and isinstance(absent, ast.UnaryOp) and isinstance(absent.op, ast.Not):
                    if _presence_of(absent.operand, name, helpers):
                        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.BinOp):
        if not isinstance(test.operand.op, ast.BitXor):
            return False
        sides = [test.operand.left, test.operand.right]
    elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)):
        sides = [test.left, test.comparators[0]]
    else:
        return False
    return any(
        _presence_of(side, name, helpers) and _only_self(other) for side, other in (sides, sides[::-1])
    )


def _presence_of(test: ast.expr, name: str, helpers: frozenset[str] = frozenset()) -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Name):
        return test.id == name
    if isinstance(test, ast.Call) and _helper_name(test.func) in helpers and test.args:
        return isinstance(test.args[0], ast.Name) and test.args[0].id == name
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _only_self(test: ast.expr, parts: frozenset[str] = frozenset()) -> bool:
    """A test on the configuration: `self` is its only name, besides functions it calls (`exists(self.m)`), or the
    model's `parts` (`exists(cross_attn)` of `for attn, cross_attn, ff in self.layers`: which blocks were built)."""
    callees = {id(n.func) for n in ast.walk(test) if isinstance(n, ast.Call)}
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name) and id(n) not in callees}
    return names == {"self"} or bool(names) and names <= parts


def _ifs(func: ast.FunctionDef) -> Iterator[tuple[ast.If, list[ast.stmt]]]:
    """Every `if` in source pre-order (as libcst walks them), with the statements after it in its block."""
    order: list[tuple[ast.If, list[ast.stmt]]] = []
    _add_ifs(func.body, order)
    yield from order


def _add_ifs(block: list[ast.stmt], order: list[tuple[ast.If, list[ast.stmt]]]) -> None:
    # (a module function, not a closure calling itself: that would be a cycle left to the collector)
    for i, stmt in enumerate(block):
        if isinstance(stmt, ast.If):
            order.append((stmt, block[i + 1 :]))
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _add_ifs(inner, order)
        for handler in getattr(stmt, "handlers", ()):
            _add_ifs(handler.body, order)
        for case in getattr(stmt, "cases", ()):
            _add_ifs(case.body, order)


def _presence_test(
    test: ast.expr, optional: set[str], helpers: frozenset[str] = frozenset(), parts: frozenset[str] = frozenset()
) -> bool:
    """A test made only of `x is None` / `x is not None` / `x` / `x.get(k) is not None` on optional inputs.

    A flag that records presence may be combined with the configuration
    (`self.add_encoder and has_images`): the flag is what differs per rank.
    """
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        tests = [v for v in test.values if not _is_config(v) and not _only_self(v, parts)]
        if len(tests) == 1 and len(test.values) > 1:
            flag = tests[0].operand if isinstance(tests[0], ast.UnaryOp) else tests[0]
            if isinstance(flag, (ast.Call, ast.Compare)):  # `not exists(embed) and not self.unconditional`,
                return _presence_test(tests[0], optional, helpers)  # `self.emb is not None and attr is not None`
            return isinstance(flag, ast.Name) and flag.id in optional
    calls = [
        n for n in ast.walk(test) if isinstance(n, ast.Call) and _helper_name(n.func) in helpers
    ]  # `exists(x)`: a presence test written as a call
    emptiness = [
        n for n in ast.walk(test)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id not in helpers and n.args
        and all(isinstance(a, ast.Name) and a.id in optional for a in n.args)
    ]  # `exists(image) and not is_empty(image)`: an empty input is none (with a presence test beside it)
    callees = {id(c.func) for c in (*calls, *emptiness)} | {id(c.func.value) for c in calls if _helper_name(c.func, False)}
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name) and id(n) not in callees}
    if not names or not names <= optional:
        return False
    if any(isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and any(map(_text_value, n.comparators))
           for n in ast.walk(test)):
        return False  # `mode in ["multimodal", "fusion"]`: which mode a caller passed, not whether it passed one
    return (
        bool(calls)
        or any(isinstance(n, ast.Compare) for n in ast.walk(test))
        or isinstance(test, (ast.Name, ast.UnaryOp))
    )


def _text_value(expr: ast.expr) -> bool:
    """A string constant naming something, or a display of them (`"fusion"`, `["multimodal", "fusion"]`); not the
    empty string (`text != ""`: an empty input is none)."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return bool(expr.elts) and all(_text_value(e) for e in expr.elts)
    return isinstance(expr, ast.Constant) and isinstance(expr.value, str) and expr.value != ""


def _is_config(expr: ast.expr) -> bool:
    """`self.flag` / `not self.flag`: a setting fixed when the model was built."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        expr = expr.operand
    path = self_path(expr)
    return path is not None and "[]" not in path


def _presence_aliases(nodes: tuple[ast.AST, ...], optional: set[str]) -> set[str]:
    """Locals that only record whether optional inputs were given: `has_images = images is not None and ...`.

    The value may also test the given input's size (`images.shape[0] > 0`,
    `len(images) > 0`): a batch without images is the same as none.
    """
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _records_presence(node.value, optional | found):
                found.add(node.targets[0].id)
    return found


def _alternatives(
    nodes: tuple[ast.AST, ...], optional: set[str], maybe_absent: set[str], helpers: frozenset[str]
) -> set[str]:
    """Inputs asserted to be given exactly when an optional input is not, `assert exists(images) ^
    exists(image_token_ids)`: a test of one is a test of the other, so the alternative's presence decides whether
    what runs on the input runs (`if not exists(image_token_ids): ids = self.vae.encode(images)`), whatever the
    names lists say of it (ids, embeddings)."""
    found: set[str] = set()
    for node in nodes:
        test = node.test if isinstance(node, ast.Assert) else None
        if isinstance(test, ast.BinOp) and isinstance(test.op, ast.BitXor):
            sides = [test.left, test.right]
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
            sides = [test.left, test.comparators[0]]
        else:
            continue
        if any(isinstance(side, ast.Name) for side in sides):
            continue  # (`assert a != b`: values compared, not presences)
        named = [next((n for n in maybe_absent if _presence_of(side, n, helpers)), None) for side in sides]
        if None not in named and any(n in optional for n in named):
            found |= {n for n in named if n not in optional}
    return found


def _records_presence(expr: ast.expr, optional: set[str]) -> bool:
    if isinstance(expr, ast.BoolOp):
        return any(_records_presence(v, optional) for v in expr.values) and all(
            _records_presence(v, optional) or _size_test(v, optional) for v in expr.values
        )
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return _records_presence(expr.operand, optional)
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], (ast.Is, ast.IsNot)):
        right = expr.comparators[0]
        return (
            isinstance(expr.left, ast.Name)
            and expr.left.id in optional
            and isinstance(right, ast.Constant)
            and right.value is None
        )
    return False


def _size_test(expr: ast.expr, optional: set[str]) -> bool:
    """`x.shape[0] > 0`, `len(x) > 0`, `x.numel() > 0` on an optional input."""
    if not (isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.comparators[0], ast.Constant)):
        return False
    names = {n.id for n in ast.walk(expr.left) if isinstance(n, ast.Name)} - {"len"}
    return bool(names) and names <= optional


class _Runs:
    """Which towers (and helper methods that run submodules) a list of statements calls, read from `ast`."""

    def __init__(self, index: ModelIndex, cls: ClassInfo) -> None:
        self.index = index
        self.cls = cls
        self.resolver = ModuleCalls(index, cls, Flat(), "forward")
        self.helpers = HelperRuns(index, cls, self.resolver)
        self.aliases: dict[str, tuple[str, ...]] = {}
        self.parts: frozenset[str] = frozenset()  # loop variables bound to the items of a container of submodules
        self.inputs: frozenset[str] = frozenset()  # the optional inputs whose presence is tested
        self.replaced: frozenset[int] | None = None  # calls whose result an optional input stands in for (on demand)
        self.carriers: dict[int, frozenset[str]] | None = None  # per call, the inputs and locals computed from them
        self.singles: set[str] = set()  # single layers seen in the branches compared
        self.on_inputs: set[str] = set()  # ... of them, those run on an optional input somewhere
        self.stood_in: set[str] = set()  # ... and those whose output an optional input stands in for
        self.func: ast.FunctionDef | None = None  # the method read
        self.entries: frozenset[str] = frozenset()  # locals read from an input's `.get`: entries a batch may lack
        self.unseen: set[str] = set()  # calls of members whose kind the index cannot tell (a handed-in callable)
        self.paired: set[str] = set()  # loop variables taking an optional input's items beside a container's blocks

    def towers_or_inputs(self, skipped: set[str], test: ast.expr) -> set[str]:
        """The skipped calls that count: towers, helpers, and single layers run on an optional input or whose output
        it stands in for, also a layer built only under a setting (`if self.context_size is not None: self.context =
        nn.Linear(...)` ... `if context is not None: self.context(context)`): a caller that passes the input on some
        ranks and not on others skips its gather all the same."""
        given = self.on_inputs | self.stood_in
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)} & self.inputs
        if names and names <= self.entries:
            # a batch's entry is weaker evidence than a declared optional input: only members known to be modules
            skipped = skipped - self.unseen
        return {name for name in skipped if name not in self.singles or name in given}

    def linked(self, skipped: set[str], parts: list[ast.AST]) -> set[str]:
        """Of the `skipped` calls, those that `parts` make on a value computed from an optional input (any argument:
        `self.cond(cond)`, `self.sample_prior(n, conditions)`) or whose output an optional input stands in for
        (`z = self.sample_prior(n)` for the input `z`)."""
        if self.func is None:
            return set()
        if self.carriers is None:
            self.carriers = _carriers(self.func, self.inputs)
        found: set[str] = set()
        for node in (n for part in parts for n in ast.walk(part)):
            if not isinstance(node, ast.Call):
                continue
            values = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
            values += [k.value for k in node.keywords]
            carried = self.carriers.get(id(node), self.inputs)
            if self._stood_in(node) or any(_data_names(v) & carried for v in values):
                found |= self._call(node) & skipped
        return found

    def start(self, func: ast.FunctionDef, inputs: set[str]) -> None:
        """Read method `func` afresh, testing the presence of `inputs`: its locals bound to a submodule or its forward
        (`fn = self.unet.forward`, for `fn(x)`) or to the items of a container of submodules (`for attn, cross_attn, ff
        in self.layers`), and no single layer or stand-in seen yet."""
        self.func, self.inputs, self.replaced, self.carriers = func, frozenset(inputs), None, None
        self.singles, self.on_inputs, self.stood_in = set(), set(), set()
        self.aliases, self.paired = {}, set()
        for node in ast_nodes(self.index, func):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                for target, value in _pairs(node.targets[0], node.value):  # (`vae, n = self.vae, self.n` too)
                    parts = self_path(value)
                    if parts and (parts[-1] in ("forward", "__call__") or parts[0] in facts_of(self.cls).members):
                        self.aliases[target] = parts
            elif isinstance(node, (ast.For, ast.comprehension)):
                items = self._items(node.target, node.iter)
                self.aliases.update(items)
                if items:  # `zip(self.state_encoders, states)`: each block runs on an item of the input
                    self.paired |= {
                        name for name, source in ast_loop_items(node.target, node.iter)
                        if isinstance(source, ast.Name) and source.id in self.inputs
                    }
        self.parts = frozenset(name for name, parts in self.aliases.items() if parts[-1] == "[]")

    def _items(self, target: ast.expr, iterable: ast.expr) -> dict[str, tuple[str, ...]]:
        """The loop variables that take the items of a container member (`for block in self.blocks`, `for i, block in
        enumerate(self.blocks)`, each of `for attn, ff in self.layers`, whose blocks are lists of layers)."""
        pairs = ast_loop_items(target, iterable)
        if not pairs and isinstance(target, ast.Tuple):
            pairs = [(e.id, iterable) for e in target.elts if isinstance(e, ast.Name)]
        found = {}
        for name, items in pairs:
            parts = self_path(items)
            resolved = self.resolver.resolve(parts) if parts and "[]" not in parts else None
            if resolved is not None and resolved[0] == Kind.CONTAINER:
                found[name] = (*parts, "[]")
        return found

    def of(self, stmts: list[ast.stmt]) -> set[str]:
        found: set[str] = set()
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call):
                    found |= self._call(node)
        return found

    def counts(self, stmts: list[ast.stmt]) -> Counter[str]:
        """How many calls of each tower (or helper) the statements make, for blocks compared call by call."""
        found: Counter[str] = Counter()
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call):
                    found.update(self._call(node))
        return found

    def _call(self, call: ast.Call) -> set[str]:
        func = call.func
        parts = self.aliases.get(func.id) if isinstance(func, ast.Name) else self_path(func) or _getattr_path(func)
        if not parts and isinstance(func, ast.Attribute):  # `vae.encode(img)` of a local `vae = self.vae`
            parts = self._aliased(func)
        if not parts and isinstance(func, ast.Name):
            return self._handed(call, func.id)
        if not parts:
            return set()
        if len(parts) == 1 and parts[0] not in facts_of(self.cls).members:
            name = parts[0]
            if name not in ("forward", "__call__") and self.helpers.helper_runs_modules(name):
                return {f"self.{name}()"}
            if module_like_name(name) and self.cls.inherited_method(name) is None and self._stood_in(call):
                # `prev_enc if prev_enc is not None else self.encoder(*xs)` in a base class whose subclasses build
                # `self.encoder`: a module of a class no file here names, whose output the optional input stands in for
                self.unseen.add(f"self.{name}")
                return {f"self.{name}"}
            return set()
        if parts[-1] in ("forward", "__call__"):
            parts = parts[:-1]
        if len(parts) > 1 and parts[-1] in NOT_RUNS:
            return set()  # `self.code_converter.parameters()`: a walk of the child, no run of it
        if len(parts) == 1 and parts[0] in _handed_networks(self.index, self.cls):
            return {f"self.{parts[0]}"}
        resolved = self.resolver.resolve(parts)
        if resolved is None and len(parts) > 1 and parts[-1] not in NOT_RUNS:
            # `self.clip.embed_image(image)`: a method of a child that runs the child's own submodules
            owner = self.resolver.resolve(parts[:-1])
            lacking = True  # (a method the class lacks is a subclass's own, and may run its layers)
            if len(parts) == 2 and (owner is None or owner[0] == Kind.UNKNOWN):
                # `self.autoencoder = autoencoder` from `autoencoder: MeshAutoencoder`: the class its annotation names,
                # answering only for the methods it defines (`self.encode_text = partial(t5_encode_text)` is none)
                instance = attribute_classes(self.index, self.cls, parts[0])
                owner, lacking = ((Kind.MODULE, instance.classes), False) if instance is not None else (owner, lacking)
                if instance is None and _built_by_a_builder(self.cls, parts[0]) and self._stood_in(call):
                    # `self.rpn_head = build_head(cfg)`: a registry's head, whose method (`simple_test_rpn`) runs it,
                    # counted where an optional input stands in for what it returns (`proposals`)
                    return {f"self.{'.'.join(parts)}()"}
            if owner is not None and owner[0] == Kind.MODULE and method_runs(self.index, owner[1], parts[-1], False, lacking):
                return {f"self.{'.'.join(parts)}()".replace(".[]", "[...]")}
            if len(parts) == 2 and call.args and parts[0] in _handed_networks(self.index, self.cls):
                return {f"self.{'.'.join(parts)}()"}  # `self.vae.encode(images)`: a whole network handed in, run
            return set()
        if resolved is None or resolved[0] not in (Kind.MODULE, Kind.CONTAINER, Kind.UNKNOWN):
            return set()
        kind, classes = resolved
        if kind == Kind.UNKNOWN:
            self.unseen.add("self." + ".".join(p if p != "[]" else "[...]" for p in parts).replace(".[", "["))
        if not any(gathers(self.index, c) for c in classes):
            return set()
        member = facts_of(self.cls).members.get(parts[0]) if len(parts) == 1 else None
        if member is not None and not member_gathers(self.index, member):
            return set()  # `nn.Linear(8, 16)`: a layer ZeRO-3 keeps gathered gathers nothing when it runs
        if not (_is_tower(self.index, classes) or (kind == Kind.CONTAINER and _layers(self.index, classes) > 1)):
            # A single layer counts when run on the optional input itself (`self.edge_emb(edges)`, its first argument;
            # not `self.experts(h, top_k_index)`, an input beside the value it runs on) or when the input
            # stands in for its output (`x = self.wte(ids) if embeddings is None else embeddings`); it is compared
            # with the other branch wherever it runs there (`self.k_proj(hidden_states)`: the same layer both ways).
            name = "self." + ".".join(p if p != "[]" else "[...]" for p in parts).replace(".[", "[")
            self.singles.add(name)
            # (the value it runs on, not routing indices beside it; a call given only keywords, `emb(expand=e,
            # node_index=u[..., i])`, runs on any of them)
            values = [call.args[0]] if call.args else [k.value for k in call.keywords if k.arg]
            if self._stood_in(call):
                self.stood_in.add(name)
            elif any(isinstance(v, ast.Name) and (v.id in self.inputs or v.id in self.paired) for v in values):
                self.on_inputs.add(name)
            elif kind != Kind.UNKNOWN and any(self._carries(call, v) for v in values):
                self.on_inputs.add(name)
            return {name}
        return {"self." + ".".join(p if p != "[]" else "[...]" for p in parts).replace(".[", "[")}

    def _stood_in(self, call: ast.Call) -> bool:
        """Does an optional input stand in for what `call` returns (`x = proposals` in the other arm)?"""
        if self.replaced is None:
            self.replaced = (
                _replaced_by_inputs(ast_nodes(self.index, self.func), self.inputs) if self.func is not None
                else frozenset()
            )
        return id(call) in self.replaced

    def _aliased(self, func: ast.Attribute) -> tuple[str, ...] | None:
        """The path from `self` of a method called on a local alias of a member (`vae.encode`, `vae = self.vae`)."""
        chain: list[str] = []
        node: ast.expr = func
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        base = self.aliases.get(node.id) if isinstance(node, ast.Name) else None
        return (*base, *chain) if base and "[]" not in base else None

    def _carries(self, call: ast.Call, value: ast.expr) -> bool:
        """Is `value` an optional input or computed from one (`recyclables.pairwise`, `torch.cat([h, desc])`, a local
        bound to such a value, `dist = torch.cdist(coords, coords)`)? An input used only as an index (`x[indices]`)
        picks rows of another value: the layer runs on that value."""
        if self.carriers is None:
            self.carriers = _carriers(self.func, self.inputs) if self.func is not None else {}
        return bool(_data_names(value) & self.carriers.get(id(call), self.inputs))

    def _handed(self, call: ast.Call, name: str) -> set[str]:
        """`aux_loss(self, x)`: a function of the file handed this module that runs it; and `auto_grad_checkpoint(
        self.blocks[i], x)`, a function of this file or another handed a submodule that it runs: that submodule."""
        info = function_target(self.index, name) if "self" in (a.id for a in call.args if isinstance(a, ast.Name)) \
            or any(self_path(a) for a in call.args) else None
        if info is None or info.node is None:
            return set()
        names = [p.name.value for p in (*info.node.params.posonly_params, *info.node.params.params)]
        found: set[str] = set()
        for position, arg in enumerate(call.args[:len(names)]):
            if isinstance(arg, ast.Starred):
                break
            if isinstance(arg, ast.Name) and arg.id == "self":
                classes = (self.cls.name,) if info.index is self.index else (UNKNOWN_CLASS,)
                if runs_argument(info.index, info.name, names[position], classes):
                    return {f"{name}()"}
            elif self_path(arg) and runs_argument(info.index, info.name, names[position], (UNKNOWN_CLASS,)):
                found |= self._call(ast.Call(func=arg, args=[], keywords=[]))
        return found


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[str, ast.expr]]:
    """The names an assignment binds and the values they take: `a = v`, each of `a, b = v, w`, and of `a, b = v`."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return [(t.id, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name)]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Attribute):
        # `resnet, resnet2 = self.local_cond_encoder`: each name an item of the container
        item = ast.Subscript(value=value, slice=ast.Constant(value=0), ctx=ast.Load())
        return [(t.id, item) for t in target.elts if isinstance(t, ast.Name)]
    return []


def _carriers(func: ast.FunctionDef, inputs: frozenset[str]) -> dict[int, frozenset[str]]:
    """For each call of the method, the names that hold an optional input or a value computed from one on every path
    to it: `dist = torch.cdist(coords, coords)` ... `self.emb(dist)`, not `h` after `if c: h = f(coords)` / `else: h
    = self.conv(x)`, which may hold either."""
    found: dict[int, frozenset[str]] = {}
    _carry(func.body, frozenset(inputs), found, frozenset(inputs))
    return found


def _carry(
    block: list[ast.stmt], held: frozenset[str], found: dict[int, frozenset[str]], inputs: frozenset[str]
) -> frozenset[str] | None:
    """Walk `block` from the carriers `held`; the carriers after it, or None when it always returns or raises. The
    `inputs` stay carriers when bound again (`images = batch.get("images")`, `context = self.norm(context)`)."""
    for stmt in block:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        heads = {
            ast.If: ("test",), ast.While: ("test",), ast.For: ("iter",), ast.AsyncFor: ("iter",),
            ast.With: ("items",), ast.AsyncWith: ("items",), ast.Try: (),
        }.get(type(stmt))
        own = [getattr(stmt, f) for f in heads] if heads is not None else [stmt]
        for part in own:
            for node in (n for p in (part if isinstance(part, list) else [part]) for n in ast.walk(p)):
                if isinstance(node, ast.Call):
                    found[id(node)] = held
        if heads is None:
            if isinstance(stmt, (ast.Return, ast.Raise)):
                return None
            held = _bind(stmt, held) | inputs
        elif isinstance(stmt, ast.If):
            outs = [_carry(stmt.body, held, found, inputs), _carry(stmt.orelse, held, found, inputs)]
            outs = [o for o in outs if o is not None]
            if not outs:
                return None
            held = frozenset.intersection(*outs)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            # (the items of a loop over an input are not it: an optional loader or list is the caller's choice)
            inner = held if isinstance(stmt, ast.While) else _bound(stmt.target, held, False)
            out = _carry(stmt.body, inner, found, inputs)
            held = held & out if out is not None else held
            held = _carry(stmt.orelse, held, found, inputs) or held
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            out = _carry(stmt.body, held, found, inputs)
            if out is None:
                return None
            held = out
        else:  # try: what holds after the body and after every handler
            outs = [_carry(stmt.body, held, found, inputs)]
            outs += [_carry(handler.body, held, found, inputs) for handler in stmt.handlers]
            live = [o for o in outs if o is not None]
            held = frozenset.intersection(held, *live)
            _carry(stmt.finalbody, held, found, inputs)
    return held


def _bind(stmt: ast.stmt, held: frozenset[str]) -> frozenset[str]:
    """The carriers after an assignment: its targets hold a carrier exactly when its value computes with one."""
    if isinstance(stmt, ast.Assign):
        carries = bool(_data_names(stmt.value) & held)
        for target in stmt.targets:
            held = _bound(target, held, carries)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        held = _bound(stmt.target, held, bool(_data_names(stmt.value) & held))
    elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        if _data_names(stmt.value) & held:
            held = held | {stmt.target.id}
    return held


def _bound(target: ast.expr, held: frozenset[str], carries: bool) -> frozenset[str]:
    """The carriers after binding `target` (a name, or a tuple of names, starred too) to a value that `carries` one."""
    elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    elements = [e.value if isinstance(e, ast.Starred) else e for e in elements]
    names = {e.id for e in elements if isinstance(e, ast.Name)}
    return held | names if carries else held - names


def _data_names(value: ast.expr) -> set[str]:
    """The names whose values `value` computes with, not those only indexing another value (`x[indices]`) or only
    called (`torch.cat`)."""
    skipped = set()
    for node in ast.walk(value):
        if isinstance(node, ast.Subscript):
            skipped |= {id(n) for n in ast.walk(node.slice)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            skipped.add(id(node.func))  # (`coords.float()`: the receiver is data)
    return {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and id(n) not in skipped}


def _held_runs(
    index: ModelIndex, block: list[ast.stmt], held: dict[str, tuple[str, ...]], carried: dict[int, frozenset[str]],
    root: str = "self",
) -> tuple[set[str], set[str]]:
    """The held models the block runs (`self.model(x)`, a submodule `self.model.vision(x)`, a method running
    submodules `self.model.encode(x)`; not `self.model.to(device)`) on a value computed from the tested input (its
    first argument), and all it runs. With `root` "", the models are the function's arguments (`model.vision(x)`)."""
    on_input: set[str] = set()
    every: set[str] = set()
    for node in (n for stmt in block for n in ast.walk(stmt)):
        if not isinstance(node, ast.Call):
            continue
        parts = self_path(node.func) if root else _argument_path(node.func, "self" in held)
        if not parts or parts[0] not in held or "[]" in parts or not _held_call_runs(index, held[parts[0]], parts[1:]):
            continue
        name = (f"{root}." if root else "") + ".".join(parts[:-1] if parts[-1] in ("forward", "__call__") else parts)
        every.add(name)
        first = node.args[0] if node.args else None
        if first is not None and _data_names(first) & carried.get(id(node), frozenset()):
            on_input.add(name)
    return on_input, every


def _duck_holders(index: ModelIndex, node, known_held: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Untyped arguments of a function that the one plain class of the package answering the methods called on them
    is an instance of, a class that holds a model (`def dream(t5, ...): t5.get_text_embeddings(prompt)` for
    `T5Embedder`, which keeps a T5 encoder): what they run is that model, of a class we need not read."""
    found: dict[str, tuple[str, ...]] = {}
    params = node.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        name = param.name.value
        if name in known_held or name in ("self", "cls") or param.annotation is not None or param.default is not None:
            continue
        classes = duck_instances(None, cst.Name(name), node, index)
        if classes and all(held_attributes(cls.index, cls) for cls in classes):
            found[name] = (UNKNOWN_CLASS,)
    return found


def _argument_path(node: ast.expr, patched: bool = False) -> tuple[str, ...] | None:
    """`model.vision` as ("model", "vision"): a path rooted at a name of the function (not `self`, unless the
    function is a `patched` forward, whose `self` is the module it runs on)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id == "cls" or node.id == "self" and not patched:
        return None
    return (node.id, *reversed(parts))


def _held_call_runs(index: ModelIndex, classes: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Does calling `<a model of classes>.<path>` run it or a submodule with parameters?"""
    if not path or path[-1] in ("forward", "__call__"):
        return True
    reached = follow(index, Kind.MODULE, classes, path)
    if reached is not None and reached[0] in (Kind.MODULE, Kind.CONTAINER):
        return any(gathers(index, c) for c in reached[1])
    if len(path) == 1 and set(classes) <= {UNKNOWN_CLASS}:
        return path[-1] not in NOT_RUNS  # `self.model.vision(x)` of a model of no class we can read: a part of it runs
    owner = follow(index, Kind.MODULE, classes, path[:-1]) if len(path) > 1 else (Kind.MODULE, classes)
    return (
        owner is not None and owner[0] == Kind.MODULE and path[-1] not in NOT_RUNS
        and method_runs(index, owner[1], path[-1], False, False)
    )


def _cleared(nodes: tuple[ast.AST, ...]) -> dict[str, list[int]]:
    """The lines where the method (its `ast_nodes`) sets a name to None (`key = None` once a cache holds its
    projection)."""
    found: dict[str, list[int]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.lineno)
    return found


def _substituted(stmt: ast.If, name: str) -> bool:
    """Does the other branch bind what the single layer `name` (`self.k_proj`) computes in one branch to another
    value (`if states is not None: k = self.k_proj(states)` / `else: k = cache[i]`)? The input is then absent
    exactly when a substitute (a cache filled by an earlier call) stands ready: the step of the caller's loop, not
    this rank's batch, decides."""
    layer = tuple(name[5:].split("."))

    def bound(block: list[ast.stmt], computed: bool) -> set[str]:
        found = set()
        for node in (n for stmt_ in block for n in ast.walk(stmt_)):
            if isinstance(node, ast.Assign):
                calls = any(isinstance(c, ast.Call) and self_path(c.func) == layer for c in ast.walk(node.value))
                none = isinstance(node.value, ast.Constant) and node.value.value is None
                if (calls if computed else not calls and not none):
                    for target in node.targets:
                        for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                            if isinstance(element, ast.Name):
                                found.add(element.id)
        return found

    for block, other in ((stmt.body, stmt.orelse), (stmt.orelse, stmt.body)):
        outputs = bound(block, True)
        if outputs and outputs & bound(other, False):
            return True
    return False


def _replaced_by_inputs(nodes: tuple[ast.AST, ...], optional: set[str]) -> frozenset[int]:
    """Calls whose result an optional input stands in for: `emb = self.wte(ids)` assigned to the input's own name, or
    one side of `self.wte(ids) if emb is None else emb` whose other side is the input."""
    found: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in optional:
                found.add(id(node.value))
        elif isinstance(node, ast.IfExp):
            for side, other in ((node.body, node.orelse), (node.orelse, node.body)):
                if isinstance(side, ast.Call) and isinstance(other, ast.Name) and other.id in optional:
                    found.add(id(side))
        elif isinstance(node, ast.If) and node.orelse:
            # `if proposals is None: proposal_list = self.rpn_head.simple_test_rpn(x)` / `else: proposal_list =
            # proposals`: the two arms bind one local, to the call or to the input
            arms = [_bound_values(node.body), _bound_values(node.orelse)]
            for side, other in (arms, arms[::-1]):
                for name, value in side.items():
                    given = other.get(name)
                    if isinstance(value, ast.Call) and isinstance(given, ast.Name) and given.id in optional:
                        found.add(id(value))
        for block in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if isinstance(block, list):
                found |= _returned_stand_ins(block, optional)
    return frozenset(found)


def _returned_stand_ins(block: list[ast.stmt], optional: set[str]) -> set[int]:
    """Calls of `block` whose result an optional input stands in for by an early return: `if cand_encs is not None:
    return ctx.mm(cand_encs.t())` before `_, cands = self.model(ids)` ... `return ctx.mm(cands.t())`, the same
    expression on the call's local in the input's place."""
    found: set[int] = set()
    for at, stmt in enumerate(block):
        if not (isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.body[-1], ast.Return)
                and stmt.body[-1].value is not None):
            continue
        returned = stmt.body[-1].value
        given = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name) and n.id in optional} & {
            n.id for n in ast.walk(returned) if isinstance(n, ast.Name)}  # (returned in the input's own place)
        later = [n for s in block[at + 1:] for n in ast.walk(s)] if given else []
        shapes = {ast.dump(n) for n in later if type(n) is type(returned)}  # (only those could equal it renamed)
        for sub in later if shapes else ():
            if not (isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call)):
                continue
            for local in (n.id for t in sub.targets for n in ast.walk(t) if isinstance(n, ast.Name)):
                if any(ast.dump(_renamed(returned, name, local)) in shapes for name in given):
                    found.add(id(sub.value))
    return found


def _renamed(expr: ast.expr, old: str, new: str) -> ast.expr:
    """A copy of `expr` reading `new` wherever it reads `old`."""
    copied = copy.deepcopy(expr)
    for node in ast.walk(copied):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = new
    return copied


def _bound_values(block: list[ast.stmt]) -> dict[str, ast.expr]:
    """The locals a block binds by plain assignments at its top level, with their values."""
    return {
        stmt.targets[0].id: stmt.value for stmt in block
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
    }


def _getattr_path(func: ast.expr) -> tuple[str, ...] | None:
    """`getattr(self, "encoder")`: the member a literal name picks, as a path from `self`."""
    if not (isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr"):
        return None
    if len(func.args) < 2 or not (isinstance(func.args[0], ast.Name) and func.args[0].id == "self"):
        return None
    name = func.args[1]
    return (name.value,) if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


@memoised
def _handed_networks(index: ModelIndex, cls: ClassInfo) -> frozenset[str]:
    """Members the constructor stores from an argument declared as any module (`net: Module`, `model:
    nn.Module | None`, or unannotated and named as a model is): a whole network of a class we cannot see, such
    as the model a flow or diffusion wrapper runs. An argument declared as a layer class is not one."""
    init = cls.method("__init__")
    func = ast_function(init) if init is not None else None
    if func is None:
        return frozenset()
    handed = set()
    for arg in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs):
        if arg.annotation is None:
            if module_like_name(arg.arg) and arg.arg not in ("self", "cls"):
                handed.add(arg.arg)
        elif set(re.findall(r"[A-Za-z_]\w*", ast.unparse(arg.annotation))) <= _GENERIC_MODULE and "Module" in ast.unparse(
            arg.annotation
        ):
            handed.add(arg.arg)
    found = set()
    for stmt in ast.walk(func):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name):
            target = stmt.targets[0]
            if stmt.value.id in handed and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                if target.value.id == "self":
                    found.add(target.attr)
    return frozenset(found)


_GENERIC_MODULE = {"Module", "nn", "torch", "Optional", "None"}

# A decorator running the method without gradients: `@torch.no_grad()`, `@torch.inference_mode()`.
_GRADIENT_FREE = re.compile(r"\bno_grad\b|\binference_mode\b")


def _is_tower(index: ModelIndex, classes: tuple[str, ...]) -> bool:
    """A module built of submodules with parameters (an encoder, a tower), not a single layer."""
    for ref in classes:
        local = index.classes.get(ref)
        external = index.external(ref) if local is None else None
        info = local or (external[1] if external else None)
        if info is None:
            if known.is_torch_module_class(ref) and ref.rsplit(".", 1)[-1] in known.TOWERS:
                return True  # `nn.TransformerEncoder(layer, n)`: a stack of attention and feed-forward layers
            continue
        owner = info.index
        for member in facts_of(info).members.values():
            if member.kind in (Kind.MODULE, Kind.CONTAINER) and any(gathers(owner, c) for c in member.classes):
                return True
    return False


def _layers(index: ModelIndex, classes: tuple[str, ...]) -> int:
    """How many of a container's modules own parameters (`nn.Sequential(Emb(d), nn.Linear(...), nn.SiLU())`)."""
    return sum(1 for c in classes if gathers(index, c))


def _built_by_a_builder(cls: ClassInfo, name: str) -> bool:
    """Was member `name` built by a library builder of layers or models (`build_head(cfg)`, `build_backbone(cfg)`,
    `known.LAYER_BUILDER`), whose class no file we read tells?"""
    member = facts_of(cls).members.get(name)
    written = call_name(member.call) if member is not None and member.call is not None else None
    last = written.rsplit(".", 1)[-1] if written else ""
    return bool(last) and (last in known.MODEL_BUILDERS or known.LAYER_BUILDER_NAME.fullmatch(last) is not None)



def _returns(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], ast.Return)


def _calls_itself(block: list[ast.stmt], name: str) -> bool:
    """Does the block call the method `name` it is part of on `self` (`self.forward(x)`, `self(x)` in `forward`)?"""
    for stmt in block:
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "self" and name == "forward":
                return True
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" and (
                func.attr == name or (name == "forward" and func.attr == "__call__")
            ):
                return True
    return False


_HELP = "run the submodule on every rank (on a dummy input when this batch lacks it), or give every rank the same inputs"
