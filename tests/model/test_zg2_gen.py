"""ZG2 facts found missing on unseen code (blind12 and probes of the same facts in other shapes): a single large layer
skipped on an optional input, a presence test beside a test of the layer's own presence, ..."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

from package_check import found_in_package

HEAD = """
import random
import numpy as np
import torch
from torch import nn
"""


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", HEAD + textwrap.dedent(source))]


# A single layer run on an optional input: a rank called without it skips the layer's gather, unless ZeRO-3 keeps the
# layer gathered anyway (a weight below the persistence threshold gathers nothing).
OPTIONAL_LAYER = """
class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.cond = {layer}

    def forward(self, x, context=None):
        x = self.proj(x)
        if context is not None:
            x = x + self.cond(context)
        return x
"""


def test_a_large_single_layer_run_on_an_optional_input_is_skipped_per_rank():
    assert codes(OPTIONAL_LAYER.format(layer="nn.Linear(1024, 1024)")) == ["ZG205"]
    assert codes(OPTIONAL_LAYER.format(layer="nn.Linear(dim, dim)")) == ["ZG205"]


def test_a_layer_kept_gathered_by_its_size_gathers_nothing_when_skipped():
    assert codes(OPTIONAL_LAYER.format(layer="nn.Linear(16, 16)")) == []


def test_a_layer_built_under_a_setting_and_gated_on_the_input_alone_still_skips_per_rank():
    # (a caller may pass the input on some ranks only, whatever built the layer: espnet's HiFi-GAN `global_conv`)
    source = OPTIONAL_LAYER.format(layer="nn.Linear(dim, dim) if dim > 8 else None")
    assert codes(source) == ["ZG205"]


def test_a_layer_built_under_a_setting_whose_input_the_setting_asserts_is_the_configuration():
    source = OPTIONAL_LAYER.format(layer="nn.Linear(dim, dim) if dim > 8 else None").replace(
        "        x = self.proj(x)\n",
        "        x = self.proj(x)\n        if self.cond is not None:\n            assert context is not None\n"
        "        else:\n            assert context is None\n")
    assert codes(source) == []


# `self.emb is not None and attr is not None`: the layer's presence (the configuration) beside the input's.
STATE_EMBEDDING = """
class Net(nn.Module):
    def __init__(self, n_states, dim):
        super().__init__()
        self.atoms = nn.Embedding(100, dim)
        self.state_embedding = nn.Embedding(n_states, dim) if n_states else None

    def forward(self, g, state_attr=None):
        h = self.atoms(g)
        if self.state_embedding is not None and {test}:
            state_attr = self.state_embedding(state_attr)
        else:
            state_attr = None
        return h, state_attr
"""


def test_an_optional_input_tested_beside_the_layers_presence_gates_the_layer():
    assert codes(STATE_EMBEDDING.format(test="state_attr is not None")) == ["ZG205"]


def test_a_test_of_the_configuration_alone_gates_nothing_per_rank():
    assert codes(STATE_EMBEDDING.format(test="self.training")) == []


# The main process's rank read from a settings mapping (`opt["rank"]`, `cfg.get("rank")`) or a plain `rank` attribute
# compared with 0; a trainer's method gated on it runs the model through its helpers on rank 0 only.
RANK_KEY = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self, opt):
        self.opt = opt
        self.net_g = Net()

    def validation(self, loader):
        if {test}:
            self.nondist_validation(loader)

    def nondist_validation(self, loader):
        for batch in loader:
            self.test(batch)

    def test(self, batch):
        with torch.no_grad():
            self.output = self.net_g(batch)
"""


def test_the_rank_kept_in_a_settings_mapping_gates_the_trainers_model_calls():
    assert codes(RANK_KEY.format(test='self.opt["rank"] == 0')) == ["ZG201"]
    assert codes(RANK_KEY.format(test='self.opt.get("rank", 0) == 0')) == ["ZG201"]
    assert codes(RANK_KEY.format(test="self.opt.rank != 0")) == ["ZG201"]


def test_a_matrix_rank_setting_tested_for_being_set_is_no_rank():
    assert codes(RANK_KEY.format(test='self.opt["rank"] > 0')) == []
    assert codes(RANK_KEY.format(test='self.opt["lora_rank"] == 0')) == []


# A random decision made in a helper method (`self._should_explore()`), of a module or of a plain agent.
EXPLORE = """
class Agent:
    def __init__(self, q_net: nn.Module, n_actions, exploration=0.1):
        self.q = q_net
        self.n_actions = n_actions
        self.exploration = exploration

    def choose(self, state):
        if self._should_explore():
            return np.random.randint(0, self.n_actions)
        return torch.argmax(self.q(state)).item()

    def _should_explore(self):
        {body}

    def _draw(self):
        return np.random.rand() < self.exploration
"""


def test_a_random_decision_returned_by_a_helper_method_decides_per_rank():
    assert codes(EXPLORE.format(body="return np.random.rand() < self.exploration")) == ["ZG202"]
    assert codes(EXPLORE.format(body="return self.n_actions < 2 or random.random() < self.exploration")) == ["ZG202"]
    assert codes(EXPLORE.format(body="return self._draw()")) == ["ZG202"]


def test_a_helper_returning_a_random_value_or_a_fixed_decision_decides_nothing():
    assert codes(EXPLORE.format(body="return torch.rand(()).item() * 0 > 1 if False else self.n_actions > 4")) == []
    assert codes(EXPLORE.format(body="noise = np.random.rand()\n        return self.n_actions > 4")) == []


# An early exit on an extent of the input: this rank's short or empty input skips the layers after it.
EXTENT = """
class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, tokens):
        {test}
        ids = torch.tensor([0, *tokens])
        return self.out(self.proj(x)), ids
"""


def test_an_early_return_on_an_extent_of_the_input_skips_the_layers_after_it():
    assert codes(EXTENT.format(test="if x.shape[1] < 4:\n            return x, None")) == ["ZG204"]
    assert codes(EXTENT.format(test="if x.size(-1) < 8:\n            return x, None")) == ["ZG204"]
    assert codes(EXTENT.format(test="t = x.shape[1]\n        if t < 4:\n            return x, None")) == ["ZG204"]
    assert codes(EXTENT.format(test="if len(tokens) == 0:\n            return x, None")) == ["ZG204"]


def test_a_branch_on_an_extent_and_a_one_step_test_are_no_exit():
    # (which branch runs on a length is the same on every rank in lockstep decoding; a one-token step likewise)
    branch = "if x.shape[1] > 4:\n            x = self.proj(x)"
    assert codes(EXTENT.format(test=branch)) == []
    assert codes(EXTENT.format(test="if x.shape[1] == 1:\n            return x, None")) == []
    # (the length of a list of feature maps or modules, not of values, is fixed by the code)
    assert codes(EXTENT.format(test="if len(tokens) == 0:\n            return x, None").replace("[0, *tokens]", "0")) == []


def test_an_early_return_that_runs_the_same_layer_skips_nothing():
    source = EXTENT.format(test="if x.shape[1] < 4:\n            return self.out(self.proj(x)), None")
    assert codes(source) == []


# A single layer on an optional input whose absence a cache stands in for (a decoding step, the same on every rank).
CACHED = """
class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)

    def forward(self, x, states=None, cache=None, cached=False):
        q = self.q_proj(x)
        {body}
        return q @ k.transpose(-1, -2)
"""


def test_a_layer_whose_output_a_cache_stands_in_for_is_the_callers_step():
    body = "if states is not None:\n            k = self.k_proj(states)\n        else:\n            k = cache[0]"
    assert codes(CACHED.format(body=body)) == []
    cleared = "if cached:\n            states = None\n        k = q\n        if states is not None:\n            k = self.k_proj(states)"
    assert codes(CACHED.format(body=cleared)) == []


def test_a_layer_skipped_on_an_absent_input_with_nothing_in_its_place_diverges():
    body = "k = q\n        if states is not None:\n            k = self.k_proj(states)"
    assert codes(CACHED.format(body=body)) == ["ZG205"]


# A plain `rank` argument (`mp.spawn`'s first argument) compared with 0.
SPAWNED = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


def evaluate(model: Net, rank, batch):
    if {test}:
        return model(batch)
"""


def test_a_plain_rank_argument_compared_with_the_main_process_gates_the_model():
    assert codes(SPAWNED.format(test="rank == 0")) == ["ZG201"]


def test_a_plain_rank_compared_otherwise_is_a_setting():
    assert codes(SPAWNED.format(test="rank > 8")) == []


# A trainer's stop flag set from a validation score that a method gathered across ranks (`dist.all_gather`).
GATHERED = """
import torch.distributed as dist


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self, model: Net):
        self.model = model
        self.best = 0.0

    def fit(self, loader):
        for epoch in range(10):
            for batch in loader:
                self.model(batch)
            score = self._valid(loader)
            if score < self.best:
                break
            self.best = score

    def _valid(self, loader):
        result = self.evaluate(loader)
        return float(result)

    def evaluate(self, loader):
        total = sum(self.model(b).sum() for b in loader)
        {reduce}
        return total

    def _reduce(self, t):
        dist.all_reduce(t)
        return t
"""


def test_a_stop_flag_on_a_score_gathered_across_ranks_is_the_same_everywhere():
    assert codes(GATHERED.format(reduce="total = self._reduce(total)")) == []


def test_a_stop_flag_on_this_ranks_own_score_diverges():
    assert codes(GATHERED.format(reduce="total = total / 2")) == ["ZG204"]


# A plain object a module builds around its own network (`ValueAgent(self.net)`), run in the module's own loop.
AGENT = """
class Agent:
    def __init__(self, net: nn.Module):
        self.net = net

    def __call__(self, state):
        return self.net(state).argmax(-1)


class DQN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4096, 4096)
        self.agent = Agent(self.net)

    def run_episode(self, env):
        done = False
        state = env.reset()
        while not done:
            action = self.agent(state)
            state, reward, done, _ = env.step(action)
"""


def test_a_plain_object_the_module_built_around_its_network_runs_it():
    assert "ZG204" in codes(AGENT)


# A presence helper of another file of the package (`from .helpers import given`), read there.
HELPERS = """
def given(value):
    return value is not None


def positive(value):
    return value > 0
"""

PRESENCE_MODEL = """
from torch import nn
from .helpers import given, positive


class Tower(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x):
        return self.b(self.a(x))


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.text = nn.Linear(d, d)
        self.image = Tower(d)

    def forward(self, ids, images=None):
        h = self.text(ids)
        if {test}:
            h = h + self.image(images)
        return h
"""


def _package_codes(tmp_path, test: str) -> list[str]:
    files = {"helpers.py": HELPERS, "model.py": PRESENCE_MODEL.format(test=test)}
    return [code for code, _ in found_in_package(tmp_path, files, "model.py", name="proj")]


def test_a_presence_helper_of_another_file_tests_an_optional_input(tmp_path):
    assert _package_codes(tmp_path, "given(images)") == ["ZG205"]


def test_another_helper_of_another_file_is_no_presence_test(tmp_path):
    assert _package_codes(tmp_path, "positive(ids.shape[0])") == []


# A method of a plain object built in place (`Evaluator(loader).run(model)`) reaches the model it is handed.
IN_PLACE = """
class Evaluator:
    def __init__(self, loader):
        self.loader = loader

    def run(self, model):
        return [self._step(model, b) for b in self.loader]

    def _step(self, model, batch):
        return model(batch)

    def {other}(self, model):
        return len(self.loader)


def main(model, loader, rank):
    if rank == 0:
        Evaluator(loader).{method}(model)
"""


def test_a_method_of_an_object_built_in_place_reaches_the_model_it_is_handed():
    assert codes(IN_PLACE.format(method="run", other="size")) == ["ZG201"]


def test_a_method_of_an_object_built_in_place_that_runs_nothing_is_no_run():
    assert codes(IN_PLACE.format(method="size", other="size")) == []


# A cache mapping keyed by the module's own layer (`self.key not in kv_cache`) fills in step order; a batch mapping
# keyed by a configured field name may lack the field on some ranks.
KEYED = """
class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.field = "image"

    def forward(self, x, cache):
        q = self.query(x)
        if {key} not in cache:
            k = self.key(x)
        else:
            k = cache[{key}]
        return q @ k
"""


def test_a_cache_keyed_by_the_modules_own_layer_is_filled_in_step_order():
    assert codes(KEYED.format(key="self.key")) == []


def test_a_mapping_keyed_by_a_configured_field_is_this_ranks_batch():
    assert codes(KEYED.format(key="self.field")) == ["ZG203"]


# A random draw choosing which constant a helper is handed, the helper choosing its submodules by that constant.
CONTEXTS = """
class Line(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.user = nn.Embedding(n, d)
        self.item = nn.Embedding(n, d)
        self.user_context = nn.Embedding(n, d)
        self.item_context = nn.Embedding(n, d)

    def context_forward(self, h, t, field):
        if field == "uu":
            return self.user(h) * self.item_context(t)
        return self.item(h) * self.user_context(t)

    def forward(self, u, i):
        if random.random() < 0.5:
            return self.context_forward(u, i, {first})
        else:
            return self.context_forward(i, u, {second})
"""


def test_a_random_draw_choosing_the_constant_a_helper_picks_its_layers_by_diverges():
    assert codes(CONTEXTS.format(first='"uu"', second='"ii"')) == ["ZG202"]


def test_a_random_draw_choosing_only_the_arguments_of_the_same_helper_runs_the_same_layers():
    assert codes(CONTEXTS.format(first='"uu"', second='"uu"')) == []


# A random decision made in a function of another file of the package (`from .utils import explore`).
UTILS = """
import random


def explore(eps):
    return random.random() < eps


def scaled(eps):
    return eps * 2
"""

POLICY = """
import random
from torch import nn
from .utils import explore, scaled


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)


class Policy:
    def __init__(self, net: QNet, eps):
        self.net = net
        self.eps = eps

    def act(self, s):
        if {test}:
            return random.randint(0, 3)
        return self.net(s).argmax()
"""


def _policy_codes(tmp_path, test: str) -> list[str]:
    pkg = tmp_path / "rl"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(textwrap.dedent(UTILS))
    path = pkg / "agent.py"
    path.write_text(textwrap.dedent(POLICY.format(test=test)))
    return [f.code for f in check_source(str(path), path.read_text())]


def test_a_random_decision_of_a_function_of_another_file_decides_per_rank(tmp_path):
    assert _policy_codes(tmp_path, "explore(self.eps)") == ["ZG202"]


def test_another_function_of_another_file_draws_nothing(tmp_path):
    assert _policy_codes(tmp_path, "scaled(self.eps) > 1") == []
