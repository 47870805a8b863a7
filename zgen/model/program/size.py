"""How many elements a torch layer's parameter has, from the call that built it.

ZeRO-3 keeps a parameter gathered for the whole step when it has fewer
elements than `stage3_param_persistence_threshold` (DeepSpeed's default
1e5): reading it outside its module's forward costs nothing and is no
hazard. `param_numel` answers from the constructor call as written in
`__init__` (`nn.Embedding(nq, hd)`), with the numbers it can see: literals,
`__init__` parameters with literal defaults (`hd=256`) and locals computed
from them. An upper bound is enough, so `a if c else b` counts as the larger
side. A depthwise convolution (`groups` equal to its channels) holds one
small filter per channel, like a norm's per-channel weight: an unknown
channel count is taken as `DEPTHWISE_WIDTH`. Anything else gives None,
which the rules read as "large".
"""

from __future__ import annotations

import math

from .tree import cst

__all__ = ["param_numel", "upper_bound", "vector_weight", "bounded_product"]

# Channels of a depthwise convolution whose width `__init__` does not show: the model widths such
# layers are used at (Conformer, ConvNeXt, Mamba blocks) stay at or below this.
DEPTHWISE_WIDTH = 2048
# ... and the kernel of a depthwise Conv1d whose size comes from a config (Mamba's 4, ConvNeXt-1d's 7,
# Conformer's 31): one filter of at most this many taps per channel.
DEPTHWISE_KERNEL_1D = 31
_BIG = 1 << 62  # anything larger is not a size

# (positional names of the constructor, how each parameter's shape is made from them)
_LINEAR = ("in_features", "out_features")
_EMBEDDING = ("num_embeddings", "embedding_dim")
_CONV = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups")


def upper_bound(expr: cst.BaseExpression, env: dict[str, int]) -> int | None:
    """An upper bound of an integer expression, or None when it cannot be bounded."""
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    if isinstance(expr, cst.Name):
        return env.get(expr.value)
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return env.get(f"self.{expr.attr.value}")  # `self.inplanes`, set once from a literal
    if isinstance(expr, cst.IfExp):
        a, b = upper_bound(expr.body, env), upper_bound(expr.orelse, env)
        return max(a, b) if a is not None and b is not None else None
    if isinstance(expr, cst.BinaryOperation):
        a, b = upper_bound(expr.left, env), upper_bound(expr.right, env)
        if a is None or b is None or a < 0 or b < 0:
            return None
        op = type(expr.operator)
        if op is cst.Add:
            value = a + b
        elif op is cst.Multiply:
            value = a * b
        elif op is cst.FloorDivide and b:
            value = a // b
        elif op is cst.Power and b < 64:
            value = a**b
        else:
            return None
        return value if value < _BIG else None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.args:
        values = [upper_bound(arg.value, env) for arg in expr.args]
        if None in values:
            return None
        if expr.func.value == "int" and len(values) == 1:
            return values[0]
        if expr.func.value in ("max", "min"):
            return max(values)  # type: ignore[type-var]
    return None


def param_numel(layer: str, param: str, call: cst.Call, env: dict[str, int]) -> int | None:
    """Elements of parameter `param` of a torch layer class (last name) built by `call`, bounded above."""
    if layer in ("Linear", "LazyLinear"):
        args = _arguments(call, _LINEAR)
        dims = [args.get("in_features"), args.get("out_features")] if param == "weight" else [args.get("out_features")]
        return bounded_product(dims, env)
    if layer in ("Embedding", "EmbeddingBag") and param == "weight":
        args = _arguments(call, _EMBEDDING)
        return bounded_product([args.get("num_embeddings"), args.get("embedding_dim")], env)
    if layer.startswith(("Conv", "ConvTranspose")) and layer[-2:] in ("1d", "2d", "3d"):
        args = _arguments(call, _CONV)
        out = upper_bound(args["out_channels"], env) if "out_channels" in args else None
        if param == "bias":
            if out is None and _depthwise(args):
                return DEPTHWISE_WIDTH
            return out if out is None or out >= 0 else None
        inner = upper_bound(args["in_channels"], env) if "in_channels" in args else None
        kernel = _kernel(args.get("kernel_size"), int(layer[-2]), env)
        if kernel is None and layer.endswith("1d") and _depthwise(args):
            kernel = DEPTHWISE_KERNEL_1D  # `kernel_size=config.conv_kernel`: a short filter per channel
        if _depthwise(args) and kernel is not None and kernel >= 0:
            # One small filter per channel (channels x 1 x kernel): a per-channel parameter like a norm's
            # weight, so an unknown channel count is taken at the width of common models.
            return (out if out is not None and out >= 0 else DEPTHWISE_WIDTH) * kernel
        if out is None or inner is None or kernel is None or min(out, inner, kernel) < 0:
            return None
        return out * inner * kernel  # groups only divide this: the ungrouped count is an upper bound
    return None


def vector_weight(layer: str, call: cst.Call) -> bool:
    """Is the weight of a torch layer built by `call` a vector (`nn.Linear(1, d)`: one element per output feature,
    like a bias), whatever its unknown length?"""
    if layer not in ("Linear", "LazyLinear"):
        return False
    args = _arguments(call, _LINEAR)
    return any(isinstance(v, cst.Integer) and v.value == "1" for v in args.values())


def _depthwise(args: dict[str, cst.BaseExpression]) -> bool:
    """`Conv1d(c, c, k, groups=c)`: the same expression for input channels, output channels and groups."""
    names = ("in_channels", "out_channels", "groups")
    if any(n not in args for n in names):
        return False
    first = args["in_channels"]
    return all(args[n].deep_equals(first) for n in names[1:])


def _arguments(call: cst.Call, names: tuple[str, ...]) -> dict[str, cst.BaseExpression]:
    found: dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            return {}  # *args: positions unknown
        if arg.keyword is not None:
            found[arg.keyword.value] = arg.value
        elif position < len(names):
            found[names[position]] = arg.value
            position += 1
    return found


def bounded_product(dims: list[cst.BaseExpression | None], env: dict[str, int]) -> int | None:
    """An upper bound of the product of sizes (`torch.empty(e, r, r)`'s dimensions), or None when one is unbounded."""
    values = [upper_bound(d, env) if d is not None else None for d in dims]
    if None in values or any(v < 0 for v in values):  # type: ignore[operator]
        return None  # a negative sentinel (`-1`: "infer") is no size
    return math.prod(values)  # type: ignore[arg-type]


def _kernel(expr: cst.BaseExpression | None, rank: int, env: dict[str, int]) -> int | None:
    if expr is None:
        return None
    if isinstance(expr, (cst.Tuple, cst.List)):
        return bounded_product([e.value for e in expr.elements], env)
    side = upper_bound(expr, env)
    return side**rank if side is not None else None
