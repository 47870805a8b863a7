import pytest

from zgen.errors import ZgenError
from zgen.settings import format_memory, load_settings, parse_memory, parse_size


def _write(tmp_path, body):
    p = tmp_path / "pyproject.toml"
    p.write_text("[project]\nname = 'x'\n\n[tool.zgen]\n" + body)
    return p


def test_reads_tool_zgen(tmp_path):
    s = load_settings(_write(tmp_path, 'model = "m.py:build"\nconfig = "ds.json"\nworld-size = 8\ngpu-mem = "80GiB"\n'))
    assert s.model_path == "m.py" and s.config == "ds.json" and s.world_size == 8
    assert s.gpu_mem == 80 * 2**30
    assert s.root == tmp_path.resolve()


def test_unknown_key_names_line_and_suggests(tmp_path):
    p = _write(tmp_path, 'select = ["ZG"]\nworld_size = 8\n')
    with pytest.raises(ZgenError) as e:
        load_settings(p)
    assert f"{p}:6: unknown setting `world_size`" in e.value.message
    assert "did you mean `world-size`" in e.value.message


def test_wrong_type_is_an_error(tmp_path):
    with pytest.raises(ZgenError, match="`select` must be a list of strings"):
        load_settings(_write(tmp_path, 'select = "ZG"\n'))


def test_found_from_subdirectory(tmp_path):
    _write(tmp_path, "world-size = 4\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert load_settings(cwd=sub).world_size == 4


def test_no_pyproject_gives_defaults(tmp_path):
    s = load_settings(cwd=tmp_path)
    assert s.pyproject is None and s.select == ("ZG", "ZC")


@pytest.mark.parametrize("text,value", [("80GiB", 80 * 2**30), ("1.2B", 1_200_000_000), ("5e7", 50_000_000), ("350M", 350_000_000)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "lots", "-3GB", "12 parsecs"])
def test_parse_size_rejects(text):
    with pytest.raises(ZgenError):
        parse_size(text)


def test_consumer_is_read_and_an_unknown_one_gets_a_suggestion(tmp_path):
    assert load_settings(_write(tmp_path, 'consumer = "deepspeed"\n')).consumer == "deepspeed"
    with pytest.raises(ZgenError) as e:
        load_settings(_write(tmp_path, 'consumer = "accelerat"\n'))
    assert "`consumer` must be one of deepspeed, hf, accelerate, zgen" in e.value.message
    assert "did you mean `accelerate`" in e.value.message


@pytest.mark.parametrize("value", ["80", '"80"', '"80B"'])
def test_gpu_mem_without_a_memory_unit_is_an_error(tmp_path, value):
    p = _write(tmp_path, f"gpu-mem = {value}\n")
    with pytest.raises(ZgenError) as e:
        load_settings(p)
    assert f"{p}:5:" in e.value.message and "`gpu-mem` must be a memory size with a unit" in e.value.message


@pytest.mark.parametrize("n", [80 * 2**30, 1536 * 2**20, 2**40, 3 * 2**20 + 512, 6_874_000_123, 2**20 + 1])
def test_a_size_zgen_writes_into_a_command_reads_back_as_the_same_bytes(n):
    assert parse_memory(format_memory(n)) == n
    rounded = parse_memory(format_memory(n, round_up=True))
    assert n <= rounded < n + 0.011 * 2**30  # advice never names less than is needed
