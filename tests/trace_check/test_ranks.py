"""Simulated ranks: different rank, data and random state; a different sequence of gathering calls is ZG2xx."""

from __future__ import annotations

import textwrap

import pytest

from trace_helpers import EXPERTS, line_of

LOOP = '''
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.exit = nn.Linear(8, 2)
        self.probe = nn.Linear(8, 8)
        self.head = nn.Linear(8, 32)
        self.drop = nn.Dropout(0.5)
        self.acts = nn.ModuleList([nn.GELU(), nn.ReLU()])

    def forward(self, input_ids, labels):
        x = self.embed(input_ids)
        for layer in self.layers:
            {body}
        return F.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def build_model():
    return LM()
'''


def _loop(body: str) -> str:
    return LOOP.replace("{body}", body.replace("\n", "\n            "))


@pytest.mark.parametrize("rank", ["dist.get_rank() == 0", "int(__import__('os').environ['RANK']) == 7"])
def test_a_call_only_one_rank_makes_is_zg201_at_the_if(trace, rank):
    src = _loop(f"x = layer(x)\nif {rank}:  # rank\n    x = self.probe(x)")
    assert trace(src, world=8)[0] == [("ZG201", line_of(src, "# rank"))]


def test_a_submodule_picked_by_the_data_is_zg203_at_the_lookup(trace):
    src = _loop("x = layer(x)\nx = self.acts[0](x)\nx = [self.probe, self.exit][int(input_ids[0, 0]) % 2](x)  # pick\nbreak")
    src = src.replace("return F.cross_entropy(self.head(x)", "return F.cross_entropy(self.head(x[..., :1].expand(-1, -1, 8))")
    assert trace(src)[0] == [("ZG203", line_of(src, "# pick"))]


def test_a_random_layer_skip_is_zg202(trace):
    src = _loop("if self.training and torch.rand(()) < 0.5:  # draw\n    continue\nx = layer(x)")
    assert trace(src)[0] == [("ZG202", line_of(src, "# draw"))]


def test_an_early_exit_on_the_data_is_zg204(trace):
    src = _loop("x = layer(x)\nif (self.exit(x).softmax(-1)[..., 0] > 0.0).all():  # exit\n    break")
    assert trace(src)[0] == [("ZG204", line_of(src, "# exit"))]


def test_lookalikes_logging_parameter_free_modules_dropout_and_synced_exit(trace):
    body = """x = self.drop(layer(x))
x = self.acts[dist.get_rank() % 2](x)
if dist.get_rank() == 0:
    print(float(x.mean()), random.random())
flag = (self.exit(x).softmax(-1)[..., 0] > 0.0).all().float()
dist.all_reduce(flag, op=dist.ReduceOp.MIN)
if flag.item() == 1:
    break"""
    assert trace(_loop(body))[0] == []


def test_experts_that_happen_to_run_on_every_rank_are_still_zg203(trace):
    src = EXPERTS + textwrap.dedent('''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.moe = Experts()
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels):
            x = torch.ones_like(self.embed(input_ids))  # every token routes alike on every rank
            x = x.index_put((torch.tensor([0]), torch.tensor([0])), -x[0, 0])
            return F.cross_entropy(self.head(self.moe(x)).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    ''')
    found, result = trace(src)
    assert found == [("ZG203", line_of(src, "# hit"))]
    assert "answered the other way" in result.findings[0].message


def test_value_decisions_that_cannot_change_what_gathers(trace):
    src = '''
    class StackedExperts(nn.Module):
        """One module holding every expert: its loop over hit experts gathers nothing more."""

        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(2, 8, 8))

        def forward(self, x, choice):
            out = torch.zeros_like(x)
            for i in choice.unique():
                rows = torch.where(choice == i)
                out[rows] = x[rows] @ self.w[i]
            return out


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.gate = nn.Linear(8, 2)
            self.experts = StackedExperts()
            self.fc = nn.Linear(8, 8)
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels):
            x = self.embed(input_ids)
            x = self.experts(x, self.gate(x).argmax(-1))
            if (x > 0).any():
                x = self.fc(x)
            else:
                x = self.fc(-x)
            return F.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''
    assert trace(src)[0] == []


def test_an_entry_that_decodes_until_this_rank_is_done_is_zg204_unless_synced(trace):
    src = '''
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.head = nn.Linear(8, 32)

        def forward(self, input_ids, labels=None):
            logits = self.head(self.embed(input_ids))
            if labels is None:
                return logits
            return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


    def build_model():
        return LM()


    def generate(model, batch, synced=False):
        ids = batch["input_ids"]
        for _ in range(6):
            nxt = model(ids)[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, nxt], dim=1)
            done = (nxt == 3).all().float()
            if synced:
                dist.all_reduce(done)
            if done.item() > 0:  # done
                break


    def generate_synced(model, batch):
        generate(model, batch, synced=True)
    '''
    found, _ = trace(src, entries=("generate",))
    assert found == [("ZG204", line_of(src, "# done"))]
    assert trace(src, entries=("generate_synced",))[0] == []


@pytest.mark.parametrize("p, hazard", [(0.0, False), (0.02, True)])
def test_a_layer_drop_is_a_hazard_exactly_when_its_draw_can_skip(trace, p, hazard):
    """`torch.rand([]) < p` skips a layer on some rank iff p > 0: the draw is forced to either end of [0, 1),
    never the comparison to an answer the draw cannot give (p = 0 never skips; p = 0.02 rarely does, and the
    ranks simulated happen not to)."""
    src = _loop(f"drop = torch.rand([])\nif self.training and drop < {p}:  # draw\n    continue\nx = layer(x)")
    assert trace(src)[0] == ([("ZG202", line_of(src, "# draw"))] if hazard else [])


@pytest.mark.parametrize("draw, hazard", [("random.random() < 0.03", True), ("random.random() < 0.0", False),
                                          ("rand() < 0.03", True), ("random.randint(0, 9) == 10", False),
                                          ("__import__('numpy').random.rand() < 0.03", True)])
def test_an_extra_pass_on_a_python_draw_is_zg202_at_the_if(trace, monkeypatch, draw, hazard):
    """Self-conditioning: on a draw of Python's `random` (or numpy's), the model runs an extra pass of the same
    network from a helper; the `if` decides, not the last line of the network's forward. (A lazily imported
    module in `sys.modules` is not imported by looking for names taken from `random`.)"""
    import sys
    import types

    class Lazy(types.ModuleType):
        """Imports on first attribute access, and fails (as speechbrain's do); only `inspect` is told no."""

        def __getattr__(self, name):
            if sys._getframe(1).f_code.co_filename.endswith("inspect.py"):
                raise AttributeError(name)
            raise ImportError(f"lazy import of {name} failed")

    monkeypatch.setitem(sys.modules, "zgen_test_lazy", Lazy("zgen_test_lazy"))
    src = '''
    from random import random as rand


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.out = nn.Linear(8, 8)

        def forward(self, x):
            return self.out(self.fc(x))


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(32, 8)
            self.net = Net()
            self.head = nn.Linear(8, 32)

        def predict(self, x):
            return self.net(x)

        def forward(self, input_ids, labels):
            x = self.embed(input_ids)
            cond = torch.zeros_like(x)
            if DRAW:  # draw
                with torch.no_grad():
                    cond = self.predict(x)
            x = self.net(x + cond)
            return F.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


    def build_model():
        return LM()
    '''.replace("DRAW", draw)
    assert trace(src)[0] == ([("ZG202", line_of(src, "# draw"))] if hazard else [])


TOWERS = '''
class Settings:
    @property
    def scale(self):
        return 1.0


class Towers(nn.Module):
    def __init__(self):
        super().__init__()
        self.settings = Settings()
        self.towers = nn.ModuleDict({"text": nn.Embedding(32, 8), "image": nn.Linear(4, 8)})
        self.vision = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, **batch):
        {body}


def build_model():
    return Towers()


def inputs(batch_size, seq_len, generator):
    kind = int(torch.randint(0, 3, (1,), generator=generator)) if {mixed} else 2
    batch = {"text": torch.randint(0, 32, (batch_size, seq_len), generator=generator)}
    if kind != 0:
        batch["image"] = torch.randn(batch_size, seq_len, 4, generator=generator)
    return batch
'''

PICK = '''loss = 0.0
        for name, value in batch.items():
            tower = self.towers[name]  # pick
            loss = loss + self.head(tower(value)).mean() * self.settings.scale
        return loss'''

OPTIONAL = '''x = self.towers["text"](batch["text"]).mean(1)
        image = batch.get("image")
        s = self.settings.scale
        if image is not None:  # optional
            x = x * s + self.vision(image).mean(1) * self.settings.scale
        return self.head(x * self.settings.scale).mean()'''


@pytest.mark.parametrize("mixed", [True, False])
@pytest.mark.parametrize("body, marker, code", [(PICK, "# pick", "ZG203"), (OPTIONAL, "# optional", "ZG205")])
def test_towers_picked_by_the_keys_of_the_batch(trace, body, marker, code, mixed):
    """Micro batches of several kinds (the inputs function's structure varies by seed): a rank that got another
    kind runs other towers. Reported at the decision in the frame where the runs part (not in the property
    both paths read). The same model fed batches of one kind is clean."""
    src = TOWERS.replace("{body}", body).replace("{mixed}", str(mixed))
    found = trace(src)[0]
    if not mixed:
        assert found == []
    elif code == "ZG205":
        assert found == [(code, line_of(src, marker))]
    else:  # the loop over the batch's keys, or the call of the tower it picked
        assert [c for c, _ in found] == [code] and line_of(src, "batch.items()") <= found[0][1] <= line_of(src, marker) + 1


def test_state_kept_between_runs_is_a_note_not_a_divergence(trace):
    """A counter that flips a branch on every call: the same rank's runs differ, so that statement's
    differences are no rank's doing (a note), while a real rank decision elsewhere is still found."""
    src = _loop("x = layer(x)\nif dist.get_rank() == 1:  # rank\n    x = self.exit(x)[..., :1].expand(-1, -1, 8)\n"
                "CALLS[0] += 1\nif CALLS[0] % 2 == 0:  # counter\n    x = self.probe(x)\nbreak")
    src = "CALLS = [0]\n" + src
    found, result = trace(src)
    assert found == [("ZG201", line_of(src, "# rank"))]
    assert any("state kept between runs" in n for n in result.notes)


HEADS = '''
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.heads = nn.ModuleDict({"a": nn.Linear(8, 32), "b": nn.Linear(8, 32)})

    def forward(self, input_ids, labels):
        head = self.heads[{pick}]  # pick
        h = self.embed(input_ids)
        h = h * 2.0
        h = h + 1.0
        return F.cross_entropy(head(h).flatten(0, 1), labels.flatten())


def build_model():
    return LM()
'''


KEPT = '''
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.head = nn.Linear(8, 32)

    def forward(self, input_ids, labels):
        kept = [layer for layer in self.layers if {pick}] or [self.layers[0]]  # pick
        x = self.embed(input_ids)
        x = x * 2.0
        x = x + 1.0
        for layer in kept:
            x = layer(x)
        return F.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def build_model():
    return LM()
'''


INDEX = '''
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.head = nn.Linear(8, 32)

    def forward(self, input_ids, labels):
        i = {pick}  # pick
        x = self.embed(input_ids)
        x = x * 2.0
        x = x + 1.0
        x = self.blocks[i](x)
        return F.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def build_model():
    return LM()
'''


@pytest.mark.parametrize("template, pick, hazard", [
    (HEADS, "random.choice(['a', 'b'])", True), (HEADS, "'a'", False),
    (KEPT, "random.random() > 0.5", True), (KEPT, "layer.in_features > 4", False),
    (INDEX, "int(torch.randint(0, 3, ()).item())", True), (INDEX, "1", False)])
def test_modules_picked_at_random_lines_before_their_call_are_zg202_at_the_pick(trace, template, pick, hazard):
    """A head, the layers a loop runs, or the index of the block called (`self.blocks[i](x)`), picked some
    lines before the call: named at the pick (a fixed pick is clean)."""
    src = template.replace("{pick}", pick)
    assert trace(src)[0] == ([("ZG202", line_of(src, "# pick"))] if hazard else [])


CURRENT = '''
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.branches = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.current = self.branches[0]

    def pick(self):
        self.current = {pick}

    def forward(self, x):
        {inline}
        x = x * 2.0
        x = x + 1.0
        return self.current(x)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.block = Block()
        self.head = nn.Linear(8, 32)

    def forward(self, input_ids, labels):
        {outer}
        x = self.embed(input_ids)
        x = self.block(x)
        return F.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def build_model():
    return LM()
'''


def _current(pick: str, where: str) -> str:
    """CURRENT with the attribute set by a method the parent's forward calls before the block (`outer`), or
    by an assignment early in the block's own forward (`inline`)."""
    if where == "outer":
        src = CURRENT.replace("{outer}", "self.block.pick()").replace("{inline}", "pass")
        return src.replace("{pick}", pick + "  # pick")
    src = CURRENT.replace("{outer}", "pass").replace("{inline}", "self.current = {pick}  # pick")
    return src.replace("{pick}", pick)


@pytest.mark.parametrize("where", ["outer", "inline"])
@pytest.mark.parametrize("pick, hazard", [("random.choice(self.branches)", True), ("self.branches[1]", False)])
def test_a_module_held_in_an_attribute_picked_at_random_is_zg202_where_it_was_set(trace, where, pick, hazard):
    """`self.current = random.choice(self.branches)` in a method another module's forward runs first, or early
    in the forward that calls `self.current(x)`: named where the attribute was set (a fixed pick is clean)."""
    src = _current(pick, where)
    assert trace(src)[0] == ([("ZG202", line_of(src, "# pick"))] if hazard else [])
