"""A SearxNG-compatible JSON endpoint in a pod: the demo's canned web pages on port 8080.

The same fixture ``sleuth demo`` serves on loopback (:mod:`sleuth.demo.stack`), bound to all
addresses so that the web_search tool service reaches it through its Service.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer

from sleuth.demo.stack import WebFixtureHandler

if __name__ == "__main__":
    ThreadingHTTPServer(("0.0.0.0", 8080), WebFixtureHandler).serve_forever()
