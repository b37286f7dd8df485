"""A test HTTP server on 127.0.0.1: a request handler served from a daemon thread.

Subclasses build their ``BaseHTTPRequestHandler`` and call :meth:`LoopbackServer._serve`
with it; the object is then a context manager that starts the server on entry and
shuts it down on exit. Only the loopback address is ever bound.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer


class LoopbackServer:
    def _serve(self, handler, path: str = "") -> None:
        """Bind ``handler`` to a free port on 127.0.0.1; ``self.url`` is its address plus ``path``."""
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
