"""A name a forward binds to a dict, list or set display (`info = {}` ... `info.update({...})`) is no module: its
method calls are no calls of another module's method, so a module method of that name (`update`, which mixes a
target network's parameters) stays a method the training loop runs on the built model
(`ModelIndex.forward_text`, `ClassInfo.entry_methods`). Look-alike: a child's `update` called from a forward
through a local bound to the child stays part of that forward."""

from __future__ import annotations

from zgen.model.program.index import ModelIndex
from zgen.model.program.project import project
from zgen.model.program.skeleton import build_skeleton

from tests.model.package_check import write_package

POLICY = """
    from copy import deepcopy
    import torch
    from torch import nn


    def update_ema(ema_net, net, alpha):
        for p_ema, p in zip(ema_net.parameters(), net.parameters()):
            p_ema.data.mul_(alpha).add_(p.data, alpha=1 - alpha)


    class Net(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc = nn.Linear(d, 4096)

        def forward(self, x):
            info = {}
            out = self.fc(x)
            info.update({"mean": out.mean().item()})
            return out, info


    class Policy(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.model = Net(d)
            self.model_target = deepcopy(self.model)

        def forward(self, x):
            return self.model(x)

        def update(self):
            update_ema(self.model_target, self.model, 0.99)
"""

QUANT = """
    import torch
    from torch import nn


    class Codebook(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.embed = nn.Parameter(torch.zeros(n, 4096))

        def update(self, x):
            self.embed.data.mul_(0.9).add_(x.mean(0), alpha=0.1)

        def forward(self, x):
            return x @ self.embed.t()


    class Quantizer(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.codebook = Codebook(n)

        def forward(self, x):
            stats = []
            codebook = self.codebook
            codebook.update(x)
            return self.codebook(x), stats
"""


def _index(path):
    source = path.read_text()
    files = project()
    module, is_package = files.begin(str(path))
    return ModelIndex(str(path), source, build_skeleton(source), files, module, is_package)


def test_a_dict_updated_in_forward_leaves_the_module_update_an_entry(tmp_path):
    index = _index(write_package(tmp_path, {"policy.py": POLICY}) / "policy.py")
    assert "update" in [m.name for m in index.classes["Policy"].entry_methods]


def test_a_child_update_called_in_forward_is_no_entry(tmp_path):
    index = _index(write_package(tmp_path, {"quant.py": QUANT}) / "quant.py")
    assert "update" not in [m.name for m in index.classes["Codebook"].entry_methods]
