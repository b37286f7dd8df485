"""The OpenAI backend's retry schedule: exponential backoff, its cap, and Retry-After, with an injected sleep."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest

from worldmodel.errors import WorldModelError
from worldmodel.chat import OpenAIChatBackend

from loopback import LoopbackServer

OK = (200, (), json.dumps({"choices": [{"message": {"role": "assistant", "content": "ANSWER: yes"}}]}))


class ScriptedServer(LoopbackServer):
    """Answers request ``k`` with ``script[k]`` = (status, headers, body); the last entry repeats."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                k = server.requests
                server.requests += 1
                status, headers, body = server.script[min(k, len(server.script) - 1)]
                data = body.encode()
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._serve(Handler, "/v1")


def backend(url, sleeps, **kw):
    opts = dict(max_retries=6, backoff=1.0, max_backoff=10.0, concurrency=1, timeout=5.0)
    opts.update(kw)
    return OpenAIChatBackend(url, "m", "", sleep=sleeps.append, **opts)


def fail(status, retry_after=None):
    return (status, [("Retry-After", retry_after)] if retry_after is not None else [], '{"error": "x"}')


def test_backoff_doubles_up_to_its_cap_and_honours_retry_after_within_it():
    script = [
        fail(503),               # attempt 0: backoff 1
        fail(429, "7"),          # attempt 1: backoff 2, Retry-After 7 wins
        fail(429, "1000"),       # attempt 2: backoff 4, Retry-After 1000 is capped at 10
        fail(429, "0.5"),        # attempt 3: backoff 8 beats a shorter Retry-After
        fail(500),               # attempt 4: backoff 16, capped at 10
        fail(429, "soon"),       # attempt 5: an unreadable Retry-After is ignored: backoff 32 -> 10
        OK,
    ]
    sleeps: list[float] = []
    with ScriptedServer(script) as srv:
        b = backend(srv.url, sleeps)
        assert b.ask(["q"]) == ["ANSWER: yes"]
        assert srv.requests == 7
    assert sleeps == [1.0, 7.0, 10.0, 8.0, 10.0, 10.0]
    assert b.retries == 6 and b.requests_sent == 7


def test_retry_after_is_a_floor_and_backoff_scales():
    sleeps: list[float] = []
    with ScriptedServer([fail(429, "3"), fail(429, "3"), fail(429, "3"), OK]) as srv:
        backend(srv.url, sleeps, backoff=0.5, max_backoff=100.0).ask(["q"])
    assert sleeps == [3.0, 3.0, 3.0]                     # 0.5, 1, 2 are all below the floor of 3
    sleeps = []
    with ScriptedServer([fail(502), fail(502), fail(502), fail(502), OK]) as srv:
        backend(srv.url, sleeps, backoff=0.25, max_backoff=100.0).ask(["q"])
    assert sleeps == [0.25, 0.5, 1.0, 2.0]


def test_giving_up_after_max_retries_sleeps_only_between_attempts():
    sleeps: list[float] = []
    with ScriptedServer([fail(503)]) as srv:
        b = backend(srv.url, sleeps, max_retries=3)
        with pytest.raises(WorldModelError) as err:
            b.ask(["q"])
        assert srv.requests == 4
    assert sleeps == [1.0, 2.0, 4.0]                     # no sleep after the last attempt
    msg = str(err.value)
    assert "\n" not in msg and "failed 4 times" in msg and "(last: HTTP 503)" in msg
    sleeps = []
    with ScriptedServer([fail(503)]) as srv:
        with pytest.raises(WorldModelError, match="failed 1 times"):
            backend(srv.url, sleeps, max_retries=0).ask(["q"])
        assert srv.requests == 1
    assert sleeps == []


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(status):
    sleeps: list[float] = []
    with ScriptedServer([fail(status), OK]) as srv:
        with pytest.raises(WorldModelError, match=f"HTTP {status}"):
            backend(srv.url, sleeps).ask(["q"])
        assert srv.requests == 1
    assert sleeps == []


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 599])
def test_retryable_statuses(status):
    sleeps: list[float] = []
    with ScriptedServer([fail(status), OK]) as srv:
        assert backend(srv.url, sleeps).ask(["q"]) == ["ANSWER: yes"]
    assert sleeps == [1.0]
