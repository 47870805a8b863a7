"""The public surface the engine calls: `check_source`, `rule_infos`, `model_shape`."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from zgen.findings import Finding
from zgen.model import check_source, rule_infos

HAZARDS = {
    "zg1_param_access.py": {"ZG101", "ZG102", "ZG103", "ZG106", "ZG107", "ZG108"},
    "zg2_divergent_flow.py": {"ZG201", "ZG202", "ZG203", "ZG204"},
    "zg3_external_params.py": {"ZG301", "ZG302", "ZG303"},
}


def test_import_is_cheap_and_never_loads_torch():
    code = (
        "import sys, zgen.model\n"
        "assert 'libcst' not in sys.modules and 'torch' not in sys.modules\n"
        "zgen.model.check_source('m.py', 'from torch import nn\\nclass A(nn.Module):\\n    pass\\n')\n"
        "zgen.model.rule_infos()\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_check_source_is_a_picklable_pure_function():
    assert pickle.loads(pickle.dumps(check_source)) is check_source
    source = "import torch.distributed as dist\nfrom torch import nn\n" + _GATED
    first = check_source("a.py", source)
    assert first == check_source("a.py", source)
    assert all(isinstance(f, Finding) and f.path == "a.py" for f in first)


_GATED = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.block(x)
        return x
"""


def test_enabled_selects_rules():
    source = "import torch.distributed as dist\nfrom torch import nn\n" + _GATED
    assert [f.code for f in check_source("a.py", source)] == ["ZG201"]
    assert check_source("a.py", source, enabled=frozenset({"ZG301"})) == []
    assert [f.code for f in check_source("a.py", source, enabled=frozenset({"ZG201"}))] == ["ZG201"]


@pytest.mark.parametrize("name", sorted(HAZARDS))
def test_hazard_examples_fire_their_family(repo, name):
    path = repo / "examples" / "hazards" / name
    findings = check_source(f"examples/hazards/{name}", path.read_text())
    assert {f.code for f in findings} == HAZARDS[name]
    # Each finding sits on the line the example marks with its code.
    lines = path.read_text().splitlines()
    for f in findings:
        assert f.code in lines[f.line - 1], f"{f.code} reported on line {f.line}: {lines[f.line - 1]!r}"
    assert findings == sorted(findings, key=Finding.sort_key)


def test_clean_lookalikes_stay_clean(repo):
    path = repo / "examples" / "hazards" / "clean_lookalikes.py"
    assert check_source("examples/hazards/clean_lookalikes.py", path.read_text()) == []


def test_inherited_method_is_reported_once():
    source = "import torch.distributed as dist\nfrom torch import nn\n" + _GATED + "\nclass Sub(Net):\n    pass\n"
    assert [f.code for f in check_source("a.py", source)] == ["ZG201"]


def test_rule_infos_have_documentation():
    infos = rule_infos()
    assert len(infos) == 19
    assert all(info.doc and info.summary for info in infos)


def test_zgen_runtime_initialize_is_a_wrap_point():
    from zgen.model import check_source

    src = (
        "import torch\n"
        "import zgen.runtime as zr\n"
        "model = build()\n"
        "engine = zr.initialize(model, 'ds.json')\n"
        "torch.save(model.state_dict(), 'x.pt')\n"
    )
    assert [f.code for f in check_source("train.py", src)] == ["ZG108"]
    before = src.replace("engine = zr.initialize(model, 'ds.json')\n", "").replace("build()\n", "build()\n") + "engine = zr.initialize(model, 'ds.json')\n"
    assert check_source("train.py", before) == []
