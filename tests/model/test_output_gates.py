"""Per-rank values made by what the model returned or by a model handed in as a function (issue 20, h-qzg2).

* A submodule's output read as a value (`if self.router(x).max() > t:`, `o.argmax(-1)[0] == 0`, `while not
  self.halt(h).all():`) decides whether another child runs: this rank's data. Safe: the value all-reduced first,
  a test of the output's shape, presence or length, a test that decides no submodule call.
* An object handed a submodule's output (`self.env.step(action)`) answers per rank: its result tested decides
  like the output. Safe: the answer all-reduced first; a list the output was appended to.
* A child run through a `functools.partial` or a lambda is gated like the child itself.
* A callable parameter called on the function's values (`step(last, state)` in a beam search, `policy(td)` in a
  rollout) runs the model: a loop that leaves on what it returned ends per rank. Safe: a callable called only with
  constants, a parameter used as a number, a loop with a fixed trip count.
* A helper method calling a child through a local it was bound to (`net = self.agent` ... `net(x)`) runs it.
  A progress bar shown on rank 0 only (`trange(n, disable=not is_main)`) walks as many items on every rank.
"""

from __future__ import annotations

import textwrap

import pytest

from zgen.model import check_source

HEADER = """
import functools

import torch
import torch.distributed as dist
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4096, 4096)

    def forward(self, x):
        return self.fc(x)
"""

NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = Block()
        self.halt = Block()
        self.extra = Block()
        self.env = None

    def forward(self, h):
{body}
"""

HAZARDS = {
    "a router's maximum decides whether a child runs": """
        if self.router(h).max() > 0.5:
            h = self.extra(h)
        return h
        """,
    "a child's argmax, kept in a local, picks the branch": """
        o = self.router(h)
        first = o.argmax(-1)[0] == 0
        h = self.extra(h) if first else h
        return h
        """,
    "a halting score read with item() gates a child": """
        score = self.halt(h).mean().item()
        if score < 0.1:
            return h
        return self.extra(h)
        """,
    "a child's confidence sets a trip count": """
        steps = self.halt(h).sum().item()
        for _ in range(int(steps)):
            h = self.extra(h)
        return h
        """,
    "an environment handed the router's action says whether a child runs": """
        done = self.env.step(self.router(h).argmax(-1))
        if done:
            h = self.extra(h)
        return h
        """,
    "a child run through a partial, gated by a router's maximum": """
        run_extra = functools.partial(self.extra)
        if self.router(h).max() > 0.5:
            h = run_extra(h)
        return h
        """,
    "a child run through a lambda in a loop that leaves on a random draw": """
        step = lambda a: self.extra(a)
        for _ in range(4):
            h = step(h)
            if torch.rand(()) < 0.5:
                break
        return h
        """,
}

SAFE = {
    "the router's maximum all-reduced first": """
        top = self.router(h).max()
        dist.all_reduce(top)
        if top > 0.5:
            h = self.extra(h)
        return h
        """,
    "a test of the output's shape": """
        o = self.router(h)
        if o.shape[-1] > 8:
            h = self.extra(h)
        return h
        """,
    "a test of the output's presence": """
        o = self.router(h)
        if o is not None:
            h = self.extra(h)
        return h
        """,
    "a test on the output that decides no submodule call": """
        o = self.router(h)
        if o.max() > 0.5:
            o = o * 2
        return self.extra(o)
        """,
    "an environment handed the action, its answer all-reduced first": """
        done = self.env.step(self.router(h).argmax(-1))
        dist.all_reduce(done)
        if done:
            h = self.extra(h)
        return h
        """,
    "a list filled with the router's output, tested for emptiness": """
        outs = []
        outs.append(self.router(h))
        if outs:
            h = self.extra(h)
        return h
        """,
    "how many values a child returned": """
        outs = self.router(h)
        if len(outs) > 1:
            h = self.extra(h)
        return h
        """,
}


def _net(body: str) -> str:
    return HEADER + NET.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))


def _zg2(source: str) -> list:
    return [f for f in check_source("m.py", source) if f.code.startswith("ZG2")]


@pytest.mark.parametrize("body", HAZARDS.values(), ids=HAZARDS.keys())
def test_output_value_gate_found(body: str) -> None:
    assert _zg2(_net(body))


@pytest.mark.parametrize("body", SAFE.values(), ids=SAFE.keys())
def test_output_value_lookalike_clean(body: str) -> None:
    assert _zg2(_net(body)) == []


SEARCH = '''
class BeamSearch:
    def __init__(self, end_index, max_steps=50):
        self.end_index = end_index
        self.max_steps = max_steps

    def search(self, start, state, step):
        predictions = [start]
        for t in range(self.max_steps):
            last = predictions[-1]
            if (last == self.end_index).all():
                break
            log_probs, state = step(last, state, t)
            predictions.append(log_probs.argmax(-1))
        return predictions
'''

ROLLOUT = '''
class Env(nn.Module):
    def rollout(self, td, policy, max_steps=100):
        out = []
        for i in range(max_steps):
            td.update(policy(td))
            td = self.step(td)
            out.append(td)
            done = self.is_done(td)
            if done:
                break
        return out

    def step(self, td):
        return td

    def is_done(self, td):
        return td["done"].any()
'''

SAFE_CALLABLES = {
    "a callable called only with constants": '''
class Schedule:
    def run(self, make_lr, steps):
        lrs = []
        for t in range(steps):
            lr = make_lr(0.1)
            if lr < 1e-4:
                break
            lrs.append(lr)
        return lrs
''',
    "a parameter used as a number, then called": '''
class Sweep:
    def run(self, fn, xs):
        total = fn + 1
        for x in xs:
            if (fn(x) > 0).all():
                break
        return total
''',
    "a callable in a loop of fixed length with no exit": '''
class Search:
    def search(self, start, state, step):
        out = []
        for t in range(8):
            log_probs, state = step(start, state, t)
            out.append(log_probs)
        return out
''',
}


HELPER_ALIAS = '''
class Sampler(nn.Module):
    def __init__(self, policy, agent):
        super().__init__()
        self.policy = policy
        self.agent = agent

    def _act(self, x, off_policy):
        if off_policy:
            net = self.agent
        else:
            net = self.policy
        return net(x)

    def resample(self, x, off_policy, tries=10):
        for _ in range(tries):
            a = self._act(x, off_policy)
            if (a > 0).all():
                break
        return a
'''

PROGRESS = '''
def sample_all(accelerator, sample_fn, n, batch_size):
    out = []
    for i in trange(0, n, batch_size, disable=not accelerator.is_main_process):
        out.append(sample_fn(batch_size))
    return out
'''


def test_helper_running_a_child_through_a_local_alias_found() -> None:
    found = _zg2(HEADER + HELPER_ALIAS)
    assert any(f.code == "ZG204" for f in found), found


def test_progress_bar_shown_on_rank_zero_only_clean() -> None:
    assert _zg2(HEADER + "from tqdm import trange\n" + PROGRESS) == []


def test_beam_search_step_callable_exit_found() -> None:
    found = _zg2(HEADER + SEARCH)
    assert any(f.code == "ZG204" for f in found), found


def test_rollout_policy_callable_exit_found() -> None:
    found = _zg2(HEADER + ROLLOUT)
    assert any(f.code == "ZG204" for f in found), found


@pytest.mark.parametrize("source", SAFE_CALLABLES.values(), ids=SAFE_CALLABLES.keys())
def test_callable_lookalike_clean(source: str) -> None:
    assert _zg2(HEADER + source) == []


HOOK_NONE = '''
import itertools


class Trainer:
    def __init__(self, model: nn.Module, hook):
        self.model = model
        self.hook = hook

    def fit(self, batch):
        for _ in itertools.count():
            sub = self.hook(batch)
            if sub is None:
                break
            self.model(sub).mean().backward()
'''

ARGUMENT_NONE = '''
class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model

    def fit(self, batches, extra=None):
        for batch in batches:
            if extra is None:
                break
            self.model(batch).mean().backward()
'''

AGGREGATOR = '''
def _sum(xs, dim):
    return torch.stack(xs).sum(0)


def _max(xs, dim):
    return torch.stack(xs).max(0)[0]


def get_aggregate_fn(agg):
    if agg == "sum":
        fn = _sum
    else:
        fn = _max
    return fn


class Hetero(nn.Module):
    def __init__(self, mods, aggregate="sum"):
        super().__init__()
        self.mods = nn.ModuleDict(mods)
        if isinstance(aggregate, str):
            self.agg_fn = get_aggregate_fn(aggregate)
        else:
            self.agg_fn = aggregate

    def forward(self, inputs):
        outputs = {k: [] for k in self.mods}
        for k in self.mods:
            outputs[k].append(self.mods[k](inputs))
        rsts = {}
        for k, alist in outputs.items():
            if len(alist) != 0 and (alist[0] > 0).any():
                rsts[k] = self.agg_fn(alist, k)
        return rsts
'''


def test_loop_leaving_when_a_hook_returns_none_found() -> None:
    found = _zg2(HEADER + HOOK_NONE)
    assert any(f.code == "ZG204" for f in found), found


def test_loop_leaving_on_an_argument_left_none_clean() -> None:
    assert _zg2(HEADER + ARGUMENT_NONE) == []


def test_aggregation_function_chosen_by_a_string_setting_is_no_module() -> None:
    assert _zg2(HEADER + AGGREGATOR) == []


AGREED_FIELD = '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = Block()
        self.extra = Block()

    def forward(self, h):
        return self.router(h)

    def run(self, h, state):
        done = state.step(self.router(h).argmax(-1))
        dist.all_reduce(done)
        state.flag = done
        while state.flag:
            h = self.extra(h)
        return h
'''


def test_field_set_from_an_all_reduced_answer_clean() -> None:
    assert _zg2(HEADER + AGREED_FIELD) == []
    assert _zg2(HEADER + AGREED_FIELD.replace("        dist.all_reduce(done)\n", ""))  # the hazard twin
