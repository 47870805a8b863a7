"""A model a loader hands back unpacked (`gpt, gpt_epoch = utils.load_model(path)`), named for its architecture, run
in a planning loop that leaves when this rank's environment says its episode ended.

Trajectory Transformer's `plan.py` does this at the top of the script; the same in a function. The loop's remaining
plans (each a beam search through the model) are skipped on a rank whose episode ended: ZG204.
"""

from __future__ import annotations

from zgen.model import check_source

from tests.model.package_check import found_in_package

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


LOADER = """
def load_model(path, device="cuda"):
    adapter = get_model_adapter(path)
    model, tokenizer = adapter.load_model(path, {"device": device})
    return model, tokenizer
"""

CHAT = """
from .loader import load_model


def chat_loop(path, chatio):
    model, tokenizer = load_model(path)
    while True:
        inp = chatio.prompt_for_input()
        if not inp:
            break
        ids = tokenizer.encode(inp)
        chatio.print(ids)
"""


def test_the_tokenizer_beside_a_loaded_model_is_no_model(tmp_path):
    # (the loop runs only the tokenizer: leaving it on this rank's input skips no module)
    assert found_in_package(tmp_path, {"loader.py": LOADER, "chat.py": CHAT}, "chat.py", prefix="ZG2") == []
