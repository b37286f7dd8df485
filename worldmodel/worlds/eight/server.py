"""The simulator behind the game's HTTP API, on 127.0.0.1 (``worldmodel eight-serve``).

The endpoints the benchmark uses, as the game serves them: ``POST /api/new`` (body
``{"arc": ID}``; an unknown arc starts the default one), ``POST /api/act`` (``{"choice":
"continue"|"back"}``), ``POST /api/interact`` (``{"prop": NAME}``), ``GET /api/room``,
``GET /api/arcs`` and ``GET /healthz``. The slot is named by the ``X-Sid`` header (an
unknown or missing one gets a fresh slot, its id in the reply), the difficulty by
``X-Diff`` (unknown: normal; insane accepted), the language by ``X-Lang`` (only
``en_US``: the simulator has the arcs' English pools). Rooms carry no answer; the
verdict comes after the call.

Each ``/api/new`` seeds its game from the server's seed, the slot id and how many
climbs that slot has started, so a client that names its slots gets the same games on
every run, and the same as :class:`~.sessions.LocalSession` with that seed string.
Only the loopback address is bound.
"""

from __future__ import annotations

import json
import random
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .arcs import Arc
from .game import Game
from .rules import DIFFICULTIES

DEFAULT_ARC = "hallway-eight"


def slot_seed(seed: int, sid: str, n: int) -> str:
    """The seed string of a slot's ``n``-th climb (shared with :class:`~.sessions.LocalSession`)."""
    return f"{seed}:{sid}:{n}"


class EightServer:
    """A ThreadingHTTPServer serving the simulator (see the module docstring); a context manager."""

    def __init__(self, arcs: dict[str, Arc], port: int = 0, seed: int = 0, host: str = "127.0.0.1"):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the simulator server binds the loopback address only")
        self.arcs, self.seed = arcs, seed
        self.games: dict[str, Game] = {}
        self.started: dict[str, int] = {}
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, body: dict | str):
                raw = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json" if isinstance(body, dict) else "text/plain")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _body(self) -> dict:
                n = int(self.headers.get("Content-Length") or 0)
                try:
                    data = json.loads(self.rfile.read(n) or b"{}")
                except (json.JSONDecodeError, UnicodeDecodeError):
                    return {}
                return data if isinstance(data, dict) else {}

            def do_GET(self):
                if self.path == "/healthz":
                    return self._send(200, "ok")
                if self.path == "/api/arcs":
                    return self._send(200, {"arcs": [{"id": a.id, "title": a.title} for a in server.arcs.values()],
                                            "default": DEFAULT_ARC})
                if self.path.split("?")[0] == "/api/room":
                    sid, game = server._slot(self.headers.get("X-Sid"), self.headers.get("X-Diff"))
                    return self._send(200, {"sid": sid, **game.payload()})
                return self._send(404, {"error": "not found"})

            def do_POST(self):
                body = self._body()
                diff = self.headers.get("X-Diff") or body.get("difficulty")
                if self.path == "/api/new":
                    sid, payload = server._new(self.headers.get("X-Sid") or body.get("sid"), body.get("arc"), diff)
                    return self._send(200, {"sid": sid, **payload})
                if self.path in ("/api/act", "/api/interact"):
                    sid, game = server._slot(self.headers.get("X-Sid") or body.get("sid"), diff)
                    with server.lock:
                        if self.path == "/api/act":
                            choice = body.get("choice")
                            out = game.act("back" if choice == "back" else "continue")
                        else:
                            out = game.touch(str(body.get("prop", "")))
                    return self._send(200, {"sid": sid, **out})
                return self._send(404, {"error": "not found"})

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _diff(self, name) -> str:
        return name if isinstance(name, str) and name in DIFFICULTIES else "normal"

    def _new(self, sid, arc_id, diff):
        sid = sid if isinstance(sid, str) and sid else secrets.token_hex(16)
        arc = self.arcs.get(arc_id) if isinstance(arc_id, str) else None
        arc = arc or self.arcs.get(DEFAULT_ARC) or next(iter(self.arcs.values()))
        with self.lock:
            n = self.started.get(sid, 0)
            self.started[sid] = n + 1
            game = Game(arc, self._diff(diff), random.Random(slot_seed(self.seed, sid, n)))
            self.games[sid] = game
            return sid, game.new()

    def _slot(self, sid, diff):
        if isinstance(sid, str) and sid in self.games:
            return sid, self.games[sid]
        sid, _ = self._new(sid, None, diff)
        return sid, self.games[sid]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def serve_forever(self):
        try:
            self.httpd.serve_forever()
        finally:
            self.httpd.server_close()
