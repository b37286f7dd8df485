"""Chat backends: an OpenAI-compatible server with injected faults, and a tiny local HF chat model."""

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest

from worldmodel.errors import WorldModelError
from worldmodel.worlds.seating.backends import CachedBackend, HFChatBackend, OpenAIChatBackend, TrueResponder
from worldmodel.worlds.seating.cache import ResponseCache
from worldmodel.worlds.seating.protocol import METRICS, ProtocolSettings, evaluate
from worldmodel.worlds.seating.tiny_chat import make_tiny_chat_model

from loopback import LoopbackServer

KEY = "sk-test-secret-123"
CLIENT_TIMEOUT = 0.5
FAULTS = ("429", "500", "malformed", "empty-choices", "too-slow", "slow-ok", "none", "none")


class ChatServer(LoopbackServer):
    """A chat-completions server on 127.0.0.1 that answers from the DFA.

    With ``faults``, the first request for each prompt fails in a way chosen by the
    prompt's hash (429, 500, a body that is not JSON, a JSON body without choices,
    a reply slower than the client's timeout, a slow but timely reply, or none);
    later requests for the same prompt succeed.
    """

    def __init__(self, faults=False, status=None):
        self.truth = TrueResponder()
        self.faults = faults
        self.status = status  # answer every request with this HTTP status
        self.requests = 0
        self.injected = {f: 0 for f in FAULTS}
        self.seen: dict[str, int] = {}
        self.auth = set()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, body: bytes, headers=()):
                try:
                    self.send_response(code)
                    for k, v in headers:
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests += 1
                    server.auth.add(self.headers.get("Authorization"))
                if self.path != "/v1/chat/completions":
                    return self._send(404, b'{"error": "not found"}')
                if server.status:
                    return self._send(server.status, b'{"error": {"message": "nope"}}')
                assert body["temperature"] == 0 and body["model"] == "dfa-chat"
                prompt = body["messages"][-1]["content"]
                with server.lock:
                    attempt = server.seen.get(prompt, 0)
                    server.seen[prompt] = attempt + 1
                fault = "none"
                if server.faults and attempt == 0:
                    fault = FAULTS[int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(FAULTS)]
                    with server.lock:
                        server.injected[fault] += 1
                if fault == "429":
                    return self._send(429, b'{"error": "rate limited"}', [("Retry-After", "0")])
                if fault == "500":
                    return self._send(500, b"internal error")
                if fault == "malformed":
                    return self._send(200, b'{"choices": [{"message": {"content": "ANSWER: ye')
                if fault == "empty-choices":
                    return self._send(200, b'{"choices": []}')
                if fault == "too-slow":
                    time.sleep(CLIENT_TIMEOUT * 2)
                elif fault == "slow-ok":
                    time.sleep(CLIENT_TIMEOUT / 5)
                reply = {"id": "x", "object": "chat.completion", "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": server.truth.answer(prompt)}}]}
                return self._send(200, json.dumps(reply).encode())

        self._serve(Handler, "/v1")


def client(url, **kw):
    opts = dict(timeout=CLIENT_TIMEOUT, max_retries=8, backoff=0.01, max_backoff=0.05, concurrency=8)
    opts.update(kw)
    return OpenAIChatBackend(url, "dfa-chat", "SEATING_TEST_KEY", **opts)


SETTINGS = ProtocolSettings(states=8, seed=4)


def test_openai_backend_survives_faults_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("SEATING_TEST_KEY", KEY)
    with ChatServer() as clean:
        b = CachedBackend(client(clean.url), ResponseCache(tmp_path / "clean.jsonl"), progress=False)
        want = evaluate(b, SETTINGS)
        b.close()
    with ChatServer(faults=True) as faulty:
        inner = client(faulty.url)
        b = CachedBackend(inner, ResponseCache(tmp_path / "faulty.jsonl"), progress=False)
        got = evaluate(b, SETTINGS)
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
        again = evaluate(b2, SETTINGS)
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
    rep = evaluate(cb, ProtocolSettings(states=3, seed=0))
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
