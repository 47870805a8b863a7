"""Classes from other files: found through the package and the import path, read and never imported."""

from __future__ import annotations

import textwrap

from zgen.model import check_source
from zgen.model.program.project import module_name_of

LAYERS = """
import torch
from torch import nn

class Base(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

class Mlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(self.fc1(x))

class Config:
    def __init__(self):
        self.dim = 8
"""

MODEL = """
import torch.distributed as dist
from .layers import Base, Config
from . import layers

class Block(Base):
    def __init__(self, dim):
        super().__init__(dim)
        self.mlp = layers.Mlp(dim)
        self.cfg = Config()

    def forward(self, x):
        if dist.get_rank() == 0:
            x = self.mlp(x)
        return x + self.mlp.fc1.weight.sum() + self.norm.weight.sum() + self.norm(x).sum()
"""

SAFE = """
import torch.distributed as dist
from .layers import Base, Config

class Head(Base):
    def __init__(self, dim):
        super().__init__(dim)
        self.cfg = Config()

    def forward(self, x):
        if dist.get_rank() == 0:
            self.cfg(x)  # not a module: nothing to gather
        return self.norm(x)
"""


def _package(tmp_path, **files):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .layers import Mlp\n")
    for name, code in files.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(code))
    return pkg


def test_module_name_of_walks_up_packages(tmp_path):
    pkg = _package(tmp_path, layers=LAYERS)
    assert module_name_of(str(pkg / "layers.py")) == ("pkg.layers", str(tmp_path), False)
    assert module_name_of(str(pkg / "__init__.py")) == ("pkg", str(tmp_path), True)


def test_bases_and_members_from_another_file(tmp_path):
    pkg = _package(tmp_path, layers=LAYERS, model=MODEL)
    deps: dict[str, str] = {}
    findings = check_source(str(pkg / "model.py"), (pkg / "model.py").read_text(), deps=deps)
    codes = {(f.code, f.line) for f in findings}
    assert ("ZG201", 13) in codes  # Mlp is a module with parameters, defined in layers.py
    assert ("ZG301", 15) in codes  # self.mlp.fc1.weight: a parameter of a submodule of another file
    assert str(pkg / "layers.py") in deps
    # The LayerNorm weight that `Base` builds stays gathered (persistent, and the norm runs): not flagged.
    assert not any(f.code == "ZG301" and "norm" in f.message for f in findings)


def test_non_module_class_from_another_file_stays_clean(tmp_path):
    pkg = _package(tmp_path, layers=LAYERS, head=SAFE)
    assert check_source(str(pkg / "head.py"), (pkg / "head.py").read_text()) == []


def test_reexport_through_package_init(tmp_path):
    pkg = _package(tmp_path, layers=LAYERS)
    (tmp_path / "user.py").write_text(textwrap.dedent("""
        import torch.distributed as dist
        from torch import nn
        from pkg import Mlp

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.mlp = Mlp(8)

            def forward(self, x):
                if dist.get_rank() == 0:
                    x = self.mlp(x)
                return x
    """))
    findings = check_source(str(tmp_path / "user.py"), (tmp_path / "user.py").read_text())
    assert [f.code for f in findings] == ["ZG201"]


def test_namespace_package_resolves_but_a_sibling_project_does_not(tmp_path):
    # ns/ has no __init__.py: `from ns.core.layers import Mlp` is found from the directory above it.
    core = tmp_path / "repo" / "ns" / "core"
    core.mkdir(parents=True)
    (core / "__init__.py").write_text("")
    (core / "layers.py").write_text(textwrap.dedent(LAYERS))
    model = core / "model.py"
    model.write_text(textwrap.dedent(MODEL).replace("from .layers import", "from ns.core.layers import"))
    deps: dict[str, str] = {}
    assert ("ZG201", 13) in {(f.code, f.line) for f in check_source(str(model), model.read_text(), deps=deps)}
    assert str(core / "layers.py") in deps
    # A plain file's directory is a root, but the folder above it (a sibling project's home) is not.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "layers.py").write_text(textwrap.dedent(LAYERS))
    user = tmp_path / "mine" / "user.py"
    user.parent.mkdir()
    user.write_text(textwrap.dedent(MODEL).replace("from .layers import", "from other.layers import"))
    deps = {}
    check_source(str(user), user.read_text(), deps=deps)
    assert str(tmp_path / "other" / "layers.py") not in deps


VIT = """
import torch
from torch import nn

class ViT(nn.Module):
    def __init__(self, n, dim):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.randn(1, n + 1, dim))
        self.temperature = nn.Parameter(torch.ones(1))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x + self.pos_embedding)
"""

WRAPPER = """
from torch import nn
from pkg.vit import ViT

class Pretrainer(nn.Module):
    def __init__(self, encoder, dim):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(dim, dim)

    def forward(self, tokens):
        tokens = tokens + self.encoder.pos_embedding[:, 1:]
        return self.head(tokens) * self.encoder.temperature
"""


def test_a_parameter_name_of_the_package_on_a_module_handed_in(tmp_path):
    # The encoder's class is unknown (it arrives as an argument), but the package registers
    # `pos_embedding` as a table-sized parameter: reading it is a read outside the encoder's forward.
    # `temperature` is a one-element parameter, which stays gathered: no finding.
    pkg = _package(tmp_path, layers=LAYERS, vit=VIT, wrapper=WRAPPER)
    path = str(pkg / "wrapper.py")
    found = check_source(path, (pkg / "wrapper.py").read_text())
    assert [(f.code, f.line) for f in found] == [("ZG301", 12)]


def test_namespace_portion_inside_a_package_is_named_through_it(tmp_path):
    # lerobot/policies/sac/ has no __init__.py but lerobot/policies/ does (blind14 lerobot modeling_sac.py:243):
    # Python imports `lerobot.policies.sac.modeling_sac`, so `from lerobot.policies.pretrained import Base` resolves
    # and the policy is a module.
    policies = tmp_path / "lerobot" / "policies"
    (policies / "sac").mkdir(parents=True)
    (tmp_path / "lerobot" / "__init__.py").write_text("")
    (policies / "__init__.py").write_text("")
    (policies / "pretrained.py").write_text("from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (policies / "sac" / "helpers.py").write_text("def temperature(x):\n    return x\n")
    model = policies / "sac" / "modeling_sac.py"
    model.write_text(textwrap.dedent("""
        import torch
        from torch import nn
        from lerobot.policies.pretrained import Base


        class Policy(Base):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Linear(d, d)
                self.log_alpha = nn.Parameter(torch.zeros(1))

            def forward(self, x):
                return self.net(x)

            def update_temperature(self):
                self.temperature = self.log_alpha.exp().item()
    """))
    assert module_name_of(str(model)) == ("lerobot.policies.sac.modeling_sac", str(tmp_path), False)
    found = {(f.code, f.line) for f in check_source(str(model), model.read_text())}
    assert ("ZG109", 17) in found


SCALING = """
import torch
from torch import nn

def ScaledLinear(*args, initial_scale: float = 1.0, **kwargs) -> nn.Linear:
    return nn.Linear(*args, **kwargs)
"""

ZIPFORMER = """
import torch.nn.functional as F
from torch import nn
from scaling import ScaledLinear

class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.out_proj = ScaledLinear(d, d, initial_scale=0.05)

    def forward(self, x):
        return F.linear(x, self.out_proj.weight, self.out_proj.bias)
"""


def _recipe(*packages, sibling, model: str = ZIPFORMER):
    """Each of `packages` made a package directory; `sibling` gets `scaling.py`; the model is written beside it."""
    for directory in packages:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "__init__.py").write_text("")
    (sibling / "scaling.py").write_text(textwrap.dedent(SCALING))
    path = packages[-1] / ("zipformer.py" if packages[-1] == sibling else "world_model.py")
    path.write_text(textwrap.dedent(model))
    return path


def test_a_package_file_run_as_a_script_imports_its_sibling_by_its_own_name(tmp_path):
    # icefall's recipes: `recipe/` holds an `__init__.py`, but `./recipe/train.py` runs with `recipe/` on the path,
    # so `from scaling import ScaledLinear` is `recipe/scaling.py`, read as the package's `egs.recipe.scaling`
    recipe = tmp_path / "egs" / "recipe"
    model = _recipe(recipe, sibling=recipe)
    deps: dict[str, str] = {}
    found = {(f.code, f.line) for f in check_source(str(model), model.read_text(), deps=deps)}
    assert ("ZG301", 12) in found
    assert str(recipe / "scaling.py") in deps


def test_a_sibling_of_the_package_root_comes_before_the_files_own_directory(tmp_path):
    # `scaling` at the top of the project (where `egs` lives) is what an absolute import finds when the package runs
    # from there (`python -m egs.recipe.train`)
    recipe = tmp_path / "egs" / "recipe"
    model = _recipe(tmp_path / "egs", recipe, sibling=recipe)
    (tmp_path / "scaling.py").write_text("def ScaledLinear(*args, **kwargs):\n    return None\n")
    deps: dict[str, str] = {}
    check_source(str(model), model.read_text(), deps=deps)
    assert str(tmp_path / "scaling.py") in deps
    assert str(recipe / "scaling.py") not in deps


def test_a_package_file_imports_a_package_above_it_by_its_own_name(tmp_path):
    # tdmpc2: `train.py` runs from `tdmpc2/`, and `tdmpc2/common/world_model.py` says `from common import scaling`
    top = tmp_path / "tdmpc2"
    common = top / "common"
    model = _recipe(top, common, sibling=common, model=ZIPFORMER.replace(
        "from scaling import ScaledLinear", "from common.scaling import ScaledLinear"))
    deps: dict[str, str] = {}
    found = {(f.code, f.line) for f in check_source(str(model), model.read_text(), deps=deps)}
    assert ("ZG301", 12) in found
    assert str(common / "scaling.py") in deps


def test_what_a_package_file_imports_by_a_bare_name_does_not_depend_on_the_files_checked_before(tmp_path):
    # the sibling `scaling` of `recipe/` means `recipe/scaling.py` wherever the check starts from
    recipe = tmp_path / "egs" / "recipe"
    other = tmp_path / "egs" / "other"
    _recipe(other, sibling=other)
    model = _recipe(recipe, sibling=recipe)
    user = other / "user.py"
    user.write_text(textwrap.dedent(ZIPFORMER).replace("from scaling import", "from egs.recipe.scaling import"))
    alone = [(f.code, f.line) for f in check_source(str(model), model.read_text())]
    check_source(str(user), user.read_text())
    after = [(f.code, f.line) for f in check_source(str(model), model.read_text())]
    assert alone == after and ("ZG301", 12) in alone
