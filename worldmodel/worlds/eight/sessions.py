"""One interface to a game of "8", two implementations: the simulator in process, or a server over HTTP.

A :class:`Session` is one player's slot: :meth:`~Session.new` starts a fresh climb and
returns the opening payload, :meth:`~Session.act` commits a call (``go_on`` or
``turn_back``) and returns the verdict with the next loop, :meth:`~Session.touch`
touches a shown detail. Payloads are the game server's JSON (``room.sentences``,
``room.heading``, ``level``, ``goal``; after a call ``correct``, ``won``), so the
harness reads both implementations with the same code.

* :class:`LocalSession` wraps :class:`~.game.Game`.
* :class:`HTTPSession` speaks the game's HTTP API (``POST /api/new``, ``/api/act``,
  ``/api/interact``; the session id, difficulty and language in the ``X-Sid``,
  ``X-Diff`` and ``X-Lang`` headers), to the public game, a local copy of it, or
  ``worldmodel eight-serve``. A request is sent once (a call is not idempotent); an
  HTTP error or a dropped connection stops the run with one line.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import urllib.error
import urllib.request
from abc import ABC, abstractmethod

from ...errors import WorldModelError
from .arcs import Arc
from .game import WIRE, Game


class Session(ABC):
    arc: str
    difficulty: str

    @abstractmethod
    def new(self) -> dict:
        """Start a fresh climb; the opening loop's payload."""

    @abstractmethod
    def act(self, call: str) -> dict:
        """Commit ``go_on`` or ``turn_back``; the verdict and the next loop."""

    @abstractmethod
    def touch(self, prop: str) -> dict:
        """Touch a shown detail (flavour; may fold the climb back to the start)."""

    def describe(self) -> str:
        return "simulator"


class LocalSession(Session):
    """The project's simulator, in process."""

    def __init__(self, arc: Arc, difficulty: str, seed: int | str = 0):
        self.arc, self.difficulty = arc.id, difficulty
        self.game = Game(arc, difficulty, random.Random(str(seed)))

    def new(self) -> dict:
        return self.game.new()

    def act(self, call: str) -> dict:
        return self.game.act(call)

    def touch(self, prop: str) -> dict:
        return self.game.touch(prop)


class HTTPSession(Session):
    """A game server's HTTP API (see the module docstring). ``sid`` names the slot on the server."""

    def __init__(self, base_url: str, arc: str, difficulty: str, sid: str, locale: str = "en_US",
                 timeout: float = 60.0):
        if not base_url.startswith(("http://", "https://")):
            raise WorldModelError(f"--base-url must start with http:// or https://, got {base_url!r}")
        self.base = base_url.rstrip("/")
        self.arc, self.difficulty, self.sid, self.locale, self.timeout = arc, difficulty, sid, locale, timeout

    def describe(self) -> str:
        return self.base

    def _post(self, path: str, body: dict) -> dict:
        headers = {"X-Sid": self.sid, "X-Diff": self.difficulty, "X-Lang": self.locale,
                   "Content-Type": "application/json", "Accept": "application/json"}
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise WorldModelError(f"{self.base}{path} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout,
                TimeoutError) as exc:
            raise WorldModelError(f"cannot reach the game at {self.base} ({getattr(exc, 'reason', exc)})") from None
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise WorldModelError(f"{self.base}{path} did not answer JSON") from None
        if not isinstance(data, dict):
            raise WorldModelError(f"{self.base}{path} did not answer a JSON object")
        if data.get("sid"):
            self.sid = str(data["sid"])
        return data

    def new(self) -> dict:
        data = self._post("/api/new", {"arc": self.arc})
        got = (data.get("meta") or {}).get("id")
        if got and got != self.arc:
            raise WorldModelError(f"{self.base} started arc {got!r}, not {self.arc!r} (does it have that arc?)")
        return data

    def act(self, call: str) -> dict:
        if call not in WIRE:
            raise WorldModelError(f"a call is go_on or turn_back, not {call!r}")
        return self._post("/api/act", {"choice": WIRE[call], "confidence": 3})

    def touch(self, prop: str) -> dict:
        return self._post("/api/interact", {"prop": prop})


def room_tokens(arc: Arc, payload: dict) -> list[str]:
    """The loop of a payload at the level of meaning (its sentences read back through the arc's pools)."""
    out = []
    for s in (payload.get("room") or {}).get("sentences", []) or []:
        t = arc.meaning(s)
        if t is None:
            raise WorldModelError(f"arc {arc.id}: the sentence {s!r} is in none of its pools (another language?)")
        out.append(t)
    return out
