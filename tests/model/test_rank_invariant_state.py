"""Values a trainer holds that are the same on every rank, though per-rank values pass near them (ZG2 in code outside
the model): a state object one of whose fields is named as the rank, handed to callbacks that return the control
object; a sampler built for this rank's shard; a time kept in a metrics record; the launcher's "not distributed"
rank; the state resumed from a checkpoint file; a local whose name is also an attribute's; an accessor of a model
read in a helper. Each safe shape (transformers' trainer, written small) has the hazard beside it that must still
fire."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

HEAD = """
import os
import random
import time
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler
from .utils import speed_metrics


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)

    def forward(self, x):
        return self.body(x)

"""


def codes(code: str) -> list[str]:
    return sorted(f.code for f in check_source("m.py", HEAD + textwrap.dedent(code)) if f.code.startswith("ZG2"))


CALLBACKS = """
    class Trainer:
        def __init__(self, model: Net, handler, args):
            self.model = model
            self.handler = handler
            self.args = args

        def fit(self, loader):
            self.state.{field} = dist.get_rank() == 0
            for batch in loader:
                self.model(batch).mean().backward()
                self.control = self.handler.on_step_end(self.args, self.state, self.control)
                if self.control.should_stop:
                    break
"""


def test_a_rank_flag_kept_on_the_state_object_does_not_make_the_callbacks_control_per_rank():
    # every read of `state.is_world_process_zero` is the rank by its name; the object's other fields are not
    assert codes(CALLBACKS.format(field="is_world_process_zero")) == []


def test_a_rank_decision_kept_on_the_state_object_under_another_name_still_decides():
    assert codes(CALLBACKS.format(field="should_log_here")) == ["ZG201"]


def test_a_rank_flag_read_back_from_the_state_object_by_its_name_still_decides():
    assert codes("""
        class Trainer:
            def __init__(self, model: Net):
                self.model = model

            def fit(self, loader):
                self.state.is_world_process_zero = dist.get_rank() == 0
                for batch in loader:
                    if self.state.is_world_process_zero:
                        self.model(batch)
    """) == ["ZG201"]


SAMPLER = """
    class Trainer:
        def __init__(self, model: Net, data):
            self.model = model
            self.data = data

        def shard(self):
            return {made}

        def fit(self):
            print("shard of rank", dist.get_rank())
            for i in {walk}:
                self.model(self.data[i]).mean().backward()
"""


def test_a_sampler_built_for_this_ranks_shard_is_no_decision_on_the_rank():
    # (every rank's shard is as long: a distributed sampler pads it)
    assert codes(SAMPLER.format(made="DistributedSampler(self.data, rank=dist.get_rank())", walk="self.shard()")) == []


def test_a_helper_returning_a_number_made_from_the_rank_still_decides():
    assert codes(SAMPLER.format(made="dist.get_rank() % 2 + 1", walk="range(self.shard())")) == ["ZG201"]


def test_a_time_reported_in_the_metrics_handed_to_callbacks_is_no_deadline():
    assert codes("""
        class Trainer:
            def __init__(self, model: Net, handler):
                self.model = model
                self.handler = handler

            def fit(self, loader):
                start = time.time()
                for batch in loader:
                    self.model(batch).mean().backward()
                    metrics = speed_metrics("train", start)
                    record = {}
                    record.update(metrics)
                    self.control = self.handler.on_log(self.control, record)
                    if self.control.should_stop:
                        break
    """) == []


def test_a_time_left_computed_with_builtins_or_a_helper_of_the_file_still_stops_a_rank():
    assert codes("""
        def over(start, limit):
            return time.time() - start > limit

        def fit(model, loader, limit):
            start = time.time()
            for batch in loader:
                model(batch).mean().backward()
                left = max(0.0, limit - (time.time() - start))
                if left == 0:
                    break

        def fit_helper(model, loader, limit):
            start = time.time()
            for batch in loader:
                model(batch).mean().backward()
                if over(start, limit):
                    break
    """) == ["ZG204", "ZG204"]


LAUNCHED = """
    class Trainer:
        def __init__(self, model: Net, args):
            self.model = model
            self.args = args

        def fit(self, batch):
            if self.args.local_rank {test}:
                self.model(batch)
"""


def test_whether_the_launcher_set_a_rank_at_all_is_the_same_on_every_rank():
    assert codes(LAUNCHED.format(test="!= -1")) == []


def test_a_test_of_the_rank_against_a_rank_still_decides():
    assert codes(LAUNCHED.format(test="== 0")) == ["ZG201"]


RESUME = """
    class Trainer:
        def __init__(self, model: Net):
            self.model = model

        def fit(self, loader, ckpt):
            skipped = 0
            if os.path.isfile(ckpt):
                skipped = torch.load(ckpt)["step"]
            finished = os.path.isfile(ckpt + ".done")
            for step, batch in enumerate(loader):
                if {test}:
                    {leave}
                self.model(batch).mean().backward()
            return step
"""


def test_a_step_count_resumed_from_a_checkpoint_file_is_what_the_file_held():
    assert codes(RESUME.format(test="step < skipped", leave="continue")) == []


def test_a_value_of_the_file_test_itself_still_decides_per_host():
    assert codes(RESUME.format(test="finished", leave="return")) == ["ZG204"]


ATTRIBUTE_NAMED = """
    class Trainer:
        def __init__(self, model: Net, cfg):
            self.model = model
            self.cfg = cfg

        def fit(self, x):
            keep = random.random() < 0.5
            print(keep)
            if {test}:
                self.model(x)
"""


def test_an_attribute_read_is_not_the_local_of_the_same_name():
    assert codes(ATTRIBUTE_NAMED.format(test="self.cfg.keep")) == []


def test_the_local_itself_still_decides():
    assert codes(ATTRIBUTE_NAMED.format(test="keep")) == ["ZG202"]


ACCESSOR = """
    class Trainer:
        def __init__(self, model: Net):
            self.model = model

        def columns(self):
            return list(self.model.{method}().keys())

        def prepare(self, data):
            names = self.columns()
            return [{{k: row[k] for k in names}} for row in data]

        def fit(self, data):
            rows = self.prepare(data)
            for batch in data:
                self.model(batch).mean().backward()
                if rows[0] == 0:
                    self.evaluate(batch)

        def evaluate(self, batch):
            return self.model(batch)
"""


def test_a_helper_reading_an_accessor_of_the_model_runs_no_model():
    # (what `prepare()` returns is no model output: a test on it is the same on every rank)
    assert codes(ACCESSOR.format(method="get_input_names")) == []


def test_a_helper_running_the_model_hands_back_its_output():
    assert codes(ACCESSOR.format(method="forward")) == ["ZG203"]


OUTPUT_LATER = """
    class Runner:
        def __init__(self, model: Net):
            self.model = model

        def heal(self, ids):
            return self.model(ids)

        def prepare(self, cfg, ids):
            return cfg

        def beam(self, ids):
            return self.model(ids)

        def run(self, ids, cfg):
            cfg = self.prepare(cfg, ids)
            streamer = cfg.streamer
            mode = cfg.num_beams
            ids = self.heal(ids)
            {late}
            if mode > 1:
                ids = self.beam(ids)
            if ids.sum() > 0:
                print("done")
            return ids
"""


def test_a_setting_read_before_the_model_ran_is_no_output_of_it():
    # (`ids` holds the model's output only from `self.heal(ids)` on; the config was prepared from the prompt before)
    assert codes(OUTPUT_LATER.format(late="streamer.put(ids)")) == []


def test_a_value_an_object_computes_from_the_output_after_it_ran_still_decides():
    assert codes(OUTPUT_LATER.format(late="mode = streamer.put(ids)")) == ["ZG203"]


KEYWORD_NAMED = """
    class Runner:
        def __init__(self, model: Net):
            self.model = model

        def run(self, x, cfg):
            out = self.model(x)
            {use}
            if cfg.mode > 1:
                self.model(x)
"""


def test_a_keyword_or_attribute_named_like_an_output_is_not_the_output():
    assert codes(KEYWORD_NAMED.format(use="cfg = cfg.replace(out=None, mode=cfg.out)")) == []


def test_a_config_made_from_the_output_still_decides():
    assert codes(KEYWORD_NAMED.format(use="cfg = cfg.replace(mode=out.argmax().item())")) == ["ZG203"]


SETTINGS = """
    def skip_first(loader, n):
        return loader[n:]

    class Trainer:
        def __init__(self, model: Net, data):
            self.model = model
            self.data = data

        def fit(self, {params}):
            {body}
"""


def test_steps_counted_from_a_namespace_of_settings_are_the_same_on_every_rank():
    # (`args` is only read field by field and handed to callbacks: settings; the loader is `self`'s)
    assert codes(SETTINGS.format(params="args", body="""loader = skip_first(self.data, args.resume_step * args.accum)
            self.handler.on_train_begin(args)
            for step in range(len(loader) // args.accum):
                self.model(loader[step])""")) == []


def test_a_batch_read_field_by_field_into_the_model_still_counts_the_loop():
    assert codes(SETTINGS.format(params="batch", body="""for i in range(len(batch.graphs)):
                self.model(batch.x[i])""")) == ["ZG204"]
