"""How long a ZeRO-3 step spends communicating: flat sharding, hpZ and HSDP, in an alpha-beta model.

Standard library only (no torch): `zgen plan` prints `summary_lines(...)` so a
user sees at which world size hierarchical sharding pays.

A ring collective over `n` ranks moving a tensor of `S` bytes (the gathered
or reduced size) takes `(n - 1) * alpha + (n - 1) / n * S / beta`: each rank
sends and receives `(n - 1) / n * S`, in `n - 1` steps. Inside one node the
links are NVLink; a ring spanning nodes is bounded by each GPU's network
port (NCCL runs one ring per NIC, so `beta` is the per-GPU network
bandwidth: the "bus bandwidth" nccl-tests reports). An all-reduce is a
reduce-scatter plus an all-gather: twice the steps and the bytes.

Per optimizer step, with P parameters in U units, N GPUs, G per node, M = N / G nodes,
b bytes per gathered parameter (2 in bf16) and r per reduced gradient (4 in fp32):

* flat (ZeRO-3): all-gather in forward and again in backward over N, reduce-scatter over N;
* hpZ (`zero_hpz_partition_size` = G, ZeRO++): the backward all-gather runs over the G
  GPUs of the node from the secondary partition kept after the forward;
* HSDP (shard within a node, replicate across nodes): all three collectives over G,
  then an all-reduce of each GPU's gradient shard (P * r / G bytes) across the M nodes.

Model states per GPU (fp32 master, Adam's two moments, fp32 gradient shard: 16 bytes per
parameter) are sharded over N (flat, hpZ) or G (HSDP); hpZ adds the secondary
partitions (at most P * b / G). Accumulation multiplies the gathers (every
micro-step gathers) but not the reduction; `micro_steps` says how many.
The model ignores overlap with compute: it is the time a step would spend if
nothing hid it, so compare it with the step's compute time.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Fabric", "H200_NODE", "StepComm", "step_comm", "compare", "summary_lines", "MODES", "WORLD_SIZES"]

# -- the fabric (named constants with their sources) ------------------------------------------------
# NVIDIA H200 SXM datasheet: "NVLink: 900 GB/s" per GPU, both directions together (NVLink 4, 18 links).
NVLINK_BYTES_PER_S = 450e9  # one direction
# NVIDIA DGX H200 / DGX H100 user guide, hardware overview: eight single-port ConnectX-7 adapters,
# 400 Gb/s InfiniBand or Ethernet each, one per GPU, for the cluster (compute) fabric.
NETWORK_BYTES_PER_S = 400e9 / 8  # 50 GB/s per GPU, one direction
# Per-step latencies of a ring collective: assumed, the order of magnitude of NCCL's small-message
# latencies in nccl-tests (a few microseconds over NVLink, ~10 us across InfiniBand); not measured here.
NVLINK_ALPHA_S = 3e-6
NETWORK_ALPHA_S = 10e-6
GPUS_PER_NODE = 8  # DGX/HGX H200: eight GPUs per node, all-to-all NVLink through NVSwitch

MODES = ("flat", "hpz", "hsdp")
WORLD_SIZES = (8, 16, 32, 64, 128, 256, 512, 1024)
STATE_BYTES_PER_PARAM = 16  # fp32 master 4 + Adam's moments 8 + fp32 gradient shard 4


@dataclass(frozen=True, slots=True)
class Fabric:
    """Bandwidths (bytes/s, one direction, per GPU) and per-step latencies (s) of the two link kinds."""

    gpus_per_node: int = GPUS_PER_NODE
    nvlink_bw: float = NVLINK_BYTES_PER_S
    nvlink_alpha: float = NVLINK_ALPHA_S
    network_bw: float = NETWORK_BYTES_PER_S
    network_alpha: float = NETWORK_ALPHA_S


H200_NODE = Fabric()


@dataclass(frozen=True, slots=True)
class StepComm:
    """One step's communication for one mode and world size (per GPU)."""

    mode: str
    world_size: int
    nvlink_bytes: float  # sent over NVLink per GPU
    network_bytes: float  # sent over the network per GPU
    seconds: float  # alpha-beta time of all the step's collectives, none overlapped
    state_bytes: float  # model states held per GPU (plus hpZ's secondary partitions)


def _ring(n: int, size: float, fabric: Fabric, spans_nodes: bool, calls: int) -> tuple[float, float, float]:
    """(nvlink bytes, network bytes, seconds) of `calls` ring collectives of `size` bytes in total over `n` ranks."""
    if n <= 1:
        return 0.0, 0.0, 0.0
    moved = (n - 1) / n * size
    if spans_nodes:
        return 0.0, moved, calls * (n - 1) * fabric.network_alpha + moved / fabric.network_bw
    return moved, 0.0, calls * (n - 1) * fabric.nvlink_alpha + moved / fabric.nvlink_bw


def step_comm(
    params: float,
    world_size: int,
    mode: str = "flat",
    *,
    units: int = 1,
    micro_steps: int = 1,
    param_bytes: int = 2,
    grad_bytes: int = 4,
    fabric: Fabric = H200_NODE,
) -> StepComm:
    """The communication of one optimizer step of a `params`-parameter model gathered in `units` units."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    g = min(fabric.gpus_per_node, world_size)
    if world_size % g:
        raise ValueError(f"world size {world_size} is not a whole number of {g}-GPU nodes")
    nodes = world_size // g
    multi = nodes > 1
    gather, reduce = params * param_bytes, params * grad_bytes
    parts: list[tuple[float, float, float]] = []
    if mode == "hsdp":
        parts.append(_ring(g, 2 * micro_steps * gather, fabric, False, 2 * micro_steps * units))
        parts.append(_ring(g, micro_steps * reduce, fabric, False, micro_steps * units))
        if multi:  # all-reduce of each GPU's shard across the nodes: reduce-scatter + all-gather
            parts.append(_ring(nodes, 2 * reduce / g, fabric, True, 2 * units))
        state = STATE_BYTES_PER_PARAM * params / g
    else:
        parts.append(_ring(world_size, micro_steps * gather, fabric, multi, micro_steps * units))  # forward
        backward_over = g if mode == "hpz" else world_size
        parts.append(_ring(backward_over, micro_steps * gather, fabric, multi and mode != "hpz", micro_steps * units))
        parts.append(_ring(world_size, micro_steps * reduce, fabric, multi, micro_steps * units))
        state = STATE_BYTES_PER_PARAM * params / world_size + (gather / g if mode == "hpz" and multi else 0.0)
    nv, net, sec = (sum(p[i] for p in parts) for i in range(3))
    return StepComm(mode, world_size, nv, net, sec, state)


def compare(params: float, world_sizes: tuple[int, ...] = WORLD_SIZES, **kw) -> list[StepComm]:
    """`step_comm` for every mode at every world size (keyword arguments as `step_comm`'s)."""
    return [step_comm(params, n, mode, **kw) for n in world_sizes for mode in MODES]


def summary_lines(params: float, world_sizes: tuple[int, ...] = WORLD_SIZES, **kw) -> list[str]:
    """A table for `zgen plan`'s output: step communication time and network bytes per GPU by mode."""
    rows = compare(params, world_sizes, **kw)
    fabric = kw.get("fabric", H200_NODE)
    out = [
        f"communication per step, alpha-beta model (NVLink {fabric.nvlink_bw / 1e9:.0f} GB/s, network "
        f"{fabric.network_bw / 1e9:.0f} GB/s per GPU, {fabric.gpus_per_node} GPUs per node; nothing overlapped):",
        f"  {'GPUs':>5}  {'flat ms':>9}  {'hpZ ms':>9}  {'HSDP ms':>9}  {'net GB/GPU flat/hpZ/HSDP':>26}  "
        f"{'states GiB/GPU flat/HSDP':>24}",
    ]
    for n in world_sizes:
        by = {r.mode: r for r in rows if r.world_size == n}
        f, h, d = by["flat"], by["hpz"], by["hsdp"]
        out.append(
            f"  {n:>5}  {f.seconds * 1e3:>9.1f}  {h.seconds * 1e3:>9.1f}  {d.seconds * 1e3:>9.1f}  "
            f"{f.network_bytes / 1e9:>8.2f}/{h.network_bytes / 1e9:.2f}/{d.network_bytes / 1e9:.2f}  "
            f"{f.state_bytes / 2**30:>13.2f}/{d.state_bytes / 2**30:.2f}"
        )
    return out
