"""`check_config` end to end: findings at the right keys, fixes, world sizes, resolution, robustness."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_helpers import check, codes
from zgen.config import check_config, format_world_sizes, load_config_dict, render_resolved, rule_infos
from zgen.errors import ZgenError
from zgen.launch import LaunchFacts


def finding(report, code):
    hits = [f for f in report.findings if f.code == code]
    assert hits, f"{code} not in {codes(report)}"
    return hits[0]


def test_seed_config_resolves_at_world_size_8(repo):
    data = (repo / "examples/llama/ds_config.json").read_bytes()
    report = check_config("examples/llama/ds_config.json", data, LaunchFacts(world_size=8))
    assert [f for f in report.findings if f.severity.value == "error"] == []
    r = report.resolved
    assert (r.train_batch_size, r.train_micro_batch_size_per_gpu, r.gradient_accumulation_steps) == (16, 1, 2)
    assert r.zero.reduce_bucket_size == 50_000_000 and r.zero.stage == 3 and r.precision == "bf16"
    assert r.origin("train_batch_size").kind == "derived"
    assert "1 * 2 * 8" in r.origin("train_batch_size").detail


def test_batch_conflict_names_every_key_and_the_smallest_fix():
    text = '{\n  "train_batch_size": 256,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 8\n}'
    f = finding(check(text, world_size=4), "ZC101")
    assert (f.line, f.column, f.key) == (2, 3, "train_batch_size")
    assert f.message == ("`train_batch_size` (256) != `train_micro_batch_size_per_gpu` (4) x "
                         "`gradient_accumulation_steps` (8) x world size (4) = 128")
    assert f.help == "set `gradient_accumulation_steps` to 16"
    related = {r.line: r.message for r in f.related}
    assert "`train_micro_batch_size_per_gpu` = 4" in related[3] and "`gradient_accumulation_steps` = 8" in related[4]
    assert any("world size 4" in r.message for r in f.related)


def test_floor_division_names_the_world_size():
    f = finding(check('{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 1}', world_size=3), "ZC104")
    assert "world size (3)" in f.message and "16 // 1 // 3 = 5" in f.message
    assert f.help == "set `train_batch_size` to 15"


def test_without_world_size_lists_the_valid_ones():
    report = check('{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 1}')
    assert report.valid_world_sizes == (1, 2, 4, 8, 16)
    assert report.findings == ()
    assert report.resolved.world_size == 1
    assert report.resolved.origin("world_size").kind == "derived"


def test_no_valid_world_size_is_a_finding_with_the_keys():
    report = check('{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4}')
    assert report.valid_world_sizes == ()
    f = finding(report, "ZC902")
    assert "`train_batch_size` (30)" in f.message and "`train_micro_batch_size_per_gpu` (4)" in f.message


def test_world_size_independent_errors_do_not_empty_the_list():
    report = check('{"train_batch_size": 16, "fp16": {"enabled": true}, "bf16": {"enabled": true}}')
    assert "ZC201" in codes(report)
    assert report.valid_world_sizes == (1, 2, 4, 8, 16)


def test_auto_values_are_solved_and_explained():
    text = '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}'
    r = check(text, world_size=8).resolved
    assert r.train_batch_size == 64
    origin = r.origin("train_batch_size")
    assert origin.kind == "auto" and "forced by the other keys" in origin.detail and "HF Trainer" in origin.detail
    free = check('{"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}',
                 world_size=8).resolved
    assert free.train_micro_batch_size_per_gpu * free.gradient_accumulation_steps * 8 == 64
    assert "not determined" in free.origin("train_micro_batch_size_per_gpu").detail


def test_auto_that_cannot_fit_is_reported_with_auto_in_the_message():
    report = check('{"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}',
                   world_size=3)
    f = finding(report, "ZC101")
    assert '`train_micro_batch_size_per_gpu` ("auto")' in f.message
    assert report.resolved is None


def test_hf_zero3_config_is_clean_and_resolves_bucket_autos_from_hidden_size(repo):
    from zgen.launch import ModelShape

    data = (repo / "examples/configs/hf_zero3_auto.json").read_bytes()
    model = ModelShape(params=1_235_814_400, hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=128256)
    report = check_config("hf.json", data, LaunchFacts(world_size=8, model=model))
    assert report.findings == ()
    assert report.resolved.zero.reduce_bucket_size == 2048 * 2048
    assert report.resolved.zero.prefetch_bucket_size == int(0.9 * 2048 * 2048)
    assert report.resolved.zero.offload_param.device == "cpu"


def test_typo_in_a_strict_section_and_in_the_top_level(repo):
    report = check((repo / "examples/configs/zero3_offload_typos.json").read_bytes(), world_size=8)
    f = finding(report, "ZC010")
    assert (f.line, f.key, f.help) == (7, "zero_optimization.offload_params", "did you mean `zero_optimization.offload_param`?")
    g = finding(check('{"train_batch_size": 8, "zero_optimisation": {"stage": 3}}', world_size=1), "ZC011")
    assert g.severity.value == "warning" and "zero_optimization" in g.help


def test_misplaced_key_says_where_it_belongs():
    f = finding(check('{"train_batch_size": 8, "stage3_max_live_parameters": 1e9}', world_size=1), "ZC011")
    assert "zero_optimization.stage3_max_live_parameters" in f.help


def test_five_e_seven_is_a_whole_number_but_one_point_five_is_not():
    assert "ZC014" not in codes(check('{"train_batch_size": 8, "zero_optimization": {"reduce_bucket_size": 5e7}}', world_size=1))
    f = finding(check('{"train_batch_size": 8, "zero_optimization": {"reduce_bucket_size": 2.5}}', world_size=1), "ZC014")
    assert f.severity.value == "error"
    old = finding(check('{"train_batch_size": 8, "zero_optimization": {"reduce_bucket_size": 2.5}}', world_size=1,
                        deepspeed="0.14.4"), "ZC014")
    assert old.severity.value == "warning" and "truncates it to 2" in old.message


def test_defaults_follow_the_deepspeed_version():
    text = '{"train_batch_size": 8, "zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}'
    new = check(text, world_size=1).resolved
    old = check(text, world_size=1, deepspeed="0.19.2").resolved
    assert (new.gradient_clipping, old.gradient_clipping) == (1.0, 0.0)
    assert new.zero.offload_param.pin_memory is True and old.zero.offload_param.pin_memory is False
    assert "ZC016" in codes(check('{"train_batch_size": 8, "amp": {"enabled": true}}', world_size=1))
    assert "ZC016" not in codes(check('{"train_batch_size": 8, "amp": {"enabled": true}}', world_size=1, deepspeed="0.18.0"))


def test_bad_version_is_an_error():
    with pytest.raises(ZgenError):
        check('{"train_batch_size": 8}', deepspeed="banana")


def test_autos_that_accelerate_fills_are_not_findings():
    # accelerate's own ZeRO-3 offload template leaves these to its plugin settings
    text = ('{"train_batch_size": 8, "zero_optimization": {"stage": 3, '
            '"offload_param": {"device": "auto"}, "offload_optimizer": {"device": "auto"}, '
            '"stage3_gather_16bit_weights_on_model_save": "auto"}}')
    report = check(text, world_size=1)
    assert "ZC020" not in codes(report)
    assert report.resolved.zero.offload_param.device == "none"  # accelerate's default


def test_stage_auto_means_zero_off_for_raw_deepspeed():
    report = check('{"train_batch_size": 8, "zero_optimization": {"stage": "auto"}}', world_size=1,
                   consumer="deepspeed")
    f = finding(report, "ZC022")
    assert "ZeRO off" in f.message and f.severity.value == "warning"
    assert report.resolved.zero.stage == 0


def test_stage_auto_is_accelerates_zero_stage_under_hf():
    report = check('{"train_batch_size": 8, "zero_optimization": {"stage": "auto"}}', world_size=1)
    assert report.findings == ()
    assert report.resolved.zero.stage == 2  # DeepSpeedPlugin's default `zero_stage`
    assert "accelerate" in report.resolved.origin("zero_optimization.stage").detail


def test_resolved_render_lists_every_value_with_an_origin(repo):
    data = (repo / "examples/llama/ds_config.json").read_bytes()
    text = render_resolved(check(data, world_size=8).resolved)
    assert "train_batch_size" in text and "derived:" in text and "config: written as" in text
    for line in text.splitlines():
        assert len(line.split()) >= 3, line


def test_world_sizes_format():
    assert format_world_sizes(tuple(range(1, 1025))) == "every world size from 1 to 1024"
    assert format_world_sizes(tuple(range(8, 1025, 8))).startswith("multiples of 8")
    assert format_world_sizes((1, 2, 4)) == "1, 2, 4"
    assert format_world_sizes(()) == "none"


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfe{}", b'{"a": "\xe9"}', b"", b"   ", b"[]", b"42", b'"x"', b"null", b"{" * 3000, b'{"a": 1e999}',
     b'{"train_batch_size": 99999999999999999999999999999999999}', b'{"zero_optimization": 7}',
     b'{"optimizer": "adam"}', b'{"optimizer": {"type": 3, "params": []}}', b'{"scheduler": {"params": null}}',
     b'{"fp16": {"enabled": [1]}, "bf16": "on"}', b'{"zero_optimization": {"offload_param": {"device": ["cpu"]}}}'],
)
def test_junk_never_raises(data):
    report = check_config("x.json", data, LaunchFacts(world_size=2))
    for f in report.findings:
        assert f.line >= 1 and f.column >= 1 and f.code.startswith("ZC")


def test_non_utf8_points_at_the_byte():
    f = finding(check(b'{\n  "a": "\xe9"\n}', world_size=1), "ZC001")
    assert (f.line, f.column) == (2, 9)


_KEYS = ["train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "zero_optimization",
         "stage", "offload_param", "device", "fp16", "bf16", "enabled", "optimizer", "type", "params", "lr",
         "scheduler", "stage3_prefetch_bucket_size", "zero_hpz_partition_size", "sub_group_size", "auto"]
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**12) | st.floats(allow_nan=False) | st.sampled_from(["auto", "cpu", "nvme", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=5),
    max_leaves=20,
)


# (derandomized: the same 150 configs on every run, so CI's time does not depend on which configs a run draws; one
# drawn set kept a CI run in this test for over a quarter of an hour, where runs took seconds before)
@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.dictionaries(st.sampled_from(_KEYS), _json, max_size=6), st.sampled_from([None, 1, 3, 8]))
def test_random_configs_never_raise(config, world):
    import json

    report = check_config("r.json", json.dumps(config).encode(), LaunchFacts(world_size=world))
    assert all(f.code.startswith("ZC") for f in report.findings)


def test_json_is_parsed_as_its_reader_parses_it():
    """hjson's leniency (a trailing comma, comments) is DeepSpeed's own reader's; HF Trainer, accelerate and zgen
    call `json.load`, which stops on it."""
    text = '{"train_batch_size": 8,\n "zero_optimization": {"stage": 3,},\n}'
    for reader in ("hf", "accelerate", "zgen"):
        report = check(text, consumer=reader)
        f = finding(report, "ZC002")
        assert (f.line, f.column) == (2, 35) and "`json.load`" in f.message and report.resolved is None
    assert "ZC002" not in codes(check(text, consumer="deepspeed"))
    assert "ZC002" not in codes(check(text, path="ds.hjson"))  # an .hjson file without a named reader: DeepSpeed's
    assert "ZC002" in codes(check(text, path="ds.hjson", consumer="hf"))


def test_user_rule_file_adds_codes_and_runs(repo):
    policy = str(repo / "examples/configs/org_policy.toml")
    report = check('{"train_batch_size": 8, "fp16": {"enabled": true}}', [policy], world_size=12)
    assert {"ZC801", "ZC802", "ZC803"} <= set(codes(report))
    assert {"ZC801", "ZC802", "ZC803"} <= {i.code for i in rule_infos([policy])}
    clean = check((repo / "examples/configs/clean_zero3_bf16.hjson").read_bytes(), [policy], path="clean.hjson")
    assert clean.valid_world_sizes == (8, 16, 32) and clean.findings == ()


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('[[rule]]\ncode = "ZC850"\nname = "x"\nseverity = "error"\nsummary = "s"\nrequire = "stage == 3"\nmessage = "m"\n',
         "`stage` is not a config key"),
        ('[[rule]]\ncode = "ZC850"\nname = "x"\nseverity = "error"\nsummary = "s"\nrequire = "zero_optimization.stage +"\nmessage = "m"\n',
         "expected a value"),
        ('[[rule]]\ncode = "ZC101"\nname = "x"\nseverity = "error"\nsummary = "s"\nrequire = "true"\nmessage = "m"\n',
         "already defined"),
        ('[[rule]]\ncode = "X1"\n', "not of the form ZC123"),
        ('[[rule]]\ncode = "ZC850"\nname = "x"\nseverity = "fatal"\nsummary = "s"\nrequire = "true"\nmessage = "m"\n',
         "severity"),
        ("not toml = = =", "invalid TOML"),
    ],
)
def test_bad_user_rule_file_is_a_clear_error(tmp_path, body, needle):
    path = tmp_path / "policy.toml"
    path.write_text("# org rules\n" + body)
    with pytest.raises(ZgenError) as e:
        check('{"train_batch_size": 8}', [str(path)], world_size=1)
    assert needle in str(e.value) and str(path) in str(e.value)


def test_rule_error_names_the_line(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('# x\n\n[[rule]]\ncode = "ZC851"\nname = "x"\nseverity = "error"\nsummary = "s"\n'
                    'require = "zero_optimization.stage == \\"3\\""\nmessage = "m"\n')
    with pytest.raises(ZgenError) as e:
        check('{"train_batch_size": 8}', [str(path)], world_size=1)
    assert f"{path}:8: ZC851 `require`: cannot compare int with str" in str(e.value)


def test_rule_infos_cover_loader_and_solver_codes():
    infos = {i.code: i for i in rule_infos()}
    assert {"ZC001", "ZC002", "ZC003", "ZC010", "ZC011", "ZC101", "ZC302", "ZC601", "ZC901", "ZC902"} <= set(infos)
    assert "## Constraint" in infos["ZC101"].doc and "train_batch_size ==" in infos["ZC101"].doc
    assert "activations" in infos["ZC601"].doc and "12" in infos["ZC601"].doc
    assert all(i.summary and i.doc for i in infos.values())


def test_load_config_dict(tmp_path, repo):
    assert load_config_dict(str(repo / "examples/configs/clean_zero3_bf16.hjson"))["train_batch_size"] == 64
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": }')
    with pytest.raises(ZgenError) as e:
        load_config_dict(str(bad))
    assert f"{bad}:1:" in str(e.value)


def test_import_does_not_load_torch_or_z3():
    code = ("import sys, zgen.config; from zgen.config import rule_infos; rule_infos(); "
            "print('torch' in sys.modules, 'z3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_checking_a_config_never_imports_torch(repo):
    code = ("import sys; from zgen.config import check_config; from zgen.launch import LaunchFacts; "
            "check_config('c', open('examples/configs/batch_mismatch.json','rb').read(), LaunchFacts(world_size=4)); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("hf_zero3_auto.json", set()),
        ("clean_zero3_bf16.hjson", set()),
        ("batch_mismatch.json", set()),
        ("zero3_offload_typos.json", {"ZC010", "ZC403", "ZC308", "ZC310", "ZC018", "ZC019", "ZC407"}),
        ("zero2_leftovers.json", {"ZC204", "ZC011", "ZC401", "ZC306", "ZC015", "ZC407"}),
        ("precision_clash.json", {"ZC201", "ZC503", "ZC501", "ZC502", "ZC402"}),
    ],
)
def test_example_configs_report_what_their_readme_says(repo, name, expected):
    """Read as HF Trainer's (the default with no training script); an .hjson file as DeepSpeed's own."""
    report = check((repo / "examples/configs" / name).read_bytes(), world_size=8, path=name)
    assert set(codes(report)) == expected


def test_batch_mismatch_example_fails_at_other_world_sizes(repo):
    data = (repo / "examples/configs/batch_mismatch.json").read_bytes()
    assert codes(check(data, world_size=4)) == ["ZC101"]
    assert check(data).valid_world_sizes == (8,)


def test_rules_that_hold_alone_but_not_together_are_a_conflict(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text("\n".join(
        f'[[rule]]\ncode = "ZC86{i}"\nname = "r{i}"\nseverity = "error"\nsummary = "s"\nrequire = "{req}"\nmessage = "m"\n'
        for i, req in enumerate(["train_micro_batch_size_per_gpu >= 4", "train_micro_batch_size_per_gpu <= 2"])))
    report = check('{"train_batch_size": 64, "train_micro_batch_size_per_gpu": "auto"}', [str(path)], world_size=8)
    f = finding(report, "ZC901")
    assert "`train_micro_batch_size_per_gpu`" in f.message
    assert "ZC860" not in codes(report) and "ZC861" not in codes(report)
    assert report.resolved is None


def test_world_size_must_be_positive():
    with pytest.raises(ZgenError):
        check('{"train_batch_size": 8}', world_size=0)


def test_a_comment_key_is_silent_where_deepspeed_ignores_it():
    assert check('{"_comment": "7B run", "train_batch_size": 8, "optimizer": {"_note": "x", "type": "AdamW"}}',
                 world_size=1).findings == ()


def test_a_comment_key_in_a_strict_section_is_an_error_without_a_guess():
    f = finding(check('{"train_batch_size": 8, "zero_optimization": {"stage": 3, "_comet": "x"}}', world_size=1),
                "ZC010")
    assert "did you mean" not in (f.help or "") and "`//` comment" in f.help


def test_compile_is_checked_against_deepspeeds_model():
    f = finding(check('{"train_batch_size": 8, "compile": {"disable": false, "backend": "inductor"}}', world_size=1),
                "ZC010")
    assert f.key in ("compile.disable", "compile.backend")
    assert check('{"train_batch_size": 8, "compile": {"deepcompile": true}}', world_size=1).findings == ()


def test_strict_sections_older_than_the_model_data_stay_opaque():
    assert check('{"train_batch_size": 8, "compile": {"backend": "inductor"}}', world_size=1,
                 deepspeed="0.16.0").findings == ()


def test_timers_throughput_and_tensor_parallel_are_strict():
    report = check('{"train_batch_size": 8, "timers": {"throughput": {"enabled": true, "sync": true}},'
                   ' "tensor_parallel": {"autotp_size": 2, "tp": {"tp_size": 2, "tp_sise": 1}}}', world_size=1)
    assert sorted(f.key for f in report.findings if f.code == "ZC010") == ["tensor_parallel.tp.tp_sise",
                                                                           "timers.throughput.sync"]


def test_an_unknown_strict_key_set_to_auto_is_dropped_not_rejected():
    f = finding(check('{"train_batch_size": 8, "zero_optimization": {"stage": 3, "reduce_bucket_siz": "auto"}}',
                      world_size=1), "ZC011")
    assert f.severity.value == "warning" and "reduce_bucket_size" in f.help


def test_raw_deepspeed_example_reports_what_its_readme_says(repo):
    data = (repo / "examples/configs/raw_deepspeed_auto.json").read_bytes()
    assert sorted(codes(check(data, world_size=8, consumer="deepspeed"))) == ["ZC020", "ZC020", "ZC022", "ZC405",
                                                                              "ZC406"]
    assert sorted(codes(check(data, world_size=8))) == ["ZC405", "ZC407"]


def test_a_section_set_to_auto_fails_where_deepspeed_unpacks_it_and_is_dropped_inside_a_model():
    assert "ZC020" in codes(check('{"train_batch_size": 8, "zero_optimization": "auto"}', world_size=1))
    assert "ZC020" in codes(check('{"train_batch_size": 8, "fp16": "auto"}', world_size=1))
    nested = check('{"train_batch_size": 8, "zero_optimization": {"stage": 3, "offload_optimizer": "auto"}}',
                   world_size=1)
    assert codes(nested) == ["ZC022"]
    assert codes(check('{"train_batch_size": 8, "tensorboard": "auto"}', world_size=1)) == ["ZC022"]
