"""What a run did, as events: the user's lines it executed and the calls that gather, in order, per phase.

Two kinds of event, in one list per phase (`step`, `backward`, then each entry):

* `(file, line, depth)`: a line of the user's code ran (`sys.settrace`, for
  files outside torch, zgen and the standard library only; other frames get
  no line tracing), in a frame `depth` user frames deep (what a statement calls
  runs deeper; `divergence` tells the statement that decided from lines of
  the callees it ran);
* `(None, name, depth)`: a call every rank has to join, made at that depth:
  the forward of a module that holds parameters of its own (its pre-forward
  hook all-gathers them), or a collective (`collective:all_reduce`). A module
  without parameters gathers nothing, so its calls may differ between ranks
  harmlessly and are not events.

The same forward hooks keep `Partitions.running`, the modules whose forward
runs through `__call__` (what the hooks gather). During the build they
instead note the first module called while an `__init__` runs (ZG110).

`expect` (per phase, the calls of a reference run) stops a run at its first
call that differs (`Diverged`): a run that answers one decision the other way
only needs to show whether the calls change.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from torch import nn
from torch.nn.modules import module as nn_module

from zgen.plan.frames import is_user_file

from .partitions import Partitions
from .sites import Site, site_of, user_frame

__all__ = ["Phase", "Diverged", "Tracker", "calls_of"]

CALL = None  # the file of a call event


@dataclass
class Phase:
    """One phase of a run: its name and events (see the module docstring)."""

    name: str
    events: list[tuple[Any, Any]] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)  # indices of the call events

    def call_names(self) -> list[str]:
        return [self.events[i][1] for i in self.calls]


def calls_of(phases: list[Phase]) -> dict[str, list[str]]:
    return {p.name: p.call_names() for p in phases}


class Diverged(BaseException):
    """A run's calls left the reference's (a `BaseException`, so the user's `except Exception` lets it pass)."""


class Tracker:
    """Forward hooks and line tracing for one run; `phases` holds what they saw."""

    def __init__(self, partitions: Partitions, *, lines: bool = True,
                 expect: dict[str, list[str]] | None = None) -> None:
        self.partitions = partitions
        self.lines = lines
        self.expect = expect
        self.phases: list[Phase] = []
        self.phase = "build"
        self.inits = lambda: 0  # module `__init__` frames running (set by the build's InitWatcher)
        self._build_depth = 0
        self._build_site: Site | None = None
        self._names: dict[int, str] = {}
        self._handles: list[Any] = []
        self._previous_trace = None
        self._depth = 0  # user frames running (traced ones)

    # -- phases ------------------------------------------------------------------------------

    def name_modules(self, model: nn.Module) -> None:
        """Learn the qualified names of the model's modules (the built model of this run)."""
        self._names = {id(m): name or "<model>" for name, m in model.named_modules(remove_duplicate=False)}

    def begin(self, name: str) -> None:
        self.phase = name
        self.phases.append(Phase(name))

    def build_call(self) -> Site | None:
        """The module call running during the build while an `__init__` runs, or None."""
        return self._build_site

    # -- hooks -------------------------------------------------------------------------------

    def __enter__(self) -> Tracker:
        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post, always_call=True),
        ]
        if self.lines:
            self._depth = 0
            self._previous_trace = sys.gettrace()
            sys.settrace(self._trace)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.lines:
            sys.settrace(self._previous_trace)
        for h in self._handles:
            h.remove()
        self._handles = []
        self.partitions.running.clear()

    def _pre(self, module: nn.Module, args: Any) -> None:
        if self.phase == "build":
            if self._build_depth == 0 and self.inits() > 0:
                frame = user_frame(sys._getframe(1))
                self._build_site = None if frame is None else site_of(frame.f_code.co_filename, frame.f_lineno)
            self._build_depth += 1
            return
        self.partitions.running.append(module)
        if any(p is not None for p in module._parameters.values()):
            self.call(self._names.get(id(module)) or f"<{type(module).__name__}>")

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        if self.phase == "build":
            self._build_depth = max(0, self._build_depth - 1)
            if self._build_depth == 0:
                self._build_site = None
            return
        running = self.partitions.running
        for i in range(len(running) - 1, -1, -1):
            if running[i] is module:
                del running[i]
                break

    def call(self, name: str) -> None:
        """A call every rank joins (a module forward or a collective)."""
        if not self.phases:
            return
        phase = self.phases[-1]
        phase.calls.append(len(phase.events))
        phase.events.append((CALL, name, self._depth))
        if self.expect is not None:
            want = self.expect.get(phase.name)
            i = len(phase.calls) - 1
            if want is None or i >= len(want) or want[i] != name:
                raise Diverged(name)

    # -- lines -------------------------------------------------------------------------------

    def _trace(self, frame: FrameType, event: str, arg: Any):
        if event == "call" and self.phase != "build" and is_user_file(frame.f_code.co_filename):
            self._depth += 1
            return self._line
        return None

    def _line(self, frame: FrameType, event: str, arg: Any):
        if event == "line":
            if self.phases:
                self.phases[-1].events.append((frame.f_code.co_filename, frame.f_lineno, self._depth))
        elif event == "return":
            self._depth -= 1
        return self._line
