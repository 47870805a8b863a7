"""What zgen knows about names from torch, transformers and DeepSpeed.

Everything here is matched on qualified names as far as the file's imports
allow (`nn.Linear` -> `torch.nn.Linear`), with the conventional aliases
(`F`, `dist`, `np`) as a fallback for names imported in ways the skeleton
does not see.
"""

from __future__ import annotations

import builtins
import functools
import re

from zgen.zero_policy import GATHER_CONTEXTS

__all__ = [
    "TENSOR_FUNCTIONS",
    "CLOCK_FUNCS",
    "AGREEING_COLLECTIVES",
    "CONVENTIONAL_ALIASES",
    "MODULE_BASE_NAMES",
    "MODULE_WORDS",
    "MODULE_WORD",
    "NOT_A_MODULE",
    "COUNT_OR_FACTORY",
    "module_like_name",
    "BUFFER_PART",
    "MODULE_GROUPINGS",
    "CLONING_STACKS",
    "TORCH_PARAMS",
    "PARAMLESS",
    "torch_params",
    "torch_param_name",
    "torch_has_params",
    "is_torch_module_class",
    "ACTIVATION_FACTORIES",
    "LAYER_BUILDER",
    "LAYER_BUILDER_NAME",
    "COLLECTIVES",
    "ENGINE_COLLECTIVES",
    "WRAPPER_COLLECTIVES",
    "wrapper_collective",
    "WRAPPER_NAMES",
    "FABRIC_COLLECTIVES",
    "GUARD_NAMES",
    "GUARD_ATTRIBUTES",
    "is_gather_context",
    "RANDOM_TORCH",
    "RANDOM_HOST_PREFIXES",
    "SEEDED_GENERATORS",
    "RANDOM_TORCH_METHODS",
    "RANDOM_HINT",
    "DATA_SELECT_METHODS",
    "RANK_CALLS",
    "RANK_QUALIFIED_CALLS",
    "RANK_NAMES",
    "RANK_ENV",
    "RANK_WORDS",
    "RANK_TEXT",
    "RANK_LITERALS",
    "is_rank_name",
    "is_rank_call",
    "METADATA_ATTRS",
    "CONTAINER_METHODS",
    "SIZE_ATTRS",
    "SIZE_METHODS",
    "INPLACE_METHOD",
    "HUB_MIXINS",
    "HUB_MIXIN_SAVES",
    "FOREACH_INPLACE",
    "REPARAMETRIZE",
    "INIT_PREFIXES",
    "CLIP_GRAD",
    "PARAMETER_VECTORS",
    "MODEL_READERS",
    "AVERAGERS",
    "AVERAGER_UPDATES",
    "AVERAGER_BLENDS",
    "TORCH_INITIALISERS",
    "STATE_CALLS",
    "PICKLERS",
    "PICKLING_SENDS",
]

# Libraries whose functions compute with the tensors they are handed (`torch.dot(p, q)`, einops' `repeat(p, ...)`,
# `rearrange`, `reduce`, `einsum`): a parameter handed to one is read for its values (`torch.nn.utils.*` aside).
TENSOR_FUNCTIONS = ("torch.", "einops.")

CONVENTIONAL_ALIASES = {
    "nn": "torch.nn",
    "F": "torch.nn.functional",
    "dist": "torch.distributed",
    "np": "numpy",
    "init": "torch.nn.init",
}

# Base classes (last name component) that make a class an nn.Module even when
# imported from a place the skeleton cannot follow.
MODULE_BASE_NAMES = frozenset(
    {
        "Module",
        "ModuleList",
        "ModuleDict",
        "Sequential",
        "ParameterList",
        "ParameterDict",
        "PreTrainedModel",
        "GradientCheckpointingLayer",
        "LightningModule",
        "ModelMixin",
        "MegatronModule",
    }
)

# How a module is usually named (`decoder_layer`, `seg_model`, `backbone`, `policy`), as opposed to the
# dicts, lists, sizes and configs a function also takes.
MODULE_WORDS = (
    "layer", "block", "module", "model", "encoder", "decoder", "net", "network", "cell", "head", "backbone", "embed",
    "embedding", "conv", "linear", "attn", "attention", "mlp", "ffn", "proj", "stem", "tower", "trunk", "policy",
    "actor", "critic", "unet", "transformer", "teacher", "student", "generator", "discriminator", "vae",
    # architectures a model is often named after (`gpt, epoch = load_model(path)`, `self.bert`, `llm`, `vit`)
    "gpt", "bert", "llm", "vit",
)
# (with a one-letter or numbered role: `model_T`/`model_S` of a distiller, `net_g`/`net_d`/`netG` of a GAN,
# `model2`; or said to be unwrapped, wrapped or averaged: `model_without_ddp`, `model_ddp`, `model_ema`)
_WRAPPED_SUFFIX = r"(?:_(?:without|wo|no)_(?:ddp|dp|fsdp)|_(?:ddp|dp|fsdp|ema))?"
MODULE_WORD = re.compile("(?:" + "|".join(MODULE_WORDS) + r")s?(?:_?[A-Za-z]|_?\d)?" + _WRAPPED_SUFFIX + "$")
# Names of configs, tensors and state, never a module (`layer_cfg`, `x`, `weight`).
NOT_A_MODULE = re.compile(
    r"conf|cfg|args|opt|param|hparams|kwargs|setting|^x$|^p$|weight|bias|tensor|state"
    r"|^(?:mini_?)?batch(?:_|$)|_batch$|^(?:data|inputs?|obs|samples?|labels?)$"  # a batch of data: `batch.weight`
)
# ... nor a count or a factory (`num_layers`, `block_fn`).
COUNT_OR_FACTORY = re.compile(r"^n_|num_|_fn$|_cls$|_class$|_type$")


def module_like_name(name: str) -> bool:
    """Is `name` how a module is usually named (`decoder_layer`, `backbone`, `policy`), not a config or a size?"""
    return bool(MODULE_WORD.search(name)) and not NOT_A_MODULE.search(name) and not COUNT_OR_FACTORY.search(name)


# A part of a model named as a store of tensors (`model.buffer`, `agent.replay_buffer`): what a copy of it duplicates is
# data, not the model's parameters.
BUFFER_PART = re.compile(r"(?:^|[._])buffers?$")

# Buffers torch.nn's batch norms register (their running statistics): ZeRO-3 partitions parameters, never
# buffers, so a read or write of one is no hazard anywhere.
TORCH_BUFFER_NAMES = frozenset({"running_mean", "running_var", "num_batches_tracked"})

# Parameters that torch.nn classes register on themselves (not on children).
_LINEAR = ("weight", "bias")
TORCH_PARAMS: dict[str, tuple[str, ...]] = {
    "Linear": _LINEAR,
    "Bilinear": _LINEAR,
    "LazyLinear": _LINEAR,
    "NonDynamicallyQuantizableLinear": _LINEAR,  # (torch's own subclass of Linear, MultiheadAttention's out_proj)
    "LazyConv1d": _LINEAR,
    "LazyConv2d": _LINEAR,
    "LazyConv3d": _LINEAR,
    "Conv1d": _LINEAR,
    "Conv2d": _LINEAR,
    "Conv3d": _LINEAR,
    "ConvTranspose1d": _LINEAR,
    "ConvTranspose2d": _LINEAR,
    "ConvTranspose3d": _LINEAR,
    "Embedding": ("weight",),
    "EmbeddingBag": ("weight",),
    "LayerNorm": _LINEAR,
    "GroupNorm": _LINEAR,
    "RMSNorm": ("weight",),
    "BatchNorm1d": _LINEAR,
    "BatchNorm2d": _LINEAR,
    "BatchNorm3d": _LINEAR,
    "SyncBatchNorm": _LINEAR,
    "InstanceNorm1d": _LINEAR,
    "InstanceNorm2d": _LINEAR,
    "InstanceNorm3d": _LINEAR,
    "LocalResponseNorm": (),
    "PReLU": ("weight",),
    "MultiheadAttention": (
        "in_proj_weight",
        "in_proj_bias",
        "q_proj_weight",
        "k_proj_weight",
        "v_proj_weight",
        "bias_k",
        "bias_v",
    ),
    # transformers.pytorch_utils.Conv1D (GPT-2 style transposed linear)
    "Conv1D": _LINEAR,
}
_RNN = re.compile(r"(weight|bias)_(ih|hh)_l\d+(_reverse)?$")

# torch.nn classes that own no parameters: calling them never gathers anything.
PARAMLESS = frozenset(
    {
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "AlphaDropout",
        "Identity",
        "Flatten",
        "Unflatten",
        "ReLU",
        "ReLU6",
        "LeakyReLU",
        "GELU",
        "SiLU",
        "Mish",
        "ELU",
        "SELU",
        "CELU",
        "Tanh",
        "Sigmoid",
        "Hardtanh",
        "Hardswish",
        "Hardsigmoid",
        "Softplus",
        "Softmax",
        "LogSoftmax",
        "Softmax2d",
        "GLU",
        "Threshold",
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d",
        "Upsample",
        "UpsamplingNearest2d",
        "UpsamplingBilinear2d",
        "PixelShuffle",
        "PixelUnshuffle",
        "ZeroPad2d",
        "ConstantPad1d",
        "ConstantPad2d",
        "ReflectionPad1d",
        "ReflectionPad2d",
        "ReplicationPad1d",
        "ReplicationPad2d",
        "CrossEntropyLoss",
        "MSELoss",
        "L1Loss",
        "BCELoss",
        "BCEWithLogitsLoss",
        "NLLLoss",
        "KLDivLoss",
        "SmoothL1Loss",
        # torch's other losses and their bases (a class weight is a buffer, never a parameter)
        "_Loss",
        "_WeightedLoss",
        "HuberLoss",
        "PoissonNLLLoss",
        "GaussianNLLLoss",
        "CTCLoss",
        "HingeEmbeddingLoss",
        "MultiLabelMarginLoss",
        "SoftMarginLoss",
        "MultiLabelSoftMarginLoss",
        "CosineEmbeddingLoss",
        "MarginRankingLoss",
        "MultiMarginLoss",
        "TripletMarginLoss",
        "TripletMarginWithDistanceLoss",
        "CosineSimilarity",
        "PairwiseDistance",
        "Fold",
        "Unfold",
    }
)

# Norm layers: only 1-D parameters, which ZeRO-3 keeps gathered below the persistence threshold.
NORMS = frozenset(
    {
        "LayerNorm",
        "RMSNorm",
        "GroupNorm",
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "SyncBatchNorm",
        "InstanceNorm1d",
        "InstanceNorm2d",
        "InstanceNorm3d",
        "LocalResponseNorm",
        "_NormBase",  # torch's private bases of the norms above (`bn: nn.modules.batchnorm._BatchNorm`)
        "_BatchNorm",
        "_InstanceNorm",
    }
)

# torch.nn classes built of submodules that own parameters (a stack of layers, each with attention and feed-forward
# layers): calling one runs a whole tower, as a class of the program built of layers does.
TOWERS = frozenset(
    {"Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer"}
)

# Methods by which vision backbones of the common libraries run their forward in parts, never calling `forward`
# itself, computing with the model's own top-level parameters (position embeddings, class and register tokens)
# and calling its children: `forward_features(x)`, `forward_intermediates(x, indices)`, `get_intermediate_layers`.
FORWARD_PARTS = frozenset({"forward_features", "forward_intermediates", "get_intermediate_layers"})

# How code deep-copies a value, as a call's qualified name reads (`copy.deepcopy(m)`, or `deepcopy(m)` after
# `from copy import deepcopy`): the copy holds every tensor of the value as it is when copied.
DEEP_COPY = frozenset({"copy.deepcopy", "deepcopy"})

# torch.nn classes that deep-copy the layer they are handed, once per layer of the stack they build
# (`nn.TransformerEncoder(encoder_layer, num_layers)`: `_get_clones`).
CLONING_STACKS = frozenset({"torch.nn.TransformerEncoder", "torch.nn.TransformerDecoder"})

# Containers a module is made of other modules with (`nn.Sequential(self.backbone, self.neck)`): they hold those
# modules, not copies.
MODULE_GROUPINGS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})


class _NamedBy:
    """Names that match a pattern whole, tested as a set's members are (`name in MODEL_BUILDERS`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.pattern.fullmatch(name) is not None


# Builders that return a model of a class chosen by name at run time (a registry or hub lookup): the result is a
# module whose class cannot be read (`timm.create_model(name)`, `torch.hub.load(repo, name)`, `build_model(cfg)`,
# `hydra.utils.instantiate(cfg.encoder)`). Also a function of the program so named that returns what a registry
# holds (`def build_model(args): return MODULE_BUILD_FUNCS.get(args.modelname)(args)`).
# (Any model kind between the verb and `model`: `build_ts_model`, `create_vision_model`, `make_sam_model`.)
MODEL_BUILDERS = _NamedBy(
    r"(?:create|build|make)_(?:\w+_)?model|build_backbone|build_encoder|load_model|instantiate(?:_from_config)?"
    r"|construct_class_by_name"
)
MODEL_BUILDERS_QUALIFIED = frozenset({
    "torch.hub.load", "clip.load", "open_clip.create_model", "open_clip.create_model_and_transforms",
    "open_clip.create_model_from_pretrained",
})
# Python's builtins (`next`, `isinstance`, `len`): no helper of the program, whatever they are handed.
PYTHON_BUILTINS = frozenset(dir(builtins))
# Library functions that load a file into the module handed first (`load_model(model, "model.safetensors")`), or
# save its state to one (safetensors' `load_file` / `save_file` take tensors, not a module).
STATE_LOADERS = frozenset({
    "safetensors.torch.load_model", "accelerate.load_checkpoint_in_model", "accelerate.utils.load_checkpoint_in_model",
    "transformers.modeling_utils.load_sharded_checkpoint", "transformers.load_sharded_checkpoint",
})
STATE_SAVERS = frozenset({"safetensors.torch.save_model"})
# Modules whose `load` reads a file into plain values (`torch.load(path)`, `json.load(f)`), not a model.
FILE_READERS = frozenset({
    "torch", "json", "yaml", "pickle", "np", "numpy", "joblib", "dill", "cloudpickle", "safetensors", "toml", "tomllib",
    "msgpack", "orjson", "ujson", "hjson", "srsly", "OmegaConf", "omegaconf", "h5py", "scipy", "sio", "marshal",
})
# Model zoos whose functions build a model by its name (`torchvision.models.resnet50(weights=w)`).
_MODEL_ZOOS = ("torchvision.models.",)


def model_zoo(module: str) -> bool:
    """Is `module` a model zoo (`torchvision.models`, `torchvision.models.video`)?"""
    return f"{module}.".startswith(_MODEL_ZOOS)


def model_zoo_function(qualified: str) -> bool:
    """Is `qualified` a function of a model zoo (`torchvision.models.resnet50`, `torchvision.models.video.r3d_18`),
    not one of its classes or helpers (`get_weight`, `list_models`)?"""
    module, _, last = qualified.rpartition(".")
    return model_zoo(module) and last[:1].islower() and not last.startswith(("get_", "list_", "_"))

# A library function building a layer by its name (`build_conv_layer`, `build_norm_layer(cfg, c)[1]`, `build_mlp`).
LAYER_BUILDER = r"build_\w*(?:layer|conv|norm\w*|mlp|linear|module|network|block|encoder|decoder|head)"
LAYER_BUILDER_NAME = re.compile(LAYER_BUILDER)  # (matched whole against a call's last name)
# Data-parallel wrappers, torch's or a library's (`torch_geometric.nn.DataParallel`): each holds the model it is
# handed first, as its `module`.
DATA_PARALLEL = frozenset({"DataParallel", "DistributedDataParallel"})
# Registries that return activation modules (no parameters).
ACTIVATION_FACTORIES = frozenset({"ACT2FN", "ACT2CLS", "get_activation", "get_act_fn", "get_activation_fn"})


def torch_params(cls: str, name: str) -> bool:
    """Is `name` a parameter that the torch.nn class `cls` (last component) registers itself?"""
    if name in TORCH_PARAMS.get(cls, ()):
        return True
    return cls in {"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"} and bool(_RNN.match(name))


_TORCH_PARAM_NAMES = frozenset(name for names in TORCH_PARAMS.values() for name in names)


def torch_param_name(name: str) -> bool:
    """Is `name` a parameter that some torch.nn layer registers itself (`weight`, `in_proj_weight`,
    `weight_ih_l0`)? A child of a class we cannot read holding an attribute of that name holds that parameter."""
    return name in _TORCH_PARAM_NAMES or bool(_RNN.match(name))


# torchvision's image transforms: modules (some of them) that hold their settings as plain attributes.
_TRANSFORMS = ("torchvision.transforms.",)


def torch_has_params(ref: str) -> bool | None:
    """Does a module of this class own parameters, judged by its name (torch.nn and look-alikes)? None: cannot tell."""
    last = ref.rsplit(".", 1)[-1]
    if last in PARAMLESS:
        return False
    if ref.startswith(_TRANSFORMS) and last[:1].isupper():
        return False  # torchvision's transforms (`ColorJitter`, `GaussianBlur`, v1 and v2) register no parameter
    if last in {"ModuleList", "ModuleDict", "Sequential"}:
        return None
    if ref.startswith("torch.nn.") or last in TORCH_PARAMS:
        return True
    return None


def is_torch_module_class(qualified: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.modules.conv.Conv1d`, ...: a capitalised name under torch.nn (or a private
    base class of torch's layers, `torch.nn.modules.conv._ConvNd`)."""
    if not qualified.startswith("torch.nn."):
        return False
    last = qualified.rsplit(".", 1)[-1]
    if last.startswith("_") and qualified.startswith("torch.nn.modules."):
        last = last.lstrip("_")
    return last[:1].isupper() and last not in {"Parameter", "Buffer"} and ".functional." not in qualified


# torch.distributed calls every rank must make together.
COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "broadcast",
        "broadcast_object_list",
        "barrier",
        "reduce",
        "gather",
        "gather_object",
        "scatter",
        "scatter_object_list",
        "all_to_all",
        "all_to_all_single",
        "monitored_barrier",
        "new_group",
    }
)
# Engine methods that are collective under ZeRO-3.
ENGINE_COLLECTIVES = frozenset({"save_checkpoint", "load_checkpoint", "save_16bit_model", "backward", "step"})
# Methods of a training loop's wrapper (accelerate's `Accelerator`, Lightning's `Fabric`) that gather
# or save a ZeRO-3 model collectively: every rank must call them.
WRAPPER_COLLECTIVES = frozenset({"get_state_dict", "save_state", "load_state", "save_model"})
WRAPPER_NAMES = frozenset({"accelerator", "fabric"})
# Fabric's `save`/`load` are collectives too; accelerate's `save` is `torch.save` on the main process.
FABRIC_COLLECTIVES = frozenset({"save", "load"})


def wrapper_collective(owner: str, method: str) -> bool:
    """`accelerator.get_state_dict(model)`, `fabric.save(path, state)`: a collective method of a training wrapper,
    called on an object named as the wrapper (`owner`: the last name of the receiver, `self.accelerator` ->
    `accelerator`)."""
    return (method in WRAPPER_COLLECTIVES and owner in WRAPPER_NAMES) or (
        method in FABRIC_COLLECTIVES and owner == "fabric"
    )

# A condition that mentions one of these routes ZeRO-3 runs around the hazard.
# (`is_deepspeed_enabled`: a trainer's DeepSpeed branch consolidates through the engine, its other branches run
# without ZeRO; `is_sagemaker_mp_enabled`, `is_torch_xla_available`: another distributed backend than ZeRO-3.)
GUARD_NAMES = frozenset(
    {"synced_gpus", "is_deepspeed_zero3_enabled", "is_fsdp_managed_module", "is_zero3", "zero3_enabled",
     "is_deepspeed_enabled", "is_sagemaker_mp_enabled", "is_torch_xla_available", "use_deepspeed", "deepspeed_enabled"}
)  # fmt: skip
# ... and attributes (not the module's name itself, `deepspeed.comm.get_rank()`): the engine a trainer holds, or the
# switch of a run's settings (`and not self.deepspeed:  # deepspeed does its own clipping`, `if args.deepspeed:`)
GUARD_ATTRIBUTES = GUARD_NAMES | {"deepspeed"}


def is_gather_context(name: str | None) -> bool:
    """Does a `with` item with this call name gather partitioned parameters?"""
    return bool(name) and name.rsplit(".", 1)[-1] in GATHER_CONTEXTS


RANDOM_TORCH = frozenset(
    {
        "torch.rand",
        "torch.rand_like",
        "torch.randn",
        "torch.randn_like",
        "torch.randint",
        "torch.randint_like",
        "torch.randperm",
        "torch.bernoulli",
        "torch.multinomial",
        "torch.normal",
        "torch.poisson",
    }
)
RANDOM_TORCH_METHODS = frozenset({"uniform_", "bernoulli_", "normal_", "random_", "exponential_", "geometric_"})
RANDOM_HOST_PREFIXES = ("random.", "numpy.random.")
# Constructors of a generator object of the host's streams: seeded with a constant, every rank draws the same numbers
SEEDED_GENERATORS = frozenset(
    {"random.Random", "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"}
)
# Text without which code makes none of these draws as commonly written (`torch.rand`, `random.random()`,
# `np.random.rand`, `randn`, `x.bernoulli_(p)`, `torch.empty(n).uniform_(0, 1)`): a pre-filter, refined by
# parsing. Fills with arguments other than `uniform_` (`w.normal_(0, 0.02)`) are initialisers in practice, except
# on a tensor a call just made (`x.new(x.size()).normal_(0, 1)`, `torch.empty(n).normal_()`): noise.
# (`\brand` written word first, `rand(?<!\wrand)`: an alternation whose every branch starts with a literal is searched
# for their first characters, `program/trigger.py`.)
RANDOM_HINT = r"rand(?<!\wrand)|bernoulli|multinomial|poisson|\.uniform_\(|normal_(?<=\)\.normal_)\("

# Tensor methods / torch functions whose result depends on the data a rank holds.
# `.item()`/`.tolist()` are not sources by themselves: they convert, and what they convert
# is tainted already when it came from one of these.
DATA_SELECT_METHODS = frozenset(
    {"nonzero", "unique", "unique_consecutive", "argwhere", "masked_select", "bincount", "any", "all"}
)
# What this host's file system holds: a per-rank output file, a node-local cache. An exit taken on it differs
# between ranks as data does (`if os.path.isfile(out_path): return` before the model runs).
HOST_STATE_FUNCS = frozenset({"os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.lexists"})
# This host's clock: elapsed time, a deadline. Each rank reads its own, so a loop that stops on it (a time limit, a
# time budget) stops at a different step on each rank.
CLOCK_FUNCS = frozenset(
    {
        "time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
        "time.monotonic_ns", "time.process_time", "timeit.default_timer", "datetime.datetime.now",
        "datetime.datetime.utcnow", "datetime.now", "datetime.utcnow",
    }
)  # fmt: skip
# Collectives after which a value is the same on every rank (reduced, broadcast or gathered).
AGREEING_COLLECTIVES = frozenset(
    {"all_reduce", "broadcast", "all_gather", "all_gather_object", "broadcast_object_list", "all_gather_into_tensor",
     # mpi4py's communicator methods (`MPI.COMM_WORLD.Allreduce(x, buf, op=MPI.SUM)`, `comm.bcast(obj, root=0)`)
     "Allreduce", "allreduce", "Bcast", "bcast", "Allgather", "allgather"}
)

DATA_SELECT_FUNCS = frozenset(
    {
        "torch.nonzero",
        "torch.unique",
        "torch.unique_consecutive",
        "torch.argwhere",
        "torch.masked_select",
        "torch.bincount",
        "torch.any",
        "torch.all",
        "torch.equal",
        "torch.count_nonzero",
        # the same selections of a host array (`np.nonzero(batch.agent_id == i)`: which samples this rank holds)
        "numpy.nonzero",
        "numpy.flatnonzero",
        "numpy.unique",
        "numpy.argwhere",
        "numpy.bincount",
        "numpy.any",
        "numpy.all",
        "numpy.array_equal",
        "numpy.count_nonzero",
    }
)

RANK_CALLS = frozenset(
    {
        "get_rank", "get_local_rank", "get_global_rank", "get_node_local_rank", "is_main_process",
        "is_world_process_zero",
        # Training loops' own "am I rank 0?" helpers (`is_master(args)`, `is_primary(args)`).
        "is_master", "is_global_master", "is_local_master", "is_primary", "is_global_primary",
        "is_local_primary", "is_rank_zero", "is_rank_0", "is_main", "if_main_process",
        # torch_xla's ordinals (`xm.get_ordinal()`, `torch_xla.runtime.global_ordinal()`).
        "get_ordinal", "get_local_ordinal", "global_ordinal", "local_ordinal",
    }
)  # fmt: skip
# Library calls whose last name alone says nothing (`rank()`): horovod's rank of this process.
RANK_QUALIFIED_CALLS = frozenset({"horovod.torch.rank", "horovod.torch.local_rank", "horovod.torch.cross_rank"})
# Attribute or variable names that hold this process's rank (not "rank" alone: low-rank adapters use it).
RANK_NAMES = frozenset(
    {
        "local_rank",
        "global_rank",
        "node_rank",
        "process_index",
        "local_process_index",
        "is_main_process",
        "is_local_main_process",
        "is_world_process_zero",
        "is_local_process_zero",
        "is_global_zero",  # Lightning's trainer
        "world_rank",
        "is_rank_zero",
    }
)
RANK_ENV = frozenset({"RANK", "LOCAL_RANK", "NODE_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "SLURM_LOCALID"})
# Every spelling of "this process's rank" above, as a whole word in source text: the text pre-filter of the
# rank rules and of the attributes `__init__` sets from the rank. `Taint` reads the same three sets.
RANK_WORDS = RANK_CALLS | RANK_NAMES | RANK_ENV
# Beyond those lists, names that say by their shape that they hold this process's rank: a rank qualified by the
# process, device or parallel group it numbers (`gpu_rank`, `dp_rank`, `data_parallel_rank`, `worker_rank`,
# `rank_id`), "am I the main process?" flags (`is_master_proc`, `master_process`, `is_chief`) and getters
# (`get_data_parallel_rank()`). `rank` alone and a matrix's rank (`lora_rank`, `low_rank`, `max_rank`) are not.
_RANK_QUALIFIER = (
    r"(?:gpu|cuda|device|dev|proc|process|worker|node|world|global|local|my|cur|current|machine|host|dp|ddp"
    r"|data_parallel|distributed|dist|replica|parallel)"
)
_MAIN_FLAG = r"is_(?:[a-z0-9]+_)*(?:master|main|chief|leader|primary|rank_?(?:0|zero))(?:_[a-z0-9]+)*"
_RANK_SHAPE = (
    rf"{_RANK_QUALIFIER}_?(?:local_)?rank(?:_?(?:id|idx|index))?|rank_?(?:id|idx)|{_MAIN_FLAG}"
    r"|(?:[a-z0-9]+_)*(?:master|main)_process(?:_[a-z0-9]+)*"
)
_RANK_NAME = re.compile(rf"_*(?:{_RANK_SHAPE})")
_RANK_CALL = re.compile(rf"_*(?:get_(?:[a-z0-9]+_)*rank|{_MAIN_FLAG})")
_MATRIX_RANK = re.compile(r"lora|low|matrix|adapter|decomp|svd|size|_and_")  # and `get_world_size_and_rank`: a pair


@functools.lru_cache(maxsize=8192)  # (asked of every name a taint reads: the same few hundred names per file)
def is_rank_name(name: str) -> bool:
    """Does a variable or attribute of this name hold this process's rank (or whether it is the main one)?"""
    return name in RANK_NAMES or bool(_RANK_NAME.fullmatch(name)) or (
        name.isupper() and bool(_RANK_NAME.fullmatch(name.lower()))  # a module's constant: `IS_RANK_0`, `IS_MASTER`
    )


@functools.lru_cache(maxsize=8192)
def is_rank_call(name: str) -> bool:
    """Does a call of this (last) name return this process's rank, or whether it is the main one?"""
    return name in RANK_CALLS or (bool(_RANK_CALL.fullmatch(name)) and not _MATRIX_RANK.search(name))


# Literals one of which any spelling above contains: the cheap trigger before `RANK_TEXT`.
# (the shapes in capitals too: a module's constant, `IS_RANK_0 = get_rank() == 0`)
RANK_LITERALS = tuple(sorted(RANK_WORDS)) + (
    "rank", "master", "main", "chief", "leader", "primary", "process_index", "MASTER", "MAIN", "CHIEF", "LEADER",
    "PRIMARY",
)
RANK_TEXT = (
    r"(?<!\w)(?:" + "|".join(sorted(RANK_WORDS, key=lambda w: (-len(w), w))) + r"|_*(?:" + _RANK_SHAPE
    + r"|get_(?:[a-z0-9]+_)*rank)|_*(?:" + _RANK_SHAPE.upper() + r"))(?!\w)"
)
assert "\\" not in _RANK_SHAPE  # (spelt in capitals by `upper()`: no escape in it whose case means something)

# Reading these from a partitioned placeholder is correct: they survive partitioning.
METADATA_ATTRS = frozenset(
    {
        "dtype",
        "device",
        "requires_grad",
        "detach_",  # on a leaf parameter only drops it from autograd, like requires_grad_(False)
        "is_cuda",
        "is_meta",
        "is_leaf",
        "grad_fn",
        "layout",
        "ds_shape",
        "ds_numel",
        "ds_id",
        "ds_status",
        "ds_tensor",
        "_is_hf_initialized",
        "is_floating_point",
        "element_size",
        "quant_storage",  # bitsandbytes' 4-bit parameters: the dtype of the packed storage
        "requires_grad_",
        # Hooks on the parameter object: registering one reads no values.
        "register_hook",
        "register_post_accumulate_grad_hook",
        "retain_grad",
    }
)
# Methods of a list/dict (and of ModuleList/ModuleDict): calling one neither runs nor reaches a submodule.
CONTAINER_METHODS = frozenset(
    {"append", "extend", "insert", "keys", "values", "items", "get", "pop", "update", "index"}
)
# Methods of a module that do not run its forward (so gather nothing through hooks).
NOT_RUNS = frozenset(
    {
        "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
        "children", "named_children", "state_dict", "load_state_dict", "train", "eval", "to", "cuda",
        "cpu", "half", "float", "bfloat16", "requires_grad_", "zero_grad", "extra_repr", "apply",
        "register_buffer", "register_parameter", "register_forward_hook", "register_forward_pre_hook",
        "register_full_backward_hook", "register_backward_hook", "add_module", "get_submodule", "get_parameter", "save_pretrained",
        "push_to_hub", "num_parameters", "get_input_embeddings", "get_output_embeddings", "tie_weights",
        "resize_token_embeddings", "gradient_checkpointing_enable", "print_trainable_parameters", "no_sync",
        # a tensor's, not a module's (`crt_net[k].size()` of a name rebound to the model's state dict)
        "size", "dim", "numel", "item", "tolist", "numpy",
    }
) | CONTAINER_METHODS  # fmt: skip
# Size queries that read 0 on a partitioned placeholder.
SIZE_ATTRS = frozenset({"shape", "ndim"})
SIZE_METHODS = frozenset({"size", "numel", "nelement", "dim", "ndimension"})

# Mixins that give a module class `save_pretrained`/`push_to_hub`, which serialise `self.state_dict()`
# (huggingface_hub's `PyTorchModelHubMixin` writes `model.safetensors` from the module's state dict).
HUB_MIXINS = frozenset({"huggingface_hub.PyTorchModelHubMixin", "huggingface_hub.hub_mixin.PyTorchModelHubMixin"})
HUB_MIXIN_SAVES = frozenset({"save_pretrained", "push_to_hub"})

# In-place tensor methods: a name ending in one underscore, not a dunder.
INPLACE_METHOD = re.compile(r"^[a-z][a-z0-9_]*[a-z0-9]_$")
# In-place operations over a list of tensors, which write every tensor of their first argument:
# `torch._foreach_mul_(params, m)`, `torch._foreach_lerp_(ema, params, w)`, `torch._foreach_copy_(dst, src)`.
FOREACH_INPLACE = re.compile(r"^_foreach_[a-z0-9_]*[a-z0-9]_$")

# Calls that re-parametrise a built module from its current weights.
REPARAMETRIZE = frozenset(
    {"weight_norm", "spectral_norm", "register_parametrization", "orthogonal", "remove_weight_norm",
     "remove_spectral_norm", "remove_parametrizations"}
)
INIT_PREFIXES = ("torch.nn.init.",)

# torch's gradient clipping over a parameter iterable (its first argument).
CLIP_GRAD = frozenset(
    {"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "get_total_norm", "clip_grads_with_norm_",
     # timm's: by norm, value or adaptively, as its `mode` says
     "dispatch_clip_grad", "adaptive_clip_grad"}
)
# Functions that call the function (or module) they are given first: `jvp(self.model, inputs, tangents)`,
# `checkpoint(self.block, x)` run the module's forward, hooks included.
CALLS_FIRST_ARGUMENT = frozenset(
    {
        "torch.func.jvp", "torch.func.vjp", "torch.func.vmap", "torch.func.grad", "torch.func.grad_and_value",
        "torch.func.jacrev", "torch.func.jacfwd", "torch.func.hessian", "torch.autograd.functional.jvp",
        "torch.autograd.functional.vjp", "torch.autograd.functional.jacobian", "torch.autograd.functional.hessian",
        "torch.utils.checkpoint.checkpoint", "torch.vmap", "torch.onnx.export", "torch.jit.trace",
    }
)  # fmt: skip
# ODE solvers with error control: they call the function they are given first (`odeint(f, y0, t)`) as many times as
# their step-size control decides from the values it computes, unless given a fixed-grid method.
ADAPTIVE_SOLVERS = frozenset({"torchdiffeq.odeint", "torchdiffeq.odeint_adjoint", "torchdiffeq.odeint_event"})
# torchdiffeq's methods that step over a fixed grid (the default, `dopri5`, and the others adapt their steps).
FIXED_GRID_METHODS = frozenset(
    {"euler", "midpoint", "rk4", "heun2", "heun3", "explicit_adams", "implicit_adams", "fixed_adams"}
)
# torch functions over a parameter iterable: which argument it is, and whether its values are read or written.
PARAMETER_VECTORS = {
    "torch.nn.utils.parameters_to_vector": (0, "read"),
    "torch.nn.utils.convert_parameters.parameters_to_vector": (0, "read"),
    "torch.nn.utils.vector_to_parameters": (1, "write"),
    "torch.nn.utils.convert_parameters.vector_to_parameters": (1, "write"),
}
# torch's post-training quantisation of a model: which argument is the model, whose every weight it reads (to
# quantise it, or to fold a batch norm into a convolution).
MODEL_READERS = {
    "torch.quantization.quantize_dynamic": 0,
    "torch.ao.quantization.quantize_dynamic": 0,
    "torch.quantization.quantize": 0,
    "torch.ao.quantization.quantize": 0,
    "torch.quantization.convert": 0,
    "torch.ao.quantization.convert": 0,
    "torch.quantization.fuse_modules": 0,
    "torch.ao.quantization.fuse_modules": 0,
}
# Weight-averaging helpers of libraries (not read: they are installed, not part of the program) that keep a
# copy of the model they are given (`EMA(model)`, `AveragedModel(model)`) and update it from the model's
# parameters when one of `AVERAGER_UPDATES` is called.
AVERAGERS = frozenset(
    {
        "ema_pytorch.EMA",
        "ema_pytorch.ema_pytorch.EMA",
        "ema_pytorch.PostHocEMA",
        "torch.optim.swa_utils.AveragedModel",
        "timm.utils.ModelEma",
        "timm.utils.ModelEmaV2",
        "timm.utils.ModelEmaV3",
        "timm.utils.model_ema.ModelEma",
        "timm.utils.model_ema.ModelEmaV2",
        "timm.utils.model_ema.ModelEmaV3",
        "diffusers.training_utils.EMAModel",
        "torch_ema.ExponentialMovingAverage",
    }
)
# The class names such helpers go by in any library: a class of one of these names imported from a library the
# program cannot read (`from somelib.ema import EMA`, `ModelEMA`, `LitEma`) is read as one of them.
AVERAGER_NAMES = frozenset(
    {name.rsplit(".", 1)[-1] for name in AVERAGERS}
    | {"EMA", "ModelEMA", "ModelEma", "EMAModel", "EmaModel", "LitEma", "EMAHelper", "ExponentialMovingAverage",
       "AveragedModel"}
)
# The attribute in which such a helper keeps its copy of the model, a module run like the model (`ema.ema_model(x)`,
# `swa.module(x)`); helpers that keep only parameter tensors (`EMAModel`, `ExponentialMovingAverage`) keep none.
AVERAGER_COPIES = {
    "ema_pytorch.EMA": "ema_model",
    "ema_pytorch.ema_pytorch.EMA": "ema_model",
    "torch.optim.swa_utils.AveragedModel": "module",
    "timm.utils.ModelEma": "ema",
    "timm.utils.ModelEmaV2": "module",
    "timm.utils.ModelEmaV3": "module",
    "timm.utils.model_ema.ModelEma": "ema",
    "timm.utils.model_ema.ModelEmaV2": "module",
    "timm.utils.model_ema.ModelEmaV3": "module",
}
AVERAGER_UPDATES = frozenset(
    {"update", "update_parameters", "step", "copy_to", "restore", "store", "update_moving_average", "average_parameters",
     "copy_params_from_model_to_ema", "copy_params_from_ema_to_model"}
)  # `average_parameters()` (torch_ema) swaps the averages into the model's parameters and back; ema_pytorch's
# `copy_params_from_model_to_ema()` copies the model's parameters into the average, `..._ema_to_model()` back
# Of those, the updates that read every parameter of the model (the others write it from the average).
AVERAGER_BLENDS = frozenset(
    {"update", "update_parameters", "step", "store", "update_moving_average", "copy_params_from_model_to_ema"}
)

# A module's methods that set every parameter it owns afresh (torch's layers define them, and so does any module
# class by convention: `for m in model.children(): m.reset_parameters()` walks them).
TORCH_INITIALISERS = frozenset({"reset_parameters", "_reset_parameters"})
# A module's whole state read or loaded: the state dict API and torch's per-module halves of it, which a
# hand-written walker calls on each submodule (`module._load_from_state_dict(sd, prefix, ...)`).
STATE_CALLS = frozenset({"state_dict", "load_state_dict", "_load_from_state_dict", "_save_to_state_dict"})
# Parts of a model object that keep a state of their own, not the model's (`model.optimizer`, `agent.lr_scheduler`).
OWN_STATE_PART = re.compile(r"optim|sched|scaler|sampler|loader|token|rng|random|metric|logger|writer|callback")
# Functions that pickle the object they are given (a module pickled whole keeps its parameters as they are:
# under ZeRO-3 partitioned placeholders).
PICKLERS = frozenset(
    {"torch.save", "pickle.dump", "pickle.dumps", "cloudpickle.dump", "cloudpickle.dumps", "dill.dump", "dill.dumps",
     "joblib.dump"}
)  # fmt: skip
# Methods of a connection that pickle the one object they are handed for another process (`pipe.send(model)`).
PICKLING_SENDS = frozenset({"send", "send_pyobj"})


# Inputs of a call that are states, caches, masks, ids, labels or flags (by the name of the argument): they pick
# values or carry what an earlier step computed, so testing them (given or not, their number of dimensions) follows
# the model's calling convention, not which tower this rank's data needs. ZG205's guard and `taint._kind_test`.
CONVENTION_INPUTS = (
    r"hidden_states|past|mask|position|labels?$|inputs?_embeds$|^output_|^return_|^use_|^skip_|"
    r"^encoder_outputs$|^head_mask$|^kwargs$|token_type|^timestep|^seq_len|^length"
)
CONVENTION_INPUT = re.compile(rf"_ids$|^ids$|{CONVENTION_INPUTS}")


# Calls that pair up the items of the iterables they are given, as `zip` does: the strict zips libraries write for
# themselves (`zip_strict(params, target_params)`, `safe_zip`, `zip_equal`). (Not `zip_longest`, which pads the
# shorter ones: its items are no pairs of equals.)
ZIP_LIKE = re.compile(r"^(?:i?zip|zip_(?:strict|equal|exact)|(?:safe|strict|equal)_zip)$")

# Calls that hand out the items of the iterable they are given, unchanged (`tqdm(loader)`, `track(xs)`, `iter(xs)`):
# a progress bar or an iterator over the same values.
PASS_THROUGH = frozenset({"tqdm", "track", "progress", "progressbar", "alive_it", "identity", "iter"})
