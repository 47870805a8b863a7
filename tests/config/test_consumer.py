"""Inferring who reads the config from the training scripts, as text (never imported)."""

from __future__ import annotations

from zgen.config.consumer import infer_consumer, with_consumer
from zgen.launch import LaunchFacts


def test_each_reader_is_recognised():
    assert infer_consumer({"t.py": "from transformers import Trainer\n"}).consumer == "hf"
    assert infer_consumer({"t.py": "import transformers\nargs = transformers.TrainingArguments('o')\n"}).consumer == "hf"
    assert infer_consumer({"t.py": "from trl import SFTTrainer\n"}).consumer == "hf"
    assert infer_consumer({"t.py": "from accelerate import Accelerator\n"}).consumer == "accelerate"
    assert infer_consumer({"t.py": "import deepspeed\ndeepspeed.initialize(model=m)\n"}).consumer == "deepspeed"
    # A script `zgen emit` wrote: its config is read by zgen's runtime.
    assert infer_consumer({"train_gen.py": "import zgen.runtime as zr\n"}).consumer == "zgen"
    assert infer_consumer({"t.py": "from zgen.runtime.config import RuntimeConfig\n"}).consumer == "zgen"
    assert infer_consumer({"t.py": "import zgen.runtime as zr\nfrom transformers import Trainer\n"}).consumer == "hf"


def test_no_evidence_and_unparsable_files_give_none():
    assert infer_consumer({"m.py": "import torch\n"}) is None
    assert infer_consumer({"bad.py": "from transformers import (\n"}) is None
    # A string that mentions a reader is not an import.
    assert infer_consumer({"doc.py": "'''use deepspeed.initialize'''\n"}) is None


def test_hf_wins_over_the_libraries_it_calls():
    sign = infer_consumer({"a.py": "import deepspeed\ndeepspeed.initialize()\n",
                           "b.py": "from accelerate import PartialState\nfrom transformers import Trainer\n"})
    assert (sign.consumer, sign.path, sign.line) == ("hf", "b.py", 2)


def test_a_given_consumer_is_kept():
    facts = LaunchFacts(consumer="zgen", consumer_reason="--consumer")
    assert with_consumer(facts, {"t.py": "from transformers import Trainer\n"}) is facts
    inferred = with_consumer(LaunchFacts(), {"t.py": "from accelerate import Accelerator\n"})
    assert inferred.consumer == "accelerate" and inferred.consumer_reason == "t.py:1 imports `accelerate`"


def test_zgen_fills_stage_3_without_offload():
    from zc_helpers import check

    report = check('{"train_batch_size": 8, "zero_optimization": {"stage": "auto", "offload_param": {"device": "auto"}}}',
                   world_size=1, consumer="zgen")
    assert report.resolved.zero.stage == 3 and report.resolved.zero.offload_param.device == "none"
    assert "`zgen emit` resolves it as 3" in report.resolved.origin("zero_optimization.stage").detail
