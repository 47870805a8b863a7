"""A plain class's attributes reached by names it lists (`self.save_attr_names = {"act", "cri"}`, `saved = ("model",
"target")`) hold the models its own constructor built there (`self.act = Actor(d)`): `getattr(self, n)` over the
names is each such model, which the holder's seeds bind as `self.<name>` (`provenance`, the `getattr` of a walked
name). Pickling, saving or loading them is ZG108. Look-alike: names that list only an optimizer and a list."""

from __future__ import annotations

from tests.model.package_check import found_in_package

NETS = """
    from torch import nn


    class Actor(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc = nn.Linear(d, 4096)

        def forward(self, x):
            return self.fc(x)
"""

AGENT = """
    import os
    import torch
    from .nets import Actor


    class AgentBase:
        def __init__(self, d):
            self.act = Actor(d)
            self.cri = Actor(d)
            self.act_optimizer = torch.optim.Adam(self.act.parameters())
            self.save_attr_names = {"act", "cri", "act_optimizer"}

        def save_or_load(self, cwd, if_save):
            for attr_name in self.save_attr_names:
                path = f"{cwd}/{attr_name}.pth"
                if if_save:
                    torch.save(getattr(self, attr_name), path)
                elif os.path.isfile(path):
                    setattr(self, attr_name, torch.load(path))


    class Saver:
        saved = ("model", "target")

        def __init__(self, d):
            self.model = Actor(d)
            self.target = Actor(d)

        def save(self, d):
            for name in self.saved:
                torch.save(getattr(self, name).state_dict(), os.path.join(d, name))
"""

SAFE = """
    import os
    import torch
    from .nets import Actor


    class OptimSaver:
        def __init__(self, d):
            self.model = Actor(d)
            self.optimizer = torch.optim.Adam(self.model.parameters())
            self.buffer = []
            self.names = ("optimizer", "buffer")

        def save(self, d):
            for name in self.names:
                torch.save(getattr(self, name), os.path.join(d, name))
"""


def test_listed_attributes_built_by_the_constructor_are_models(tmp_path):
    found = found_in_package(tmp_path, {"nets.py": NETS, "agent.py": AGENT}, "agent.py", prefix="ZG108")
    assert ("ZG108", 18) in found  # `torch.save(getattr(self, attr_name), path)`: the actor pickled whole
    assert ("ZG108", 32) in found  # `getattr(self, name).state_dict()`


def test_listed_attributes_that_are_no_models_stay_clean(tmp_path):
    assert found_in_package(tmp_path, {"nets.py": NETS, "safe.py": SAFE}, "safe.py", prefix="ZG1") == []
