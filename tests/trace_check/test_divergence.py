"""Where two runs part: the last common line before they part for good, past detours both come back from."""

from __future__ import annotations

from zgen.trace_check.divergence import data_code, parting_line


def _lines(*numbers: int, call: str | None = None, depth: int = 1) -> list[tuple]:
    return [("m.py", n, depth) for n in numbers] + ([(None, call, depth)] if call else [])


def test_a_detour_both_runs_come_back_from_is_skipped():
    # rank 0 logs (line 3), both go on to line 4; line 5 decides which module runs next.
    ours = _lines(2, 3, 4, 5, 6, call="x")
    theirs = _lines(2, 4, 5, 7, call="y")
    assert parting_line(ours, theirs) == ("m.py", 5)


def test_a_detour_back_through_a_line_already_run_is_the_decision():
    # `if skip: continue` at line 31: one run goes back to the loop head (30) and calls the next layer.
    ours = _lines(30, 31, 32, call="layers.0")
    theirs = _lines(30, 31, 30, 31, 32, call="layers.1")
    assert parting_line(ours, theirs) == ("m.py", 31)


def test_the_same_lines_calling_different_modules_part_at_the_call():
    assert parting_line(_lines(20, call="experts.0"), _lines(20, call="experts.1")) == ("m.py", 20)


def test_the_deciding_statement_is_in_the_frame_where_the_runs_part():
    # `if cfg.flag:` at line 10 calls a property (h.py 3, one frame deeper) before the runs part; both runs call
    # it again on their own paths (line 11 on one, 14 on the other): the `if` decides, not the property.
    prop = [("h.py", 3, 2)]
    ours = _lines(9, 10) + prop + _lines(11) + prop + _lines(12, call="tower")
    theirs = _lines(9, 10) + prop + _lines(14) + prop + _lines(15, call="head")
    assert parting_line(ours, theirs) == ("m.py", 10)


def test_a_helper_both_runs_returned_from_is_not_the_decision():
    # `if should_skip():` at 20; the helper's body (line 5, one deeper) ran on both; the runs part in the caller.
    ours = _lines(20) + [("h.py", 5, 2)] + _lines(21, call="layer")
    theirs = _lines(20) + [("h.py", 5, 2)] + _lines(23, call="head")
    assert parting_line(ours, theirs) == ("m.py", 20)


def test_an_extra_pass_of_the_same_module_parts_before_it():
    """One run calls the same module first from a helper (one frame deeper): the calls agree by name until the
    helper's pass ends, and the decision (line 810) comes before the first of them."""
    from zgen.trace_check.events import Phase
    from zgen.trace_check.divergence import first_divergence

    def phase(events):
        p = Phase("step", events=events)
        p.calls = [i for i, e in enumerate(events) if e[0] is None]
        return p

    ours = phase(_lines(809, 810, 815, call="unet") + _lines(817, call="loss"))
    theirs = phase(_lines(809, 810, 811) + [("m.py", 830, 2), (None, "unet", 2)] + _lines(815, call="unet"))
    parting = first_divergence([ours], [theirs], True)
    assert parting.site == ("m.py", 810) and (parting.ours, parting.theirs) == ("loss", "unet")


def test_data_code_by_statement(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("while x:\n    pass\nif x is None:\n    y()\nif x.any():\n    break\nif x.any():\n    y()\n")
    assert [data_code((str(src), n)) for n in (1, 3, 5, 7)] == ["ZG204", "ZG205", "ZG204", "ZG203"]


def test_a_helper_that_only_returns_its_answer_leaves_the_decision_to_its_caller():
    # `while unfinished():` at line 40 (depth 1); the helper parts at its `if done:` (line 7, depth 2) and both
    # runs return from it at once: the loop decides. A helper that calls a module after parting keeps it.
    ours = _lines(40) + [("h.py", 7, 2), ("h.py", 8, 2)] + _lines(41, call="layer")
    theirs = _lines(40) + [("h.py", 7, 2), ("h.py", 9, 2)] + _lines(50, call="head")
    assert parting_line(ours, theirs) == ("m.py", 40)
    ours = _lines(40) + [("h.py", 7, 2), ("h.py", 8, 2), (None, "layer", 2)]
    assert parting_line(ours, theirs) == ("h.py", 7)


def test_a_call_of_a_name_bound_before_parts_at_the_binding(tmp_path):
    """The same lines, a different module called: the statement that bound the called name picked it (line 2),
    in the same frame; a loop variable is the loop's decision (the call stays the site), as is a name bound
    before the frame was entered (an argument)."""
    m, lines = _written(tmp_path, "def f(heads, x, k):\n    head = heads[k]\n    y = x + 1\n    return head(y)\n"
                                  "def g(layers, x):\n    for layer in layers:\n        x = layer(x)\n"
                                  "def h(self, x):\n    kept = drop(self.layers)\n"
                                  "    for i, layer in enumerate(kept):\n        x = layer(x)\n")

    assert parting_line(lines(2, 3, 4, call="heads.a"), lines(2, 3, 4, call="heads.b")) == (m, 2)
    assert parting_line(lines(6, 7, call="layers.0"), lines(6, 7, call="layers.1")) == (m, 7)
    bound = [(m, 2, 1), (None, "embed", 1)]  # bound before the last call both runs made alike
    assert parting_line(lines(3, 4, call="heads.a"), lines(3, 4, call="heads.b"), bound) == (m, 2)
    # a loop over a list picked in the frame (line 9): the pick; over an argument (line 6): the call
    assert parting_line(lines(9, 10, 11, 10, 11, call="layers.1"), lines(9, 10, 11, 10, 11, call="layers.2")) == (m, 9)
    caller = [("c.py", 9, 0)]
    assert parting_line(caller + lines(3, 4, call="heads.a"), caller + lines(3, 4, call="heads.b")) == (m, 4)


def test_an_attribute_or_an_index_called_parts_where_it_was_bound(tmp_path):
    """`self.current(x)` parts at the line that set the attribute, in this frame or in a method run before
    (another frame); `self.blocks[i](x)` at the line that bound the index; a local name set in another frame,
    or an attribute never set in the phase, leaves the call as the site."""
    m, lines = _written(tmp_path, "def pick(self):\n    self.current = choose(self.branches)\n"
                                  "def f(self, x):\n    y = x + 1\n    return self.current(y)\n"
                                  "def g(self, x):\n    i = draw()\n    y = x + 1\n    return self.blocks[i](y)\n"
                                  "def h(self, x):\n    y = x + 1\n    return self.blocks[0](y)\n"
                                  "def k(self, x):\n    i = 0\n")

    assert parting_line(lines(2, 4, 5, call="branches.0"), lines(2, 4, 5, call="branches.1")) == (m, 2)
    picked = [(m, 2, 2), (None, "embed", 1)]  # a method the caller ran before this frame was entered
    assert parting_line(lines(4, 5, call="branches.0"), lines(4, 5, call="branches.1"), picked) == (m, 2)
    assert parting_line(lines(7, 8, 9, call="blocks.0"), lines(7, 8, 9, call="blocks.2")) == (m, 7)
    assert parting_line(lines(11, 12, call="blocks.0"), lines(11, 12, call="blocks.1")) == (m, 12)
    other = [(m, 14, 1), ("c.py", 3, 0)]  # `i` bound in another frame, then this one entered
    assert parting_line(other + lines(8, 9, call="blocks.0"), other + lines(8, 9, call="blocks.1")) == (m, 9)


def _written(tmp_path, text: str):
    """Write `text` as m.py; its path, and `lines(*numbers, call, depth=1)`: lines of it run at `depth`, then a
    call made there."""
    src = tmp_path / "m.py"
    src.write_text(text)
    m = str(src)

    def lines(*numbers, call, depth=1):
        return [(m, n, depth) for n in numbers] + [(None, call, depth)]
    return m, lines
