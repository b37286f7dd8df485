"""Task files are checked: a misspelt key or a wrong type in any section is a one-line error."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from worldmodel import registry
from worldmodel.cli import main
from worldmodel.config import check_table
from worldmodel.errors import WorldModelError
from worldmodel.tasks import EVALUATE, TASKS_DIR, load_task

TASK_FILES = sorted(TASKS_DIR.glob("*.toml"))


def _tables(config: dict, prefix: str = ""):
    """Every table of a parsed TOML file as (dotted name, table), sub-tables included."""
    for key, value in config.items():
        if isinstance(value, dict):
            name = f"{prefix}{key}"
            yield name, value
            yield from _tables(value, name + ".")


def _cases():
    for path in TASK_FILES:
        for section, table in _tables(tomllib.loads(path.read_text())):
            if table:
                yield pytest.param(path, section, id=f"{path.stem}:{section}")


def _write_with_key(path: Path, out: Path, section: str, key: str, value: str) -> None:
    """Copy a task file with ``key = value`` at the top of ``[section]`` (replacing the key if it is set)."""
    lines = path.read_text().splitlines()
    at = lines.index(next(ln for ln in lines if ln.split("#")[0].strip() == f"[{section}]"))
    end = next((i for i in range(at + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    body = [ln for ln in lines[at + 1:end] if ln.split("=")[0].strip() != key]
    lines[at + 1:end] = [f"{key} = {value}", *body]
    out.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: p.stem)
def test_every_shipped_task_passes(path):
    load_task(path)


@pytest.mark.parametrize("path,section", list(_cases()))
def test_a_misspelt_key_in_any_section_is_named_with_a_suggestion(tmp_path, path, section):
    table = dict(_tables(tomllib.loads(path.read_text())))[section]
    key = next(k for k, v in table.items() if not isinstance(v, dict))
    typo = key + "s"
    bad = tmp_path / path.name
    _write_with_key(path, bad, section, typo, repr(table[key]).replace("'", '"').replace("True", "true")
                    .replace("False", "false"))
    with pytest.raises(WorldModelError) as err:
        load_task(bad)
    msg = str(err.value)
    assert str(bad) in msg and f"[{section}]" in msg and repr(typo) in msg, msg
    assert f"did you mean {key!r}" in msg, msg
    assert "\n" not in msg


def test_wrong_types_are_errors(tmp_path):
    src = TASKS_DIR / "toy-dfa.toml"
    bad = tmp_path / "t.toml"
    for section, key, value, want in [("train", "steps", '"many"', "[train] steps must be an integer"),
                                      ("model", "n_layer", "2.5", "[model] n_layer must be an integer"),
                                      ("train", "lr", "true", "[train] lr must be a number"),
                                      ("evaluate", "epsilon", '"small"', "[evaluate] epsilon must be a number"),
                                      ("world", "n_states", "[8]", "[world] n_states must be an integer")]:
        _write_with_key(src, bad, section, key, value)
        with pytest.raises(WorldModelError, match=None) as err:
            load_task(bad)
        assert want in str(err.value), str(err.value)
    # an integer is a fine float
    _write_with_key(src, bad, "train", "weight_decay", "0")
    assert load_task(bad).section("train")["weight_decay"] == 0


def test_unknown_sections_top_level_keys_and_domains(tmp_path):
    bad = tmp_path / "t.toml"
    text = (TASKS_DIR / "toy-dfa.toml").read_text()
    bad.write_text(text.replace("[train]", "[trian]"))
    with pytest.raises(WorldModelError, match=r"unknown top-level key or section 'trian' \(did you mean 'train'\?\)"):
        load_task(bad)
    bad.write_text("sed = 1\n" + text)
    with pytest.raises(WorldModelError, match="did you mean 'seed'"):
        load_task(bad)
    bad.write_text(text.replace('domain = "toy"', 'domain = "othelo"'))
    with pytest.raises(WorldModelError, match="unknown domain 'othelo' \\(did you mean 'othello'\\?\\)"):
        load_task(bad)
    bad.write_text(text.replace("[train]", "[capabilities]\npairs = 3\n[train]"))  # navigation's, not toy's
    with pytest.raises(WorldModelError, match="unknown top-level key or section 'capabilities'"):
        load_task(bad)


def test_the_cli_stops_with_one_line_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "typo.toml"
    _write_with_key(TASKS_DIR / "toy-dfa.toml", bad, "model", "n_layers", "8")
    out = tmp_path / "ck"
    assert main(["train", str(bad), "--out", str(out), "--steps", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("worldmodel: error: task ") and "[model] unknown key 'n_layers'" in err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_evaluate_schema_is_the_settings_dataclass():
    from worldmodel.settings import Settings, metric_settings

    # the dataclass's fields, epsilon, and the keys registered metrics add (the inductive-bias probe's ib_*)
    assert set(EVALUATE) == {f.name for f in dataclasses.fields(Settings)} - {"extra"} | {"epsilon"} | set(
        metric_settings())
    assert {"ib_tasks", "ib_finetune"} <= set(metric_settings())


def test_train_schema_is_the_train_config_dataclass():
    from worldmodel.tasks import TRAIN
    from worldmodel.training import TrainConfig

    assert set(TRAIN) == {f.name for f in dataclasses.fields(TrainConfig)} - {"seed"}
    assert TRAIN["steps"] is int and TRAIN["lr"] is float and TRAIN["compile"] is bool and TRAIN["keep"] is str


def test_gpt2_config_refuses_unknown_keys():
    from worldmodel.models import Vocabulary, gpt2_config

    with pytest.raises(TypeError):
        gpt2_config(Vocabulary(["a", "b"]), n_layers=8)


def test_a_world_without_a_schema_is_told_where_keys_go(tmp_path, monkeypatch):
    from worldmodel.worlds.toy import ToyDomain

    monkeypatch.setattr(ToyDomain, "schema", {"world": {}, "data": {}})
    with pytest.raises(WorldModelError, match=r"\[world\] unknown key 'n_states' "
                                              r"\(worldmodel.worlds.toy.ToyDomain.schema declares no \[world\] keys\)"):
        load_task("toy-dfa")


def test_check_table_nested_and_no_close_match():
    with pytest.raises(WorldModelError, match=r"\[data.walks\] unknown key 'zzz' \(known: n\)"):
        check_table("task x", "data", {"walks": {"zzz": 1}}, {"walks": {"n": int}})
    with pytest.raises(WorldModelError, match=r"\[data.walks\] must be a table"):
        check_table("task x", "data", {"walks": 3}, {"walks": {"n": int}})


def test_registry_lists_every_world_once():
    names = [w.name for w in registry.WORLDS]
    assert len(names) == len(set(names))
    for name in names:
        cls = registry.domain_class(name)
        assert all(isinstance(s, dict) for s in cls.schema.values()), name
    for path in TASK_FILES:
        assert tomllib.loads(path.read_text())["domain"] in names
    import importlib

    for module in registry.command_modules():
        assert callable(importlib.import_module(module).register)
