"""The offload rules against DeepSpeed's engine: `deepspeed.initialize` on the CPU, one process, a client optimizer.

ZC406 says the engine raises for CPU offload with a client optimizer while
`zero_force_ds_cpu_optimizer` is true; ZC405 says stage 2 with NVMe offload
is CPU offload with no swapper. Both are checked against what DeepSpeed 0.19.8
does when it builds the engine (the parser alone accepts all these configs).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zc_helpers import check, codes

pytest.importorskip("deepspeed", reason="the engine differential needs DeepSpeed")

_PROBE = r"""
import importlib, json, logging, os, sys
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2], RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                  TORCHELASTIC_USE_AGENT_STORE="True")
import torch, deepspeed
logging.getLogger("DeepSpeed").setLevel(logging.CRITICAL)
# One process on the CPU: DeepSpeed's shared-memory all-reduce kernel is never used here, and building it
# compiles C++ for a minute on a fresh machine. The engine's offload decisions do not depend on it.
importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None  # the module; the package's `torch` is torch
out = []
for cfg in json.loads(sys.argv[1]):
    model = torch.nn.Linear(4, 4)
    try:
        engine, *_ = deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(model.parameters()), config=cfg)
        opt = engine.optimizer
        out.append({"error": None, "cpu_offload": bool(getattr(opt, "cpu_offload", False)),
                    "swapper": any("swap" in name.lower() and value is not None for name, value in vars(opt).items())})
    except Exception as e:
        out.append({"error": type(e).__name__})
print("RESULT " + json.dumps(out))
"""

CONFIGS = [
    {"train_batch_size": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
    {"train_batch_size": 1, "zero_force_ds_cpu_optimizer": False,
     "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
    {"train_batch_size": 1, "zero_force_ds_cpu_optimizer": False,
     "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/nonexistent/nvme"}}},
    {"train_batch_size": 1, "zero_optimization": {"stage": 1}},
]


@pytest.fixture(scope="module")
def engine_results():
    # This process hosts the rendezvous store (as torchrun's agent does), so the port stays bound throughout.
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, 2, is_master=True, wait_for_workers=False)
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(CONFIGS), str(store.port)], capture_output=True,
                          text=True, timeout=540)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(line[len("RESULT "):])


@pytest.mark.slow
def test_client_optimizer_with_offload_raises_exactly_where_zc406_says(engine_results):
    for cfg, result in zip(CONFIGS, engine_results):
        report = check(json.dumps(cfg), world_size=1, consumer="deepspeed")
        raised = result["error"] == "ZeRORuntimeException"
        assert raised == ("ZC406" in codes(report)), (cfg, result, codes(report))


@pytest.mark.slow
def test_nvme_optimizer_offload_at_stage_2_is_cpu_offload_without_a_swapper(engine_results):
    nvme = engine_results[2]
    assert nvme["error"] is None and nvme["cpu_offload"] and not nvme["swapper"]
    assert "ZC405" in codes(check(json.dumps(CONFIGS[2]), world_size=1, consumer="deepspeed"))
    assert "ZC405" not in codes(check(json.dumps(CONFIGS[1]), world_size=1, consumer="deepspeed"))
