"""Which frames of a running model are the user's: the first frame outside torch, zgen and the standard library.

Everything zgen reports about code it ran (a trace that stopped, a parameter
read outside its gather, a decision that differs between ranks) names a line
the user can open: the innermost frame that is neither torch, zgen nor the
standard library. A library the model comes from (transformers, timm) counts
as the user's: its file and line are where the statement is. Directories are
compared whole: `torchvision` and `torchaudio` sit beside `torch` and are
libraries like any other.
"""

from __future__ import annotations

import os
import traceback
from types import FrameType, TracebackType

import torch

__all__ = ["is_user_file", "user_site_tb", "user_site_stack", "where"]

_TORCH_DIR = os.path.dirname(torch.__file__)
_ZGEN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB_DIR = os.path.dirname(os.__file__)

_USER: dict[str, bool] = {}


def is_user_file(filename: str) -> bool:
    """True for a file outside torch, zgen and the standard library (memoised: called on every frame)."""
    known = _USER.get(filename)
    if known is not None:
        return known
    f = os.path.abspath(filename)
    user = not filename.startswith("<") and not (
        f.startswith(_TORCH_DIR + os.sep) or f.startswith(_ZGEN_DIR + os.sep)
        or (f.startswith(_STDLIB_DIR + os.sep) and "site-packages" not in f))
    _USER[filename] = user
    return user


def user_site_tb(tb: TracebackType | None) -> tuple[str, int] | None:
    """The innermost frame of a traceback that is user code (not torch, zgen or the stdlib)."""
    site = None
    for fs in traceback.extract_tb(tb):
        if is_user_file(fs.filename):
            site = (fs.filename, fs.lineno or 1)
    return site


def user_site_stack(frame: FrameType | None) -> tuple[str, int] | None:
    """The innermost user frame at or above `frame`, as (file, line)."""
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def where(tb: TracebackType | None) -> str:
    """` (at file:line)` for the user's frame of a traceback, or nothing."""
    site = user_site_tb(tb)
    return f" (at {site[0]}:{site[1]})" if site else ""
