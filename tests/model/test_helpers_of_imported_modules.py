"""A constructor handing `self` to an initialiser of another file, called through the module's name.

SLM-Lab's nets call `net_util.init_tails(self, actor_std, critic_std)` after building their output tails; the
helper takes the tails out of a list of them (`tails = list(net.tails)`, `actor_tail = tails[0]`) and re-initialises
each Linear of a walk of one. Under `zero.Init` the tails are partitioned once built, so the writes are lost: reported
at the call, as for a helper imported by its own name.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

NET_UTIL = """
from torch import nn


def init_tails(net, actor_init_std=None):
    tails = list(net.tails)
    actor_tail = tails[0]
    if actor_init_std is not None:
        for module in actor_tail.modules():
            if isinstance(module, nn.Linear):
                nn.init.orthogonal_(module.weight, actor_init_std)
"""

MLP = """
from torch import nn

from pkg import net_util


class MLPNet(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.tails = nn.ModuleList([nn.Linear(d, 2), nn.Linear(d, 1)])
        net_util.init_tails(self, 0.01)

    def forward(self, x):
        return [tail(x) for tail in self.tails]
"""


def test_an_initialiser_called_through_its_modules_name(tmp_path):
    files = {"net_util.py": NET_UTIL, "mlp.py": MLP}
    assert found_in_package(tmp_path, files, "mlp.py", prefix="ZG1") == [("ZG103", 11)]
