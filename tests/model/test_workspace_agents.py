"""An agent a workspace builds with a factory (`hydra.utils.instantiate(cfg.agent)`, `make_agent(spec, cfg)`) runs its
networks when asked for an action.

No file tells the agent's class, but `self.agent.act(obs)` is how an agent answers with its actor: an evaluation
loop that runs until this rank's episode is done (`while not done:`, `while not time_step.last():`) calls it a number
of times the rank's episodes decide (ZG204). An object of a class the workspace constructs by name (`self.kmeans =
KMeans(8)`) is that class's, not an agent: its `predict` in a loop over this rank's data is left alone.
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

WORKSPACE = """
import hydra
import torch
from sklearn.cluster import KMeans


def make_agent(obs_spec, cfg):
    cfg.obs_shape = obs_spec.shape
    return hydra.utils.instantiate(cfg)


class Workspace:
    def __init__(self, cfg, env):
        self.cfg = cfg
        self.env = env
        self.agent = hydra.utils.instantiate(cfg.agent)
        self.eval_agent = make_agent(env.observation_spec(), cfg.agent)
        self.kmeans = KMeans(8)

    def evaluate(self):
        obs = self.env.reset()
        done = False
        while not done:
            action = self.agent.act(obs, sample=False)
            obs, reward, done, _ = self.env.step(action)

    def eval(self):
        time_step = self.env.reset()
        while not time_step.last():
            with torch.no_grad():
                action = self.eval_agent.act(time_step.observation, eval_mode=True)
            time_step = self.env.step(action)

    def cluster(self, loader):
        for batch in loader:
            labels = self.kmeans.predict(batch)
            if labels.max() > 4:
                break
"""


def test_a_factory_built_agent_acting_until_this_ranks_episode_ends(tmp_path):
    found = found_in_package(tmp_path, {"train.py": WORKSPACE}, "train.py", prefix="ZG2")
    assert found == [("ZG204", 23), ("ZG204", 29)]
