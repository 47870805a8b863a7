"""What a batch says of itself decides which layers run (issue 20, probes of the issue's ZG2 kinds).

* A batch a loader handed this rank that its collate dropped (`if batch is None: continue`) or that is short (`if
  len(batch["input_ids"]) < batch_size: continue`) skips the model on this rank alone (ZG203). Look-alikes: a
  setting tested the same way.
* A graph batch's own counts (`g.num_edges() > 0`) gate a layer (ZG203); a count the module keeps does not.
* A field of one sample of a list the call was given (`"prompt" in metadata[0]`, read as `metadata[0]["prompt"]`)
  gates the conditioner (ZG203); a key of the module's own settings does not.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

LOOPS = """
from torch import nn


def train(model: nn.Module, loader, optimizer, batch_size, configs):
    for batch in loader:
        if batch is None:
            continue
        if len(batch["input_ids"]) < batch_size:
            continue
        model(batch["input_ids"]).mean().backward()
        optimizer.step()
    for cfg in configs:
        if cfg is None:
            continue
        if len(cfg["layers"]) < batch_size:
            continue
        model(cfg["x"]).mean().backward()
"""


def test_a_batch_the_collate_dropped_or_cut_short_skips_the_model(tmp_path):
    found = found_in_package(tmp_path, {"loop.py": LOOPS}, "loop.py", prefix="ZG2")
    assert found == [("ZG203", 7), ("ZG203", 9)]


GRAPHS = """
from torch import nn


class GNN(nn.Module):
    def __init__(self, num_layers):
        super().__init__()
        self.num_layers = num_layers
        self.conv = nn.Linear(8, 8)
        self.deep = nn.Linear(8, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, g, h):
        if g.num_edges() > 0:
            h = self.conv(h)
        if self.num_layers > 1:
            h = self.deep(h)
        return self.out(h)
"""


def test_a_graph_batch_count_gates_a_layer(tmp_path):
    found = found_in_package(tmp_path, {"gnn.py": GRAPHS}, "gnn.py", prefix="ZG2")
    assert found == [("ZG203", 14)]


META = """
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.conditioner = nn.Embedding(10, 8)
        self.extra = nn.Embedding(10, 8)
        self.model = nn.Linear(8, 8)

    def forward(self, x, metadata):
        if "prompt" in metadata[0]:
            x = x + self.conditioner(metadata[0]["prompt"])
        if "extra" in self.config:
            x = x + self.extra(self.config["extra"])
        return self.model(x)
"""


def test_a_field_of_one_sample_gates_the_conditioner(tmp_path):
    found = found_in_package(tmp_path, {"wrapper.py": META}, "wrapper.py", prefix="ZG2")
    assert found == [("ZG203", 14)]
