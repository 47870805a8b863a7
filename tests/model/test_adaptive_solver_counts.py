"""An ODE solver with error control (torchdiffeq's `odeint`, `known.ADAPTIVE_SOLVERS`) given no fixed-grid method calls
the function it is handed as many times as its step-size control decides from this rank's values: a model run in that
function (a submodule handed directly, a function defined here, a lambda) runs a data-dependent number of times
(`divergence._adaptive_solves`, ZG204). Look-alikes: a fixed-grid method (`euler`, `rk4`), a method read from
settings (`**self.odeint_kwargs`), a solved function that runs no model."""

from __future__ import annotations

import textwrap

from zgen.model import check_source


def found(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_source("m.py", textwrap.dedent(source)) if f.code.startswith("ZG2")]


HAZARDS = """
    import torch
    from torch import nn
    from torchdiffeq import odeint


    def log_likelihood(model, x, sigma_min, sigma_max):
        def ode_fn(sigma, x):
            return model(x, sigma)

        t = x.new_tensor([sigma_min, sigma_max])
        return odeint(ode_fn, x, t, atol=1e-4, rtol=1e-4, method="dopri5")[-1]


    def sample_flow(model, x):
        return odeint(lambda t, y: model(y, t), x, torch.linspace(0, 1, 2))[-1]


    class Velocity(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))

        def forward(self, t, x):
            return self.net(x)


    class Flow(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.velocity = Velocity(d)

        def sample(self, x):
            return odeint(self.velocity, x, torch.linspace(0, 1, 2, device=x.device))[-1]
"""


def test_a_model_solved_with_error_control_runs_as_often_as_the_solver_decides():
    assert found(HAZARDS) == [("ZG204", 12), ("ZG204", 16), ("ZG204", 34)]


def test_fixed_grids_settings_and_solved_functions_without_a_model_are_clean():
    assert found("""
        import torch
        from torch import nn
        from torchdiffeq import odeint


        def sample_euler(model, x, steps):
            return odeint(lambda t, y: model(y, t), x, torch.linspace(0, 1, steps), method="euler")[-1]


        def sample_rk4(model, x):
            t = torch.linspace(0, 1, 2)
            return odeint(lambda t, y: model(y, t), x, t, method="rk4", options=dict(step_size=0.1))[-1]


        def integrate(x):
            return odeint(lambda t, y: -y, x, torch.linspace(0, 1, 2))[-1]


        class Flow(nn.Module):
            def __init__(self, d, odeint_kwargs: dict = dict(method="midpoint")):
                super().__init__()
                self.velocity = nn.Linear(d, d)
                self.odeint_kwargs = odeint_kwargs

            def sample(self, x):
                return odeint(lambda t, y: self.velocity(y), x, torch.linspace(0, 1, 2), **self.odeint_kwargs)[-1]
    """) == []
