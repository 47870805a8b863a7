"""What an environment answers a policy decides how often, and whether, the policy's networks run on this rank.

* A field read by key from the record an environment's step returns (`ret = info[0]["episodic_return"]`) is there
  only when this rank's episode ended: a loop that leaves on `ret is not None` calls the policy a number of times
  the rank's episode decides (ZG204). A `None` test of a submodule's own output field stays a test of which value a
  name holds.
* A method of an object an evaluation loop is handed, named for the action it picks (`dqn.act_e_greedy(s)`), runs
  the object's network like `act` or `predict` does.
* `s, r, done, info = env.step(a)` of an environment the function builds or is given: a test of `done` that
  decides whether a network runs (`R = 0.0 if done else model.v(s)`) differs per rank (ZG203).
* `loss.backward()` under a test of what the network returned (`if approx_kl <= 1.5 * target_kl:`) runs on some
  ranks only, and the others wait in its gradient reduce-scatter (ZG203). A test of a setting is every rank's.
"""

from __future__ import annotations

from tests.model.package_check import TINY_NET, found_in_package

BASE = """
class BaseAgent:
    def __init__(self, config):
        self.config = config

    def eval_step(self, state):
        raise NotImplementedError

    def eval_episode(self):
        env = self.config.eval_env
        state = env.reset()
        while True:
            action = self.eval_step(state)
            state, reward, done, info = env.step(action)
            ret = info[0]["episodic_return"]
            if ret is not None:
                break
        return ret
"""

DQN = """
from .base import BaseAgent


class DQNAgent(BaseAgent):
    def __init__(self, config):
        BaseAgent.__init__(self, config)
        self.network = config.network_fn()
        self.optimizer = config.optimizer_fn(self.network.parameters())

    def eval_step(self, state):
        return self.network(state)["q"].argmax(-1)
"""

OWN_FIELD = """
import torch.nn as nn

""" + TINY_NET + """

class Decoder:
    def __init__(self):
        self.net = Net()

    def run(self, xs):
        for x in xs:
            out = {"aux": self.net(x)}
            aux = out["aux"]
            if aux is not None:
                break
"""

EVALUATE = """
def test(args, dqn, env):
    rewards = []
    done = True
    for _ in range(args.evaluation_episodes):
        while True:
            if done:
                state, reward_sum, done = env.reset(), 0, False
            action = dqn.act_e_greedy(state)
            state, reward, done = env.step(action)
            reward_sum += reward
            if done:
                rewards.append(reward_sum)
                break
    return rewards
"""

ROLLOUT = """
import gym
import torch
import torch.nn as nn


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_pi = nn.Linear(4, 2)
        self.fc_v = nn.Linear(4, 1)

    def pi(self, x):
        return self.fc_pi(x).softmax(-1)

    def v(self, x):
        return self.fc_v(x)


def train(steps):
    model = ActorCritic()
    env = gym.make("CartPole-v1")
    s = env.reset()
    for t in range(steps):
        prob = model.pi(torch.from_numpy(s).float())
        a = prob.argmax().item()
        s_prime, r, done, info = env.step(a)
        s = s_prime
    R = 0.0 if done else model.v(s).item()
    scale = 0.5 if steps > 10 else model.v(s).item()
    return R, scale
"""

UPDATE = """
import torch
import torch.nn as nn

""" + TINY_NET + """

class Agent:
    def __init__(self, config):
        self.config = config
        self.network = Net()
        self.actor_opt = torch.optim.Adam(self.network.parameters())

    def step(self, batches):
        for entry in batches:
            prediction = self.network(entry.state)
            policy_loss = -prediction.mean()
            approx_kl = (entry.logp - prediction).mean()
            if approx_kl <= 1.5 * self.config.target_kl:
                policy_loss.backward()
            if self.config.shared_repr:
                policy_loss.backward()
"""


def test_a_loop_leaving_when_the_episode_record_holds_a_return_is_a_data_exit(tmp_path):
    found = found_in_package(tmp_path, {"base.py": BASE, "dqn.py": DQN}, "base.py", prefix="ZG2")
    assert found == [("ZG204", 16)]


def test_a_none_test_of_a_field_of_a_networks_own_output_stays_clean(tmp_path):
    assert found_in_package(tmp_path, {"dec.py": OWN_FIELD}, "dec.py", prefix="ZG2") == []


def test_an_action_picking_method_of_a_handed_agent_runs_its_network(tmp_path):
    assert found_in_package(tmp_path, {"evaluate.py": EVALUATE}, "evaluate.py", prefix="ZG2") == [("ZG204", 12)]


def test_an_environments_done_deciding_whether_the_value_head_runs_is_a_gate(tmp_path):
    assert found_in_package(tmp_path, {"a3c.py": ROLLOUT}, "a3c.py", prefix="ZG2") == [("ZG203", 29)]


def test_a_backward_run_only_under_a_test_of_the_networks_output_is_a_gate(tmp_path):
    assert found_in_package(tmp_path, {"ppo.py": UPDATE}, "ppo.py", prefix="ZG2") == [("ZG203", 25)]
