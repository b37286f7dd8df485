"""A fault-injecting OpenAI-compatible chat server on 127.0.0.1, and a client for it (shared by the LLM tests).

:class:`ChatServer` answers every chat-completion request with ``truth.answer(prompt)``
(any responder: the seating puzzle's, a TextWorld automaton's). With ``faults``, the
first request for each prompt fails in a way chosen by the prompt's hash; later
requests for the same prompt succeed, so a client with bounded retries must end with
exactly the fault-free answers.
"""

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from worldmodel.chat import OpenAIChatBackend

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

    def __init__(self, truth=None, faults=False, status=None):
        self.truth = truth  # anything with .answer(prompt) -> str; may be set after construction
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


def client(url, key_env="SEATING_TEST_KEY", **kw):
    """A client with short timeouts and many quick retries (the faults are transient)."""
    opts = dict(timeout=CLIENT_TIMEOUT, max_retries=8, backoff=0.01, max_backoff=0.05, concurrency=8)
    opts.update(kw)
    return OpenAIChatBackend(url, "dfa-chat", key_env, **opts)
