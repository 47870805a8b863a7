"""A method bound in the class body to a function of another file (Whisper's `decode = decode_function`) runs that
function on the model: a helper calling it runs the model (whisper's command line catches a failed `transcribe()`
and goes on to the next file, leaving its peers in the decoder's gathers)."""

from __future__ import annotations

import textwrap

from zgen.model import check_source

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


def _found(tmp_path, model: str) -> set[tuple[str, int]]:
    package = tmp_path / "whisper"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(textwrap.dedent(model))
    (package / "decoding.py").write_text(textwrap.dedent(DECODING))
    path = package / "transcribe.py"
    path.write_text(textwrap.dedent(TRANSCRIBE))
    return {(f.code, f.line) for f in check_source(str(path), path.read_text())}


def test_a_method_bound_to_a_function_in_the_class_body_runs_the_model(tmp_path):
    assert ("ZG204", 13) in _found(tmp_path, MODEL)


def test_a_class_without_that_method_runs_nothing_through_it(tmp_path):
    assert ("ZG204", 13) not in _found(tmp_path, MODEL.replace("    decode = decode_function\n", ""))
