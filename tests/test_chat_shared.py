"""What the LLM commands share: the report of a run in words and the command-line helpers."""

import argparse
import json
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from worldmodel.chat import ChatReport
from worldmodel.commands.common import add_chat_run_arguments, chat_label, load_domain_task, out_folder
from worldmodel.errors import WorldModelError
from worldmodel.results import MetricResult
from worldmodel.worlds.seating.protocol import ProtocolSettings, SeatingReport
from worldmodel.worlds.textworld.llm import ProbeReport, ProbeSettings


@dataclass
class _Settings:
    states: int = 3
    names: tuple[str, ...] = ("a", "b")


def _report(cls=ChatReport, settings=None):
    m = MetricResult("x", 0.5, 0.25, 2, 1, 2, {"why": 1})
    trials = {"x": [{"trial": 0, "status": "ok", "prompts": ["p1", "p2"], "score": 1.0},
                    {"trial": 1, "status": "skipped", "reason": "why"}],
              "y": [{"trial": 0, "status": "ok", "prompts": [], "answers": [[True, None]]}]}
    return cls(settings or _Settings(), {"backend": "b", "model": "m"}, {"x": m}, {"x": 3}, {"x": 8}, trials)


def test_summary_holds_settings_backend_and_each_metric_with_its_answer_counts():
    out = _report().summary()
    assert list(out) == ["settings", "backend", "metrics"]
    assert out["settings"] == {"states": 3, "names": ("a", "b")}  # the base class writes the settings as they are
    assert out["backend"] == {"backend": "b", "model": "m"}
    assert out["metrics"] == {"x": {"mean": 0.5, "stderr": 0.25, "n": 2, "n_failed": 1, "n_groups": 2,
                                    "failures": {"why": 1}, "n_unparseable": 3, "n_answers": 8}}
    assert list(out["metrics"]["x"])[-2:] == ["n_unparseable", "n_answers"]


def test_the_worlds_reports_differ_only_in_their_settings():
    seating = _report(SeatingReport, ProtocolSettings(metrics=("capability",))).summary()
    assert seating["settings"]["metrics"] == ["capability"]  # a list, as results.json always had it
    assert seating["metrics"] == _report().summary()["metrics"]
    probe = _report(ProbeReport, ProbeSettings(states=4)).summary()
    assert probe["settings"] == {"states": 4, "samples": 5, "max_prefix": 24, "seed": 0}
    assert "trials" not in repr(_report(ProbeReport, ProbeSettings()))


def test_write_trials_writes_one_line_per_trial_without_prompts_and_replaces_the_file(tmp_path):
    path = tmp_path / "trials.jsonl"
    path.write_text("old\n" * 10)
    _report().write_trials(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [{"metric": "x", "trial": 0, "status": "ok", "score": 1.0},
                     {"metric": "x", "trial": 1, "status": "skipped", "reason": "why"},
                     {"metric": "y", "trial": 0, "status": "ok", "answers": [[True, None]]}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trials.jsonl"]


def test_load_domain_task_names_the_commands_that_refuse_another_domain():
    assert load_domain_task("seating-tiny", "seating", ("llm-eval",)).name == "seating-tiny"
    with pytest.raises(WorldModelError, match=r"^task seating-tiny is a 'seating' task; reconstruct needs a "
                                              r"navigation task$"):
        load_domain_task("seating-tiny", "navigation", ("reconstruct",))
    with pytest.raises(WorldModelError, match=r"; textworld-agent and textworld-probe need a textworld task$"):
        load_domain_task("seating-tiny", "textworld", ("textworld-agent", "textworld-probe"))


def test_out_folder_refuses_a_file_and_creates_nothing(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(WorldModelError, match="exists and is not a folder"):
        out_folder(str(tmp_path / "f"))
    assert out_folder(str(tmp_path / "new" / "d")) == tmp_path / "new" / "d"
    assert not (tmp_path / "new").exists()


def test_chat_label_names_a_local_model_by_its_folder():
    inner = SimpleNamespace(backend="hf", model="/some/where/tiny-chat")
    assert chat_label(inner, SimpleNamespace(backend="hf")) == "hf:tiny-chat"
    inner = SimpleNamespace(backend="openai", model="org/model-7b")
    assert chat_label(inner, SimpleNamespace(backend="openai")) == "openai:org/model-7b"


def test_run_arguments_seed_out_and_progress():
    p = argparse.ArgumentParser()
    add_chat_run_arguments(p, "folder for it", seed_help="seed of it")
    args = p.parse_args(["--out", "d"])
    assert (args.seed, args.out, args.no_progress) == (0, "d", False)
    assert p.parse_args(["--out", "d", "--seed", "5", "--no-progress"]).seed == 5
    with pytest.raises(SystemExit):
        p.parse_args([])  # --out is required
    assert "seed of it" in p.format_help() and "folder for it" in p.format_help()


class _Echo:
    """Answers each prompt with itself; records every batch it is asked."""

    def __init__(self):
        self.batches = []

    def ask(self, prompts):
        self.batches.append(list(prompts))
        return [f"re:{p}" for p in prompts]

    def describe(self):
        return {"backend": "echo", "model": ""}


def test_ask_sends_the_planned_prompts_in_one_batch_and_scores_each_trial_with_its_responses():
    trials = {"x": [{"trial": 0, "status": "ok", "key": "0", "prompts": ["a", "b"]},
                    {"trial": 1, "status": "skipped", "key": "1", "reason": "why", "prompts": ["never"]},
                    {"trial": 2, "status": "ok", "key": "2", "prompts": ["c"]}],
              "y": [{"trial": 0, "status": "ok", "key": "0", "prompts": ["d", "e", "f"]}]}
    seen = []

    def score(metric, trial, responses):
        seen.append((metric, trial["trial"], responses))
        trial["score"] = float(len(responses) == 1)
        return len(responses) - 1  # the unparseable count it reports

    backend = _Echo()
    rep = ChatReport.ask(backend, _Settings(), trials, score)
    assert backend.batches == [["a", "b", "c", "d", "e", "f"]]
    assert seen == [("x", 0, ["re:a", "re:b"]), ("x", 2, ["re:c"]), ("y", 0, ["re:d", "re:e", "re:f"])]
    assert rep.unparseable == {"x": 1, "y": 2} and rep.answers == {"x": 3, "y": 3}
    assert (rep.metrics["x"].mean, rep.metrics["x"].n, rep.metrics["x"].n_failed) == (0.5, 2, 1)
    assert rep.metrics["y"].mean == 0.0 and rep.backend == {"backend": "echo", "model": ""}
    assert rep.trials is trials and isinstance(ChatReport.ask(_Echo(), _Settings(), {}, score), ChatReport)
    empty = ProbeReport.ask(_Echo(), ProbeSettings(), {}, score)  # a subclass builds its own kind
    assert isinstance(empty, ProbeReport) and empty.metrics == {}


def test_ask_asks_nothing_when_every_trial_was_skipped():
    backend = _Echo()
    rep = ChatReport.ask(backend, _Settings(), {"x": [{"trial": 0, "status": "skipped", "key": "0", "reason": "r"}]},
                         lambda *a: 0)
    assert backend.batches == [] and rep.answers == {"x": 0} and rep.metrics["x"].n == 0
