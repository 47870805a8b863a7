"""A route taken from a field of the batch (`features.get("task", None)`, also through what a call handed it returns:
`route = self._resolve_route(task=task)`, `taint._field_locals`) that picks a container item whose modules a loop
runs (`for module in self.sub_modules[route]: x = module(x)`, `divergence._picked_calls`) makes ranks with other
batches run other modules: ZG203. Beside look-alikes: a configured route with the field only logged, every route
run and the field picking an output."""

from __future__ import annotations

from package_check import found_in_package

ROUTED = """
from torch import nn


class Router(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.default_route = "query"
        self.sub_modules = nn.ModuleDict({
            "query": nn.ModuleList([nn.Linear(d, d), nn.Linear(d, d)]),
            "document": nn.ModuleList([nn.Linear(d, d)]),
        })

    def _resolve_route(self, task=None):
        if task is None:
            return self.default_route
        return task

    def forward(self, features: dict, task: str | None = None):
        if task is None:
            task = features.get("task", None)
        route = self._resolve_route(task=task)
        x = features["x"]
        for module in self.sub_modules[route]:
            x = module(x)
        return x
"""

CONFIGURED = """
from torch import nn


class Router(nn.Module):
    def __init__(self, d=512, route="query"):
        super().__init__()
        self.route = route
        self.sub_modules = nn.ModuleDict({
            "query": nn.ModuleList([nn.Linear(d, d), nn.Linear(d, d)]),
            "document": nn.ModuleList([nn.Linear(d, d)]),
        })

    def _resolve_route(self):
        return self.route

    def forward(self, features: dict):
        task = features.get("task", None)
        print(task)
        route = self._resolve_route()
        x = features["x"]
        for module in self.sub_modules[route]:
            x = module(x)
        return x
"""

ALL_RUN = """
from torch import nn


class Router(nn.Module):
    def __init__(self, d=512):
        super().__init__()
        self.sub_modules = nn.ModuleDict({
            "query": nn.ModuleList([nn.Linear(d, d), nn.Linear(d, d)]),
            "document": nn.ModuleList([nn.Linear(d, d)]),
        })

    def forward(self, features: dict):
        task = features.get("task", None)
        outs = {}
        for name, mods in self.sub_modules.items():
            x = features["x"]
            for m in mods:
                x = m(x)
            outs[name] = x
        return outs[task]
"""


def test_route_from_a_batch_field_picks_the_modules_run(tmp_path):
    assert ("ZG203", 24) in found_in_package(tmp_path, {"router.py": ROUTED}, "router.py", prefix="ZG2")


def test_configured_route_beside_a_logged_field(tmp_path):
    assert found_in_package(tmp_path, {"router.py": CONFIGURED}, "router.py", prefix="ZG2") == []


def test_every_route_runs_and_the_field_picks_an_output(tmp_path):
    assert found_in_package(tmp_path, {"router.py": ALL_RUN}, "router.py", prefix="ZG2") == []
