"""Methods of a tensor on a name that held a model, and flags on a parameter object, run nothing and read no values.

* `crt_net = crt_net.state_dict()` rebinds a model argument to its state dict; `crt_net[k].size()` in a loop over the
  keys is a tensor's size, no call of a submodule: a loop over those keys runs no model (BasicSR's key check).
* `param.is_tied` / `param.is_sharded` on a parameter a walk of a handed model yields is a flag a library keeps on the
  parameter object, not its values (nanotron's tied-parameter marking); `param.data.norm()` there is a read (ZG109).
"""

from __future__ import annotations

from tests.model.package_check import found_in_package

KEYS = """
class BaseModel:
    def get_bare_model(self, net):
        return net

    def print_different_keys(self, crt_net, load_net, strict=True):
        crt_net = self.get_bare_model(crt_net)
        crt_net = crt_net.state_dict()
        crt_net_keys = set(crt_net.keys())
        load_net_keys = set(load_net.keys())
        if crt_net_keys != load_net_keys:
            for v in sorted(list(crt_net_keys - load_net_keys)):
                print(v)
        if not strict:
            common_keys = crt_net_keys & load_net_keys
            for k in common_keys:
                if crt_net[k].size() != load_net[k].size():
                    load_net[k + ".ignore"] = load_net.pop(k)
"""

FLAGS = """
def mark_tied_parameters(model):
    for module_name, module in model.named_modules():
        for param_name, param in module.named_parameters(recurse=False):
            if param.is_tied or param.is_sharded:
                continue
            print(param_name, param.data.norm())
"""


def test_a_state_dict_entrys_size_in_a_loop_over_its_keys_runs_no_model(tmp_path):
    assert found_in_package(tmp_path, {"base.py": KEYS}, "base.py", prefix="ZG2") == []


def test_flags_on_a_parameter_object_are_no_value_reads(tmp_path):
    assert found_in_package(tmp_path, {"tie.py": FLAGS}, "tie.py", prefix="ZG1") == [("ZG109", 7)]
