"""A SearxNG-compatible HTTP server for tests: a real server on a real port, in a thread.

Modes (set ``server.mode``): ``ok`` answers ``/search?format=json`` like SearxNG; ``slow`` waits
``delay`` seconds first; ``error`` answers 500. "Down" is a port where nothing listens
(:func:`sleuth.core.process.free_port`).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class SearxServer:
    def __init__(self) -> None:
        self.mode = "ok"
        self.delay = 2.0
        self.queries: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

            def do_GET(self) -> None:
                parsed = urlparse(self.path)
                query = parse_qs(parsed.query)
                if parsed.path != "/search" or query.get("format") != ["json"]:
                    self.send_error(404)
                    return
                outer.queries.append(query.get("q", [""])[0])
                if outer.mode == "slow":
                    time.sleep(outer.delay)
                if outer.mode == "error":
                    self.send_error(500)
                    return
                q = query.get("q", [""])[0]
                body = {
                    "query": q,
                    "results": [
                        {
                            "title": f"Copper price today ({i})",
                            "url": f"https://news.example.org/copper/{i}",
                            "content": f"Copper traded at 9,{i}00 USD per tonne ({q}).",
                            "engine": "fixture",
                        }
                        for i in range(1, 8)
                    ]
                    + [{"title": "bad", "url": "javascript:alert(1)", "content": "x"}],
                }
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> SearxServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
