"""Benchmark: seconds per TSA case of two guided request sets, side by side in one run.

Timings of a CPU-bound model server drift by 10-30 % between runs on a shared machine, so two
separate runs of bench/tsa_real_model.py cannot tell a 20 % difference. This benchmark measures
both sets in one run, alternating case by case:

1. ``capture`` runs the TSA runner of whatever sleuth is on the path (this tree, or an export of
   an earlier commit with ``PYTHONPATH`` set to its packages) against a recording endpoint and
   writes the chat request each case sends (the first model step, which is what TSA scores)::

       .venv/bin/python bench/guided_latency_ab.py capture --split dev --out /tmp/after.json
       cd /tmp/base && PYTHONPATH=<its packages' src> /work/main/.venv/bin/python \\
           /work/main/bench/guided_latency_ab.py capture --split dev --out /tmp/before.json

2. ``compare`` serves the model twice (two llama-cpp-python servers, each keeping its own prompt
   prefix cached, one request at a time), sends case i of each set in turn (A then B, then B then
   A for the next case), and prints seconds and completion tokens per case of each, and their
   ratio, with and without each server's first request (which reads the whole prompt)::

       nice -n 10 .venv/bin/python bench/guided_latency_ab.py compare /tmp/before.json \\
           /tmp/after.json --draft-tokens 0 --out bench/results/issue33_latency_ab_v5_15_dev.json

   ``--draft-tokens`` sets the servers' prompt-lookup decoding (``ServeSettings.draft_tokens``):
   one number for both, or ``A,B`` (``0,2``: the server as it was before issue 33 against the
   server as it is now). ``--full-grammar`` likewise (``1,0``: the grammar judged over the whole
   vocabulary at every step on A, the best token first on B; ``ServeSettings.full_grammar``).

The replies themselves are not scored here (bench/tsa_real_model.py scores them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx

from sleuth.core.localmodel import SERVED_NAME, LocalModelServer, ServeSettings
from sleuth.core.tools import DEFAULT_SPECS
from sleuth.evals.tsa.cases import load_cases, shipped_cases_path
from sleuth.evals.tsa.runner import EndpointConfig, endpoint_model, run_with_chat_model

_CANNED = {  # any reply will do: only the request is kept
    "id": "capture",
    "object": "chat.completion",
    "model": SERVED_NAME,
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"answer":"captured"}'},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


class _Recorder(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.bodies.append(json.loads(self.rfile.read(length)))
        data = json.dumps(_CANNED).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


async def _capture_cases(url: str, split: str, max_tokens: int) -> list[str]:
    cases = [c for c in load_cases(shipped_cases_path()) if split == "all" or c.split == split]
    cfg = EndpointConfig(
        base_url=url,
        model=SERVED_NAME,
        concurrency=1,
        max_tokens=max_tokens,
        tool_calling="guided",
        guided_format="json_object",
    )
    model = endpoint_model(cfg)
    try:
        for case in cases:
            specs = list(DEFAULT_SPECS.values())
            await run_with_chat_model([case], specs, model, system_prompt=cfg.system_prompt)
    finally:
        await model.aclose()
    return [c.id for c in cases]


def capture(args: argparse.Namespace) -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        ids = asyncio.run(_capture_cases(url, args.split, args.max_tokens))
    finally:
        server.shutdown()
    bodies = _Recorder.bodies
    if len(bodies) != len(ids):
        print(f"captured {len(bodies)} requests for {len(ids)} cases", file=sys.stderr)
        return 1
    args.out.write_text(json.dumps({"cases": ids, "requests": bodies}))
    print(f"captured {len(ids)} requests to {args.out}", file=sys.stderr)
    return 0


def _send(client: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, int, str]:
    started = time.perf_counter()
    reply = client.post(f"{url}/chat/completions", json={**body, "stream": False})
    seconds = time.perf_counter() - started
    reply.raise_for_status()
    data = reply.json()
    text = data["choices"][0]["message"].get("content") or ""
    return seconds, int(data["usage"]["completion_tokens"]), text


def _summary(rows: list[tuple[float, int, str]]) -> dict[str, float]:
    rest = rows[1:]
    return {
        "seconds_per_case": statistics.fmean(r[0] for r in rows),
        "seconds_per_case_after_first": statistics.fmean(r[0] for r in rest),
        "completion_tokens_per_case": statistics.fmean(r[1] for r in rows),
    }


def _pair(text: str) -> tuple[int, int]:
    """``N`` for both servers or ``A,B``."""
    values = [int(n) for n in text.split(",")]
    if len(values) not in (1, 2):
        raise SystemExit(f"expected N or A,B, got {text!r}")
    return values[0], values[-1]


def compare(args: argparse.Namespace) -> int:
    sets = [json.loads(p.read_text()) for p in (args.a, args.b)]
    if sets[0]["cases"] != sets[1]["cases"]:
        print("the two captures hold different cases", file=sys.stderr)
        return 1
    ids = sets[0]["cases"][: args.limit or None]
    given = args.draft_tokens or str(ServeSettings.draft_tokens)  # read here: capture runs
    drafts = _pair(given)  # against code that may predate the setting
    full = _pair(args.full_grammar)
    a_settings, b_settings = (
        ServeSettings(threads=args.threads, draft_tokens=drafts[k], full_grammar=bool(full[k]))
        for k in (0, 1)
    )
    rows: list[list[tuple[float, int, str]]] = [[], []]
    with (
        LocalModelServer(args.model, a_settings) as one,
        LocalModelServer(args.model, b_settings) as two,
        httpx.Client(timeout=args.timeout) as client,
    ):
        urls = [one.url, two.url]
        for i, case in enumerate(ids):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            for k in order:
                rows[k].append(_send(client, urls[k], sets[k]["requests"][i]))
            (sa, ta, _), (sb, tb, _) = rows[0][-1], rows[1][-1]
            print(
                f"  {i + 1:>3}/{len(ids)} {case}: A {sa:5.1f} s {ta:3d} tok, "
                f"B {sb:5.1f} s {tb:3d} tok",
                file=sys.stderr,
                flush=True,
            )
    a, b = _summary(rows[0]), _summary(rows[1])
    ratio = {k: b[k] / a[k] for k in a}
    print("| set | cases | s/case | s/case after the first | completion tokens/case |")
    print("|---|---|---|---|---|")
    for name, s in (("A " + args.a.name, a), ("B " + args.b.name, b), ("B / A", ratio)):
        print(
            f"| {name} | {len(ids)} | {s['seconds_per_case']:.2f} | "
            f"{s['seconds_per_case_after_first']:.2f} | {s['completion_tokens_per_case']:.2f} |"
        )
    if args.out:
        meta = {
            "load_average": os.getloadavg(),
            "draft_tokens": given,
            "full_grammar": args.full_grammar,
            "model": args.model,
            "a": str(args.a),
            "b": str(args.b),
        }
        out = {
            "meta": meta,
            "cases": ids,
            "a": a,
            "b": b,
            "ratio": ratio,
            "rows": {"a": rows[0], "b": rows[1]},
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="record each TSA case's chat request")
    cap.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    cap.add_argument("--max-tokens", type=int, default=256)
    cap.add_argument("--out", type=Path, required=True)
    cmp = sub.add_parser("compare", help="replay two captures side by side")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    cmp.add_argument("--model", default="1.5b")
    cmp.add_argument("--limit", type=int, default=0, help="first N cases only (0: all)")
    cmp.add_argument("--threads", type=int, default=ServeSettings.threads)
    cmp.add_argument("--timeout", type=float, default=300.0)
    cmp.add_argument(
        "--draft-tokens",
        default=None,
        help="prompt-lookup draft tokens: N for both servers, or A,B (default: the server's)",
    )
    cmp.add_argument(
        "--full-grammar",
        default="0",
        help="1: the server judges every token against the grammar at each step, as "
        "llama-cpp-python does on its own (ServeSettings.full_grammar); N for both or A,B",
    )
    cmp.add_argument("--out", type=Path)
    args = parser.parse_args()
    return capture(args) if args.command == "capture" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
