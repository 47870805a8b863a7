"""ZG107: clip_grad_norm_ over the partitioned parameters of a ZeRO-3 model."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..analysis.access import GRAD, ParamAccess, Scope
from ..analysis.effects import GRAD_WRITES, GRADS, clipped
from ..analysis.counts import local_bindings
from ..analysis.flow import flat_of
from ..analysis.grads import gradient_cancelled, gradient_write
from ..analysis.loaded import add_stand_ins, stands_for
from ..analysis.scopes import param_accesses
from ..analysis.script import WRAP_TRIGGER, bound_here, global_models, module_code_scope, script_scopes
from ..program import known
from ..program.index import ModelIndex
from ..program.tree import call_name, code_of, cst, dotted, walk
from .rule import Report, Rule

class ClipGradPartitioned(Rule):
    """`torch.nn.utils.clip_grad_norm_` is called on the parameters of a ZeRO-3 model.

    ## What it does
    Flags `clip_grad_norm_(model.parameters(), ...)` (and `clip_grad_value_`)
    in a training script after `deepspeed.initialize`, where `model` is the
    engine or the module it wraps, and in code outside the model that is
    handed the model or holds it (a trainer, an RL algorithm, an optimizer
    wrapper: `clip_grad_norm_(self.policy.parameters(), 1.0)`).

    ## Why is this bad under ZeRO-3?
    After backward, ZeRO-3 reduce-scatters gradients into per-rank
    partitions and frees the full gradients; `p.grad` is `None` or an empty
    placeholder. `clip_grad_norm_` then computes the norm of nothing, clips
    nothing, and returns 0 or a per-rank partial norm: training runs
    unclipped and the logged norm is wrong.

    ## Example
    ```python
    engine.backward(loss)
    torch.nn.utils.clip_grad_norm_(engine.module.parameters(), 1.0)
    engine.step()
    ```

    ## Use instead
    ```python
    # ds_config.json: "gradient_clipping": 1.0  -- the engine clips the partitioned gradients
    engine.backward(loss)
    engine.step()
    ```
    """

    code = "ZG107"
    name = "clip-grad-partitioned"

    VALID = (
        # accelerate's clip_grad_norm_ hands clipping to the DeepSpeed engine when it wraps one.
        """
def step(accelerator, model, optimizer, loss):
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.backward(loss)
    accelerator.clip_grad_norm_(model.parameters(), 1.0)
""",
        # A torch layer the function builds and trains for itself: no model of the program.
        """
import torch

def train(loader, lr):
    model = torch.nn.Linear(16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for batch in loader:
        model(batch).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
""",
    )
    INVALID = (
        # An optimizer wrapper (not a module) holding the model it steps.
        """
from torch import nn

class ClippedStep:
    def __init__(self, optim, module: nn.Module, max_norm: float = 1.0):
        self.optim = optim
        self.module = module
        self.max_norm = max_norm

    def step(self, loss):
        loss.backward()
        nn.utils.clip_grad_norm_(self.module.parameters(), self.max_norm)
        self.optim.step()
""",
        # A model of the program the function builds and trains itself (under ZeRO-3, built under `zero.Init`).
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        return self.b(self.a(x))

def train(loader, lr):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for batch in loader:
        model(batch).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
""",
        """
import deepspeed
import torch

def train(model, cfg, loader):
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    for batch in loader:
        engine.backward(engine(batch))
        torch.nn.utils.clip_grad_norm_(engine.module.parameters(), 1.0)
        engine.step()
""",
    )

    def check(self, index: ModelIndex) -> Iterator[Report]:
        told: set[int] = set()
        for scope, node, name, params in _clip_calls(index, WRAP_TRIGGER):
            owner = name.rsplit(".", 1)[0] if "." in name else ""
            if owner.rsplit(".", 1)[-1] in known.WRAPPER_NAMES:
                continue  # `accelerator.clip_grad_norm_`: the wrapper hands clipping to the DeepSpeed engine
            if isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute):
                if params.func.attr.value == "parameters" and scope.wrapped_name(params.func.value, node):
                    told.add(id(node))
                    message = (
                        f"`{code_of(node.func)}` clips `{code_of(params)}`, whose gradients ZeRO-3 has "
                        "reduce-scattered into partitions; it clips nothing and reports a wrong norm"
                    )
                    yield self.finding(index, scope.snippet, node, message, _HELP)
        for scope, node, name, params in _clip_calls(index, _CLIP_TRIGGER):
            # a training function clipping the model it built itself (`model = LMTransformer(cfg)` ... `model =
            # parallelize_model(model)` ... `clip_grad_norm_(model.parameters(), c)`): trained as a ZeRO-3 model,
            # it was partitioned when built
            if id(node) in told or name.rsplit(".", 1)[0].rsplit(".", 1)[-1] in known.WRAPPER_NAMES:
                continue
            built = _built_model_clipped(scope, params)
            if built is not None:
                name, where = built
                message = (
                    f"`{code_of(node.func)}` clips `{code_of(params)}` of `{name}`, a model built {where}; trained "
                    "under ZeRO-3 its gradients are reduce-scattered into partitions: it clips nothing and reports a "
                    "wrong norm"
                )
                yield self.finding(index, scope.snippet, node, message, _HELP)
        for scope, node, _name, params in _clip_calls(index, _OPTIMIZER_CLIP):
            if params is not None and _optimizer_params(params):
                message = (
                    f"`{code_of(node.func)}` clips `{code_of(params, limit=80)}`, the parameters an optimizer "
                    "steps; under ZeRO-3 those are the model's partitioned placeholders, whose gradients ZeRO-3 "
                    "keeps in its own partitions: it clips nothing and reports a wrong norm"
                )
                yield self.finding(index, scope.snippet, node, message, _HELP)
        for access in param_accesses(index, Scope.ENTRY):
            # `p.grad = delta` over the module's own parameters in a method the training loop runs on it
            written = _set_gradient(access) if access.op.startswith(".grad") and not access.ctx.guarded else None
            if written is not None:
                message = (
                    f"`{code_of(access.node)}{written}` in `{access.method.name}`, which runs on the built model, "  # type: ignore[union-attr]
                    "sets a gradient ZeRO-3 never reads: it steps from its own partitioned gradient buffers"
                )
                yield self.finding(index, access.snippet, access.node, message, _SET_HELP)
        for access in param_accesses(index, Scope.HANDED):
            if access.use == GRAD and access.effect == GRAD_WRITES:
                # `p.grad = delta`, or a helper handed the model that sets its gradients
                cleared = access.op.startswith(".grad = None")
                target = f"`{code_of(access.node)}.grad = None`" if cleared else (
                    f"`{code_of(access.node)}{access.op}`" if access.op else f"`{code_of(access.node)}`")
                verb = "clears the gradients of the parameters a test picks of" if cleared else "sets the gradients of"
                message = (
                    f"{target} {verb} `{access.owner}`, a built model `{access.where}` is handed or holds; ZeRO-3 "
                    "steps from its own partitioned gradient buffers and never reads `.grad`, so "
                    + ("those parameters are updated all the same" if cleared else "the gradient set there is ignored")
                )
                yield self.finding(index, access.snippet, access.node, message, _SET_HELP)
            elif access.use == GRAD:
                # a helper that measures the gradients (`p.grad.norm()`) rather than clipping them
                measured = access.effect == GRADS
                verb, tail = ("measures", "it finds no gradients") if measured else ("clips", "it clips nothing")
                message = (
                    f"`{code_of(access.node)}` {verb} the gradients of `{access.owner}`, a built model "
                    f"`{access.where}` is handed or holds, which ZeRO-3 has reduce-scattered into partitions; "
                    f"{tail} and reports a wrong norm"
                )
                yield self.finding(index, access.snippet, access.node, message, _HELP)


_HELP = (
    "set `gradient_clipping` in the DeepSpeed config and let the engine clip; "
    "read the norm with `engine.get_global_grad_norm()`"
)
def _clip_calls(index: ModelIndex, trigger: re.Pattern[str]):
    """(scope, call, qualified name, what it clips) for each unguarded gradient clip (`known.CLIP_GRAD`) in the code
    outside the model whose text `trigger` matches."""
    for scope in script_scopes(index, trigger):
        for node, ctx in scope.flat.nodes:
            if type(node) is not cst.Call or ctx.guarded:
                continue
            name = index.qualified_call(node) or ""
            if name.rsplit(".", 1)[-1] in known.CLIP_GRAD:
                yield scope, node, name, clipped(node)


# Text trigger: a gradient clip.
_CLIP_TRIGGER = re.compile(r"clip_grad_(?:norm|value)_?\(")


def _built_model_clipped(scope, params: cst.BaseExpression | None) -> tuple[str, str] | None:
    """The model the code built itself whose `.parameters()` a clip is handed (`model.parameters()`,
    `model.module.parameters()` of a data-parallel wrapper put around it), or the script built at its top level and
    the function uses -> (its name, where it was built), else None."""
    if isinstance(params, cst.Name):
        return _built_model_listed(scope, params.value)
    if not (isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute)):
        return None
    if params.func.attr.value != "parameters" or params.args:
        return None
    root = params.func.value
    if isinstance(root, cst.Attribute) and root.attr.value == "module":
        root = root.value
    # (not `lin = torch.nn.Linear(16, 16)`: a layer the function trains itself, no model of the program)
    if not isinstance(root, cst.Name):
        return None
    here = "in this " + ("script" if isinstance(scope.node, cst.Module) else "function")
    if root.value in scope.program_models:
        return root.value, here
    held = _stand_in(scope, root.value)
    if held is not None:  # `model = reranker.model` ... `clip_grad_norm_(model.parameters(), c)`
        return held, here
    # `model = MemTransformerLM(...)` at the top of the script, trained by its `train()`: a global it does not bind
    top = global_models(scope.index).get(root.value) if isinstance(scope.node, cst.FunctionDef) else None
    if top is None or all(c.startswith("torch.") for c in top) or root.value in bound_here(scope.node, scope.flat):
        return None
    return root.value, "at the top of this script"


def _stand_in(scope, name: str) -> str | None:
    """The model built in this scope that the local `name` stands for (`model = reranker.model`, `net = model.module`,
    bound once after the model was built: `loaded.add_stand_ins`), else None."""
    if not scope.program_models:
        return None
    first: dict[str, int] = {}
    for node, _ctx in scope.flat.nodes:
        if type(node) is cst.Assign and len(node.targets) == 1 and type(target := node.targets[0].target) is cst.Name \
                and target.value in scope.program_models:
            first.setdefault(target.value, scope.flat.position[id(node)])
    built = set(first)
    add_stand_ins(scope.flat, first)
    if name in built or name not in first:
        return None
    for node, _ctx in scope.flat.nodes:  # (the model it stands for, as its binding names it)
        if type(node) is cst.Assign and len(node.targets) == 1 and type(target := node.targets[0].target) is cst.Name \
                and target.value == name:
            return stands_for(node.value) or name
    return name


def _spent_generator(flat, name: str, value: cst.BaseExpression) -> bool:
    """Is `name` bound to a bare generator of parameters (`params = model.parameters()`, not a list of them) that a
    call walked before the clip (`Adam(params, lr=lr)`)? Then the generator is spent: the clip gets no parameter."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("parameters", "named_parameters")):
        return False
    uses = [node for node, _ctx in flat.nodes if type(node) is cst.Name and node.value == name]
    handed = [u for u in uses if isinstance(flat.parent.get(id(u)), cst.Arg)]
    if len(handed) < 2 or len(uses) != len(handed) + 1:
        return False  # (bound once, then handed to two calls in turn)
    first = flat.parent.get(id(flat.parent.get(id(handed[0]))))
    return isinstance(first, cst.Call) and "clip" not in (call_name(first) or "")


def _built_model_listed(scope, name: str) -> tuple[str, str] | None:
    """A local or global `name` bound once to a list that holds the `.parameters()` of a model the code built
    (`params = list(model.parameters()) + list(criterion.parameters())` at the top of a script whose `train()`
    clips `params`) -> (that model's name, where it was built), else None."""
    home = scope
    if isinstance(scope.node, cst.FunctionDef) and name not in bound_here(scope.node, scope.flat):
        home = module_code_scope(scope.index, True)  # a global the function reads
    if home is None:
        return None
    values = local_bindings(home.flat).get(name, [])
    if len(values) != 1:
        return None
    if home is scope and _spent_generator(scope.flat, name, values[0]):
        return None  # `params = model.parameters()` handed to the optimizer first: the clip walks an empty generator
    for node in walk(values[0]):
        if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and node.func.attr.value == "parameters":
            built = _built_model_clipped(home, node)
            if built is not None:
                return built if home is scope else (built[0], "at the top of this script")
    return None


# Text trigger: a gradient clip of what an optimizer holds.
_OPTIMIZER_CLIP = re.compile(r"clip_grad\w*\((?:[^()]|\([^()]*\))*(?:param_groups|master_params\()")


def _optimizer_params(params: cst.BaseExpression) -> bool:
    """The parameters an optimizer holds (`amp.master_params(self.optimizer)`, `[p for g in opt.param_groups for p
    in g["params"]]`): torch's `param_groups`, or apex's `master_params` of an optimizer."""
    for node in walk(params):
        if type(node) is cst.Attribute and node.attr.value == "param_groups":
            return True
        if type(node) is cst.Call and (dotted(node.func) or "").rsplit(".", 1)[-1] == "master_params":
            return True
    return False


def _set_gradient(access: ParamAccess) -> str | None:
    """How a module method's access sets the parameter's gradient (`.grad = ...`, or `.grad = None` for the
    parameters a test picks), or None."""
    flat = flat_of(access.method) if access.method is not None else None
    grad = flat.parent.get(id(access.node)) if flat is not None else None
    if not isinstance(grad, cst.Attribute) or grad.attr.value != "grad":
        return None
    written = gradient_write(flat, grad)
    if written is None and gradient_cancelled(flat, grad, access.ctx) is not None:
        written = ".grad = None"
    return written


_SET_HELP = (
    "compute the update inside the loss, so the engine's backward produces it, or write the parameters in a "
    "`deepspeed.zero.GatheredParameters(params, modifier_rank=0)` block instead of setting gradients"
)
