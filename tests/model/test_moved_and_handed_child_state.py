"""A child's state saved through a move, or through a helper method the class hands the child to.

pix2pixHD's models save each network with `torch.save(network.cpu().state_dict(), path)` in a helper
`save_network(self, network, label)` that `save()` calls with `self.netG`. Run on the built model, the child's
parameters are placeholders however it is reached: `.cpu()` hands back the same module, and the helper's
parameter is the child the class handed it. A helper handed something else is not told.
"""

from __future__ import annotations

from zgen.model import check_source

SAVE = """
import torch
from torch import nn


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG = Gen()
        self.history = {}

    def forward(self, x):
        return self.netG(x)

    def save_network(self, network, path):
        torch.save(network.cpu().state_dict(), path)

    def save_record(self, record, path):
        torch.save(record.state_dict(), path)

    def save(self, path):
        self.save_network(self.netG, path)
        self.save_record(self.history, path)

    def export(self, path):
        torch.save(self.netG.cpu().state_dict(), path)
"""


def test_a_childs_state_read_through_a_move_or_a_helper():
    found = [(f.code, f.line) for f in check_source("model.py", SAVE)]
    assert found == [("ZG108", 25), ("ZG108", 35)]
    messages = [f.message for f in check_source("model.py", SAVE)]
    assert "`network`, a child of the module handed to it" in messages[0] and "`self.netG`" in messages[1]
