"""Modules reached through what a method builds or is given, rather than through `self`'s members.

* A container built into a local in `__init__` (`fc = nn.Sequential(...)`) is partitioned under zero.Init when its
  constructor returns, and so is each item of it: initialising `fc[2].bias`, or `final.bias` for `final = fc[2]`,
  writes a placeholder (ZG103).
* A `ParameterDict` of modules (`nn.ParameterDict({v: nn.Linear(2, 1) for v in names})`) registers them as
  submodules: initialising them after construction is ZG103, and calling one is a module call, not a read of a
  parameter the dict owns.
* A local holding the keys of a field of the batch (`names = tuple(batch.surf_vars.keys())`, grown by `+=`), walked
  to pick a module of `self` by each key, runs the modules this rank's batch names (ZG203).
* A model built by a builder zgen cannot read (`architecture.get_architecture(cfg)`, an entry of a registry of
  modules), used as a model, then loaded (`model.load_state_dict(state)`): under zero.Init the load copies into
  placeholders (ZG108). An optimizer loaded the same way is no model.
* Pieces of a tensor zipped with a collection of the model's own modules (`zip(x.split(self.dims), self.to_features)`)
  are one per module on every rank; pieces of this rank's length (`x.split(4)`) are not. A random tensor handed to
  the forward counts no loop: `rearrange(noised, ...)` is no `range(...)`.
* A local bound to a part of `self` (`m = self.model[-1]`) reaches the containers below it (`for mi in m.m`), and a
  local bound to a view of a child's parameter (`b = mi.bias.view(na, -1)`) writes it (`b.data[:, 4] += d`).
"""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source))]


def test_an_item_of_a_container_built_into_a_local_is_initialised_after_it_was_partitioned():
    assert codes("""
        from torch import nn


        class Heads(nn.Module):
            def __init__(self, names):
                super().__init__()
                for name in names:
                    fc = nn.Sequential(nn.Conv2d(8, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 1))
                    final = fc[2]
                    nn.init.constant_(final.bias, -2.19)
                    nn.init.zeros_(fc[0].bias)
                    setattr(self, name, fc)

            def forward(self, x):
                return x
    """) == [("ZG103", 11), ("ZG103", 12)]


def test_a_type_read_of_an_item_of_a_local_container_is_no_write():
    assert codes("""
        from torch import nn


        class Heads(nn.Module):
            def __init__(self):
                super().__init__()
                fc = nn.Sequential(nn.Conv2d(8, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 1))
                final = fc[2]
                self.dtype_name = str(final.bias.dtype)
                self.fc = fc

            def forward(self, x):
                return self.fc(x)
    """) == []


def test_modules_held_by_a_parameter_dict_are_initialised_after_they_were_partitioned():
    assert codes("""
        import torch
        from torch import nn


        class Combine(nn.Module):
            def __init__(self, names):
                super().__init__()
                self.combiner = torch.nn.ParameterDict({v: nn.Linear(2, 1) for v in names})
                for layer in self.combiner.values():
                    nn.init.constant_(layer.weight, 0.5)

            def forward(self, x, name):
                return self.combiner[name](x)
    """) == [("ZG103", 11)]


def test_calling_a_module_a_parameter_dict_holds_is_no_parameter_read():
    assert codes("""
        import torch
        from torch import nn


        class Decoder(nn.Module):
            def __init__(self, names):
                super().__init__()
                self.heads = nn.ParameterDict({n: nn.Linear(64, 4096) for n in names})
                self.names = tuple(names)

            def forward(self, x):
                return torch.stack([self.heads[n](x) for n in self.names], dim=-1)
    """) == []


BATCH_KEYS = """
    import torch
    from torch import nn


    class Decoder(nn.Module):
        def __init__(self, names):
            super().__init__()
            self.heads = nn.ModuleDict({{n: nn.Linear(64, 4096) for n in names}})
            self.mod = set(names[:1])

        def forward(self, x, batch):
            {names}
            names += tuple(f"{{n}}_mod" for n in names if n in self.mod)
            return torch.stack([self.heads[n](x) for n in names], dim=-1)
"""


def test_a_local_holding_the_keys_of_a_batch_field_picks_the_modules_that_run():
    found = codes(BATCH_KEYS.format(names="names = tuple(batch.surf_vars.keys())"))
    assert [code for code, _ in found] == ["ZG203"]


def test_a_local_holding_the_configured_names_picks_the_same_modules_everywhere():
    assert codes(BATCH_KEYS.format(names="names = tuple(sorted(self.heads.keys()))")) == []


LOADED = """
    import torch
    from . import zoo


    def load(path, config, registry):
        {built}
        state = torch.load(path)
        {loaded}.load_state_dict(state)
        return {loaded}
"""


def test_a_model_from_a_builder_zgen_cannot_read_is_loaded_after_it_was_partitioned():
    built = "architecture = registry[config.name]\n        model = architecture.get_architecture(config)"
    source = LOADED.format(built=built, loaded="model")
    assert [code for code, _ in codes(source)] == ["ZG108"]
    source = LOADED.format(built="model = zoo.build_model(config)", loaded="model")
    assert [code for code, _ in codes(source)] == ["ZG108"]


def test_an_optimizer_from_a_builder_is_no_model():
    source = LOADED.format(built="optimizer = zoo.build_optimizer(config)", loaded="optimizer")
    assert codes(source) == []
    source = LOADED.format(built="schedule = zoo.get_schedule(config)", loaded="schedule")
    assert codes(source) == []


PIECES = """
    import random

    import torch
    from torch import nn


    def rearrange(x, pattern):
        return x


    class Bands(nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.dims = dims
            self.to_features = nn.ModuleList([nn.Linear(d, 8) for d in dims])
            self.net = nn.Linear(8, 8)

        def forward(self, x, noised=None, steps=1):
            h = rearrange(noised, "b t -> b 1 t")
            {body}

        def sample(self, x):
            return self.forward(x, noised=torch.randn(x.shape[0], 4), steps={steps})
"""


def test_pieces_paired_with_the_models_own_modules_are_as_many_as_the_modules():
    body = "return [f(p) for p, f in zip(x.split(self.dims, dim=-1), self.to_features)]"
    assert codes(PIECES.replace("{body}", body).replace("{steps}", "1")) == []


def test_pieces_of_this_ranks_length_each_run_the_module():
    body = "return [self.net(p) for p in x.split(4, dim=1)]"
    assert [code for code, _ in codes(PIECES.replace("{body}", body).replace("{steps}", "1"))] == ["ZG204"]


def test_a_random_tensor_handed_to_the_forward_counts_no_loop_that_rearranges_it():
    body = "return [self.net(x) for _ in range(steps)]"
    assert codes(PIECES.replace("{body}", body).replace("{steps}", "1")) == []


def test_a_random_step_count_handed_to_the_forward_counts_its_loop():
    body = "return [self.net(x) for _ in range(steps)]"
    found = codes(PIECES.replace("{body}", body).replace("{steps}", "random.randint(1, 3)"))
    assert [code for code, _ in found] == ["ZG202"]


HEADS = """
    import math

    import torch
    from torch import nn


    class Detect(nn.Module):
        def __init__(self, ch=(256, 512)):
            super().__init__()
            self.na = 3
            self.m = nn.ModuleList(nn.Conv2d(x, 255, 1) for x in ch)
            self.register_buffer("stride", torch.tensor([8.0, 16.0]))

        def forward(self, x):
            return [m(xi) for m, xi in zip(self.m, x)]


    class DetectionModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = nn.Sequential(nn.Conv2d(3, 256, 3), Detect())
            self._initialize_biases()

        def _initialize_biases(self):
            m = self.model[-1]
            for mi, s in zip(m.m, m.stride):
                b = mi.bias.view(m.na, -1)
                {use}

        def forward(self, x):
            return self.model(x)
"""


def test_a_view_of_a_childs_bias_written_through_a_part_of_self_held_in_a_local():
    found = codes(HEADS.replace("{use}", "b.data[:, 4] += math.log(8 / (640 / s) ** 2)"))
    assert ("ZG103", 29) in found


def test_a_view_of_a_childs_bias_only_measured_writes_nothing():
    found = codes(HEADS.replace("{use}", "print(b.shape[0] == m.na)"))
    assert [code for code, _ in found if code in ("ZG101", "ZG103")] == []
