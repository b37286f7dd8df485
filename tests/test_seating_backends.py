"""Chat backends: an OpenAI-compatible server with injected faults, and a tiny local HF chat model."""

import json

import pytest

from worldmodel.errors import WorldModelError
from worldmodel.chat import CachedBackend, HFChatBackend, OpenAIChatBackend, ResponseCache
from worldmodel.worlds.seating.responders import TrueResponder
from worldmodel.worlds.seating.protocol import METRICS, ProtocolSettings, evaluate_in_words
from worldmodel.worlds.seating.tiny_chat import make_tiny_chat_model

from chatserver import FAULTS, KEY, client
from chatserver import ChatServer as _ChatServer


def ChatServer(faults=False, status=None):
    """The shared fault-injecting server (:mod:`chatserver`), answering as the seating puzzle's truth."""
    return _ChatServer(TrueResponder(), faults=faults, status=status)


SETTINGS = ProtocolSettings(states=8, seed=4)


def test_openai_backend_survives_faults_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("SEATING_TEST_KEY", KEY)
    with ChatServer() as clean:
        b = CachedBackend(client(clean.url), ResponseCache(tmp_path / "clean.jsonl"), progress=False)
        want = evaluate_in_words(b, SETTINGS)
        b.close()
    with ChatServer(faults=True) as faulty:
        inner = client(faulty.url)
        b = CachedBackend(inner, ResponseCache(tmp_path / "faulty.jsonl"), progress=False)
        got = evaluate_in_words(b, SETTINGS)
        b.close()
        n_requests = faulty.requests
        assert all(faulty.injected[f] > 0 for f in FAULTS), faulty.injected
        # every injected failure cost a retry (a loaded machine may add a few timeouts of its own)
        assert inner.retries >= sum(v for k, v in faulty.injected.items() if k not in ("none", "slow-ok"))
        assert faulty.auth == {f"Bearer {KEY}"}
        # the same metrics as the fault-free run, and as asking the truth directly
        assert got.summary()["metrics"] == want.summary()["metrics"]
        assert all(got.metrics[m].mean == 1.0 for m in METRICS)
        # a second run asks nothing
        inner2 = client(faulty.url)
        b2 = CachedBackend(inner2, ResponseCache(tmp_path / "faulty.jsonl"), progress=False)
        again = evaluate_in_words(b2, SETTINGS)
        b2.close()
        assert faulty.requests == n_requests and inner2.requests_sent == 0 and b2.asked == 0
        assert again.summary() == got.summary()
    for f in tmp_path.iterdir():
        assert KEY not in f.read_text()
    assert KEY not in json.dumps(got.summary()) and KEY not in repr(inner)


def test_openai_backend_reports_hard_errors_in_one_line(monkeypatch):
    monkeypatch.setenv("SEATING_TEST_KEY", KEY)
    with ChatServer(status=401) as srv:
        with pytest.raises(WorldModelError, match="HTTP 401") as err:
            client(srv.url).ask(["hello"])
        assert KEY not in str(err.value) and srv.requests == 1
    with ChatServer(status=503) as srv:
        with pytest.raises(WorldModelError, match="failed 3 times") as err:
            client(srv.url, max_retries=2).ask(["hello"])
        assert srv.requests == 3 and KEY not in str(err.value)
    with pytest.raises(WorldModelError, match="http"):
        OpenAIChatBackend("localhost:8000", "m")


def test_openai_backend_sends_no_key_when_unset(monkeypatch):
    monkeypatch.delenv("SEATING_TEST_KEY", raising=False)
    with ChatServer() as srv:
        assert client(srv.url).ask([TrueResponder_prompt()]) == [TrueResponder().answer(TrueResponder_prompt())]
        assert srv.auth == {None}


def TrueResponder_prompt():
    from worldmodel.worlds.seating.prompts import validity_prompt

    return validity_prompt(3, ["A_is_in_seat_1"], ["A_is_in_seat_2"])


@pytest.fixture(scope="module")
def tiny_chat(tmp_path_factory):
    return make_tiny_chat_model(tmp_path_factory.mktemp("tiny-chat"), seed=0)


def test_local_hf_chat_backend_runs_and_counts_unparseable(tiny_chat, tmp_path):
    backend = HFChatBackend(tiny_chat, max_new_tokens=6, batch_size=16)
    cb = CachedBackend(backend, ResponseCache(tmp_path / "hf.jsonl"), progress=False)
    rep = evaluate_in_words(cb, ProtocolSettings(states=3, seed=0))
    cb.close()
    assert cb.asked > 0 and len(ResponseCache(tmp_path / "hf.jsonl")) == cb.asked
    for m in METRICS:
        assert 0 <= rep.unparseable[m] <= rep.answers[m]
    # an untrained network does not answer in the format: its answers are counted, not guessed
    assert sum(rep.unparseable.values()) > 0
    cap = rep.metrics["capability"]
    assert cap.n + cap.n_failed == 3
    assert cap.failures.get("unparseable answer", 0) == rep.unparseable["capability"]


def test_hf_backend_needs_a_chat_template(tiny_chat, tmp_path):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(tiny_chat, bare)
    cfg = json.loads((bare / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(cfg))
    for extra in ("chat_template.jinja", "chat_template.json"):
        (bare / extra).unlink(missing_ok=True)
    with pytest.raises(WorldModelError, match="chat template"):
        HFChatBackend(bare)
    with pytest.raises(WorldModelError, match="does not exist"):
        HFChatBackend(tmp_path / "nowhere")
