"""An on-disk cache of prompt/response pairs, so LLM runs resume and reruns are free.

One JSON object per line: ``{"key", "backend", "model", "prompt", "response"}`` where
``key`` is the SHA-256 of backend name, model name and prompt. Entries are appended
(and flushed) as responses arrive, from any thread; a run killed mid-write leaves
at most one partial last line, which is dropped when the file is next opened. A
malformed line anywhere else is an error naming the file and line, never skipped
silently. Nothing secret is ever written: API keys are not part of any entry.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from ...errors import WorldModelError


def cache_key(backend: str, model: str, prompt: str) -> str:
    h = hashlib.sha256()
    for part in (backend, model, prompt):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


class ResponseCache:
    """Prompt/response pairs keyed by (backend, model, prompt); ``path=None`` keeps them in memory."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()
        self._fh = None
        if self.path is not None and self.path.exists():
            self._load()

    def _load(self) -> None:
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            # a run killed mid-write: drop the partial last line
            cut = raw.rfind(b"\n") + 1
            raw = raw[:cut]
            with self.path.open("r+b") as f:
                f.truncate(cut)
        for lineno, line in enumerate(raw.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self._data[str(entry["key"])] = str(entry["response"])
            except (json.JSONDecodeError, KeyError, TypeError):
                raise WorldModelError(f"response cache {self.path}:{lineno} is not a cache entry") from None

    def __len__(self) -> int:
        return len(self._data)

    def get(self, backend: str, model: str, prompt: str) -> str | None:
        return self._data.get(cache_key(backend, model, prompt))

    def put(self, backend: str, model: str, prompt: str, response: str) -> None:
        key = cache_key(backend, model, prompt)
        with self._lock:
            if key in self._data:
                return
            self._data[key] = response
            if self.path is None:
                return
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = self.path.open("a", encoding="utf-8")
            entry = {"key": key, "backend": backend, "model": model, "prompt": prompt, "response": response}
            self._fh.write(json.dumps(entry) + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
