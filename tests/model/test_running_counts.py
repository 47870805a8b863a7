"""Loops that run the model until a running count reaches a bound, the count grown by what this rank's data gave it
(`Taint._running_test`, ZG204): samples, tokens, environment steps; against counts grown by a constant, agreed
across ranks, bounded by a collection's length, or loops that run no module."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def codes(source: str) -> list[str]:
    return [f.code for f in check_source("m.py", textwrap.dedent(source))]


def test_a_sample_budget_grown_by_the_batch_size_ends_the_loop_per_rank():
    assert codes("""
        def train(model, loader, max_samples):
            n_samples = 0
            for batch in loader:
                model(batch["x"]).mean().backward()
                n_samples += batch["x"].shape[0]
                if n_samples >= max_samples:
                    break
    """) == ["ZG204"]
    assert codes("""
        def train(model, loader, budget):
            total_tokens = 0
            it = iter(loader)
            while total_tokens < budget:
                batch = next(it)
                model(batch["ids"]).mean().backward()
                total_tokens += batch["mask"].sum().item()
    """) == ["ZG204"]


def test_a_plain_class_collecting_embeddings_until_enough_samples():
    assert codes("""
        class Explainer:
            def __init__(self, model, loader):
                self.model = model
                self.loader = loader

            def baselines(self, num_samples):
                count = 0
                out = []
                for x in self.loader:
                    out.append(self.model.embed_input(x))
                    count += x["target"].shape[0]
                    if count >= num_samples:
                        break
                return out

            def more(self, num_samples):
                seen = 0
                it = iter(self.loader)
                while seen < num_samples:
                    batch = next(it)
                    self.model(batch)
                    seen += len(batch)
    """) == ["ZG204", "ZG204"]


def test_a_count_grown_by_a_local_bound_to_the_batch_size():
    assert codes("""
        from torch import nn

        class Forecaster(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(8, 8)

            def predict_step(self, batch, num_samples, cap):
                num_series = batch.past.shape[0]
                step = min(max(cap // num_series, 1), num_samples)
                count = 0
                out = []
                while count < num_samples:
                    out.append(self.net(batch.past.repeat(step, 1)))
                    count += step
                return out
    """) == ["ZG204"]


def test_counts_every_rank_reaches_alike_are_clean():
    assert codes("""
        import torch
        import torch.distributed as dist

        def by_steps(model, loader, max_steps):
            step = 0
            while step < max_steps:
                for batch in loader:
                    model(batch)
                    step += 1

        def reduced(model, loader, budget):
            seen = 0
            for batch in loader:
                model(batch).mean().backward()
                n = torch.tensor(batch.shape[0])
                dist.all_reduce(n)
                seen += n.item()
                if seen >= budget:
                    break

        def gathered(accelerator, model, loader, n):
            seen = 0
            for batch in loader:
                model(batch)
                seen += accelerator.gather(batch).shape[0]
                if seen >= n:
                    break

        def over_dataset(model, loader, dataset):
            seen = 0
            for batch in loader:
                model(batch)
                seen += len(batch)
                if seen >= len(dataset):
                    break
    """) == []


def test_a_count_in_a_loop_that_runs_no_module_is_clean():
    assert codes("""
        def accuracy(model, loader, n):
            outs = [model(b) for b in loader]
            correct, count = 0, 0
            for o in outs:
                correct += (o.argmax(-1) == 0).sum()
                count += len(o)
                if count >= n:
                    break
            return correct / count
    """) == []


AGENT = """
import torch


class Agent:
    def __init__(self, v: torch.nn.Module, min_batch_size):
        self.v = v
        self.min_batch_size = min_batch_size
        self._size = 0
        self._trajectories = []

    def _terminal(self, features):
        self._trajectories.append(features)
        self._size += {grow}
        if self._size >= self.min_batch_size:
            self._train()

    def _train(self):
        return torch.cat([self.v(f) for f in self._trajectories])
"""


def test_an_agent_training_once_its_episodes_grew_its_count_past_a_bound():
    # (each call grows the count by one episode's length: the calls are the loop)
    assert codes(AGENT.format(grow="len(features)")) == ["ZG203"]


def test_an_agent_counting_its_calls_is_clean():
    assert codes(AGENT.format(grow="1")) == []
