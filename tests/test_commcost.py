"""The alpha-beta communication model of flat ZeRO-3, hpZ and HSDP (zgen.commcost)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from zgen import commcost as cc

P = 1e9  # parameters
FAST = cc.Fabric(nvlink_alpha=0.0, network_alpha=0.0)  # bandwidth terms alone, for exact byte counts


def test_one_node_every_mode_is_the_same_nvlink_traffic():
    rows = {r.mode: r for r in cc.compare(P, (8,), units=10)}
    assert rows["flat"].network_bytes == rows["hpz"].network_bytes == rows["hsdp"].network_bytes == 0
    assert rows["flat"].seconds == pytest.approx(rows["hpz"].seconds) == pytest.approx(rows["hsdp"].seconds)
    # forward and backward all-gathers of 2 bytes and a reduce-scatter of 4 bytes per parameter, 7/8 of each
    assert rows["flat"].nvlink_bytes == pytest.approx(7 / 8 * P * (2 + 2 + 4))


def test_flat_bytes_and_time_at_two_nodes():
    flat = cc.step_comm(P, 16, "flat", fabric=FAST)
    moved = 15 / 16 * P * (2 + 2 + 4)
    assert flat.network_bytes == pytest.approx(moved) and flat.nvlink_bytes == 0
    assert flat.seconds == pytest.approx(moved / cc.NETWORK_BYTES_PER_S)
    assert flat.state_bytes == pytest.approx(16 * P / 16)


def test_hpz_moves_the_backward_gather_into_the_node():
    flat, hpz = cc.step_comm(P, 64, "flat", fabric=FAST), cc.step_comm(P, 64, "hpz", fabric=FAST)
    assert flat.network_bytes - hpz.network_bytes == pytest.approx(63 / 64 * 2 * P)
    assert hpz.nvlink_bytes == pytest.approx(7 / 8 * 2 * P)
    assert hpz.seconds < flat.seconds
    assert hpz.state_bytes == pytest.approx(flat.state_bytes + 2 * P / 8)  # the secondary partitions


def test_hsdp_reduces_across_nodes_only_a_shard():
    hsdp = cc.step_comm(P, 32, "hsdp", fabric=FAST)  # 4 nodes of 8
    assert hsdp.network_bytes == pytest.approx(2 * 3 / 4 * 4 * P / 8)
    assert hsdp.nvlink_bytes == pytest.approx(7 / 8 * P * (2 + 2 + 4))
    assert hsdp.state_bytes == pytest.approx(16 * P / 8)  # sharded only within the node


def test_latency_terms_count_the_ring_steps():
    slow = cc.Fabric(nvlink_bw=float("inf"), network_bw=float("inf"), network_alpha=1.0, nvlink_alpha=0.0)
    assert cc.step_comm(P, 16, "flat", units=5, fabric=slow).seconds == pytest.approx(3 * 5 * 15)
    assert cc.step_comm(P, 16, "hpz", units=5, fabric=slow).seconds == pytest.approx(2 * 5 * 15)
    assert cc.step_comm(P, 16, "hsdp", units=5, fabric=slow).seconds == pytest.approx(2 * 5 * 1)


def test_accumulation_repeats_the_gathers_not_the_cross_node_reduction():
    one, four = (cc.step_comm(P, 32, "hsdp", micro_steps=m, fabric=FAST) for m in (1, 4))
    assert four.network_bytes == pytest.approx(one.network_bytes)
    assert four.nvlink_bytes > 3 * one.nvlink_bytes


def test_hierarchical_modes_cost_less_than_flat_once_the_world_spans_nodes():
    rows = cc.compare(P, units=17)
    for n in cc.WORLD_SIZES[1:]:
        by = {r.mode: r for r in rows if r.world_size == n}
        assert by["hpz"].seconds < by["flat"].seconds and by["hsdp"].seconds < by["flat"].seconds


def test_summary_table_and_bad_input():
    lines = cc.summary_lines(1.236e9, (8, 16), units=17)
    assert len(lines) == 4 and lines[2].split()[0] == "8" and "GB/s" in lines[0]
    with pytest.raises(ValueError, match="mode must be one of"):
        cc.step_comm(P, 8, "mics")
    with pytest.raises(ValueError, match="not a whole number of 8-GPU nodes"):
        cc.step_comm(P, 12, "flat")


def test_the_model_imports_nothing_heavy():
    code = "import sys, zgen.commcost; print(sorted(m for m in ('torch', 'libcst', 'z3') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
