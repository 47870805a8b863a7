"""A method bound in the class body to a function of another file (Whisper's `decode = decode_function`) runs that
function on the model: a helper calling it runs the model (whisper's command line catches a failed `transcribe()`
and goes on to the next file, leaving its peers in the decoder's gathers)."""

from __future__ import annotations

from package_check import found_in_package

MODEL = """
from torch import nn

from .decoding import decode_function


class Whisper(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

    decode = decode_function


def load_model(name):
    return Whisper()
"""

DECODING = """
def decode_function(model, x):
    return model(x)
"""

TRANSCRIBE = """
def transcribe(model, x):
    return model.decode(x)


def cli(paths):
    from .model import load_model

    model = load_model("base")
    for path in paths:
        try:
            result = transcribe(model, path)
        except Exception as e:
            print(e)
"""


def _found(tmp_path, model: str) -> list[tuple[str, int]]:
    files = {"model.py": model, "decoding.py": DECODING, "transcribe.py": TRANSCRIBE}
    return found_in_package(tmp_path, files, "transcribe.py", name="whisper")


def test_a_method_bound_to_a_function_in_the_class_body_runs_the_model(tmp_path):
    assert ("ZG204", 13) in _found(tmp_path, MODEL)


def test_a_class_without_that_method_runs_nothing_through_it(tmp_path):
    assert ("ZG204", 13) not in _found(tmp_path, MODEL.replace("    decode = decode_function\n", ""))
