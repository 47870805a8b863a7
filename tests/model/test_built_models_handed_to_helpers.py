"""An RL algorithm's function builds its actor-critic from a class handed by default (`def ppo(env_fn,
actor_critic=core.MLPActorCritic)` ... `ac = actor_critic(obs, act)`: `holds._class_defaults`) and hands it, or a
part of it, to helpers of another file that read its parameters (`sync_params(ac)` broadcasting `p.data`,
`count_vars(module)` for `module in [ac.pi, ac.v]`, `mpi_avg_grads(ac.pi)` reading `p.grad`): reported at the call
(`handed._built_handed_on`). Its early stop on a KL averaged over the MPI processes (`kl = mpi_avg(info["kl"])`,
mpi4py's `Allreduce` underneath) is the same on every rank, though a later line rebinds `kl` to this rank's own value
for logging (`divergence._bound_before`). Look-alikes: a torch layer the function makes for itself and a factory's
product it returns."""

from __future__ import annotations

from tests.model.package_check import found_in_package

MPI_TOOLS = """
    from mpi4py import MPI
    import numpy as np


    def allreduce(*args, **kwargs):
        return MPI.COMM_WORLD.Allreduce(*args, **kwargs)


    def mpi_avg(x):
        x = np.asarray([x], dtype=np.float32)
        buff = np.zeros_like(x)
        allreduce(x, buff, op=MPI.SUM)
        return buff[0] / MPI.COMM_WORLD.Get_size()


    def sync_params(module):
        for p in module.parameters():
            MPI.COMM_WORLD.Bcast(p.data.numpy(), root=0)


    def count_vars(module):
        return sum(np.prod(p.shape) for p in module.parameters())


    def mpi_avg_grads(module):
        for p in module.parameters():
            p.grad.numpy()[:] = mpi_avg(p.grad.numpy())
"""
CORE = """
    from torch import nn


    class MLPActorCritic(nn.Module):
        def __init__(self, obs_dim, act_dim):
            super().__init__()
            self.pi = nn.Linear(obs_dim, 256)
            self.v = nn.Linear(obs_dim, 256)

        def forward(self, x):
            return self.pi(x), self.v(x)
"""
PPO = """
    import torch
    from pkg import core
    from pkg.mpi_tools import count_vars, mpi_avg, mpi_avg_grads, sync_params


    def ppo(data, actor_critic=core.MLPActorCritic, iters=80, target_kl=0.01):
        ac = actor_critic(4, 2)
        sync_params(ac)
        counts = tuple(count_vars(module) for module in [ac.pi, ac.v])
        for i in range(iters):
            loss, info = ac(data)[0].mean(), {"kl": 0.0}
            kl = mpi_avg(info["kl"])
            if kl > 1.5 * target_kl:
                break
            loss.backward()
            mpi_avg_grads(ac.pi)
        kl = info["kl"]
        return kl, counts


    def helpers(d):
        lin = torch.nn.Linear(d, d)
        return lin, count_vars(lin)
"""


def test_helpers_of_another_file_handed_a_built_model_are_reported_at_the_call(tmp_path):
    files = {"mpi_tools.py": MPI_TOOLS, "core.py": CORE, "ppo.py": PPO}
    assert found_in_package(tmp_path, files, "ppo.py") == [("ZG109", 9), ("ZG102", 10), ("ZG107", 17)]


def test_a_model_built_from_a_class_default_is_partitioned_as_built():
    from zgen.model import check_source

    source = (
        "import copy\nfrom torch import nn\n\n\nclass AC(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.pi = nn.Linear(4, 4)\n\n\ndef sac(env, actor_critic=AC):\n    ac = actor_critic()\n"
        "    ac_targ = copy.deepcopy(ac)\n    return ac_targ\n"
    )
    assert [(f.code, f.line) for f in check_source("sac.py", source)] == [("ZG105", 13)]


def test_a_child_built_from_a_network_constructor_handed_in_is_sized_as_a_placeholder():
    from zgen.model import check_source

    source = (
        "from torch import nn\n\n\nclass SimSiam(nn.Module):\n    def __init__(self, base_encoder, dim=2048):\n"
        "        super().__init__()\n        self.encoder = base_encoder(num_classes=dim)\n"
        "        prev_dim = self.encoder.fc.weight.shape[1]\n        self.head = nn.Linear(prev_dim, dim)\n"
    )
    assert [(f.code, f.line) for f in check_source("builder.py", source)] == [("ZG102", 8)]
