"""A model a loader hands back unpacked (`gpt, gpt_epoch = utils.load_model(path)`), named for its architecture, run
in a planning loop that leaves when this rank's environment says its episode ended.

Trajectory Transformer's `plan.py` does this at the top of the script; the same in a function. The loop's remaining
plans (each a beam search through the model) are skipped on a rank whose episode ended: ZG204.
"""

from __future__ import annotations

from zgen.model import check_source

PLAN = """
import utils
import datasets


def beam_plan(model, prefix, n):
    for i in range(n):
        prefix = model(prefix).argmax(-1)
    return prefix


gpt, gpt_epoch = utils.load_model("logs", device="cuda")
env = datasets.load_environment("halfcheetah")
observation = env.reset()
for t in range(env.max_episode_steps):
    sequence = beam_plan(gpt, observation, 4)
    next_observation, reward, terminal, _ = env.step(sequence)
    if terminal:
        break
    observation = next_observation
"""


def _found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("plan.py", source) if f.code.startswith("ZG2")]


def test_a_loaded_model_planned_with_until_the_episode_ends():
    assert _found(PLAN) == [("ZG204", 18)]


def test_the_same_loop_in_a_function():
    head, loop = PLAN.split("\n\ngpt, ")
    body = "\n".join("    " + line if line else line for line in ("gpt, " + loop).split("\n"))
    assert _found(head + "\n\ndef main():\n" + body) == [("ZG204", 19)]


TOKENIZER = """
import utils


def encode_all(path, prompts):
    model, tokenizer = utils.load_model(path)
    ids = []
    for prompt in prompts:
        if not prompt:
            break
        ids.append(tokenizer.encode(prompt))
    return ids
"""


def test_the_tokenizer_beside_a_loaded_model_is_no_model():
    assert _found(TOKENIZER) == []
