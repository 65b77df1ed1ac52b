"""What identifying the caller and writing its audit record cost a request.

    .venv/bin/python bench/agent_access.py [--requests 300] [--concurrency 16] [--rounds 3]

Two measurements:

1. **Per request, the parts alone** (the work access adds to every request, timed one at a
   time, 2,000 times each): resolving a caller from an API key (10 callers with 2 keys each,
   every key compared), from a JWT (RS256, the issuer's JWKS read over HTTP once), refusing an
   unknown key, and writing the audit record of a 2-iteration run (two tool calls with their
   arguments) to a file. ``auth + audit`` is the sum of one resolution and one record.
2. **End to end**: the agent's real HTTP app (``create_app``, uvicorn with the guarded protocol,
   as ``sleuth agent`` serves it) against the scripted model server with no latency and tools
   that return at once — so the request is almost all overhead and a millisecond shows — asked
   ``POST /v1/query`` by ``--concurrency`` clients, in three modes interleaved round by round:
   ``off`` (no ``access``: the local caller), ``api key`` and ``jwt``. Reported: p50/p99 over
   all rounds and, paired by round, the median of each round's difference from ``off``.

Target (issue 29): auth + audit at most 1 ms at p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from sleuth.agent.access.audit import AuditLog
from sleuth.agent.access.caller import Caller
from sleuth.agent.access.identity import Authenticator
from sleuth.agent.api import create_app
from sleuth.agent.loop import Agent, LoopSettings
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.core.api.access_config import AccessConfig
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.http.request_guard import HttpLimits
from sleuth.core.http.server import server_config
from sleuth.core.llm import OpenAIChatModel
from sleuth.core.process import free_port
from sleuth.scripted import LatencyProfile, ScriptedProcess

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from agent_latency import CASES, QUESTION, SleepTool, pct, scenario_for  # noqa: E402

ISSUER = "https://issuer.bench"
AUDIENCE = "sleuth.dev/agent/bench/bench"


class Jwks:
    """An issuer: an RSA key, its JWKS served on a loopback port."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        body = json.dumps({"keys": [{**public, "kid": "k1", "alg": "RS256"}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"

    def token(self, subject: str) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": subject, "aud": AUDIENCE, "iat": now, "exp": now + 3600}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "k1"})


def access(keys: Path, jwks: Jwks) -> tuple[AccessConfig, str]:
    """10 key callers with 2 keys each and a token caller; returns one valid key."""
    callers: list[dict[str, Any]] = []
    valid = ""
    for i in range(10):
        directory = keys / f"c{i}"
        directory.mkdir(parents=True)
        for j in range(2):
            valid = secrets.token_urlsafe(32)
            (directory / f"k{j}").write_text(valid)
        callers.append({"name": f"c{i}", "apiKeyDirectory": str(directory), "grants": ["trace"]})
    callers.append(
        {"name": "gw", "token": {"issuer": ISSUER, "subject": "gw"}, "grants": ["trace"]}
    )
    issuers = [{"issuer": ISSUER, "jwksUrl": jwks.url, "audiences": [AUDIENCE]}]
    return AccessConfig.model_validate({"issuers": issuers, "callers": callers}), valid


def _us(samples: list[float]) -> dict[str, float]:
    return {"p50_us": round(pct(samples, 0.5), 1), "p99_us": round(pct(samples, 0.99), 1)}


async def parts(config: AccessConfig, key: str, token: str, trace: Any, n: int) -> dict[str, Any]:
    """Each part ``n`` times: wall time (which, on a shared machine, includes the moments the
    process waits for a core) and the thread's CPU time (the work itself)."""
    auth = Authenticator(config)
    await auth.start()
    caller = Caller("c9", "api_key", "k1", trace=True)
    names = ("api key", "jwt", "refused", "audit")
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    path = Path(tempfile.gettempdir()) / "sleuth-bench-audit.jsonl"
    with open(path, "w") as out:  # noqa: ASYNC230
        audit = AuditLog("bench", "full", lambda line: out.write(line + "\n"))
        for _ in range(n):
            for name, header in (
                ("api key", f"Bearer {key}"),
                ("jwt", f"Bearer {token}"),
                ("refused", f"Bearer {secrets.token_urlsafe(32)}"),
            ):
                w, c = time.perf_counter(), time.thread_time()
                await auth.caller(header)
                cpu[name].append((time.thread_time() - c) * 1e6)
                wall[name].append((time.perf_counter() - w) * 1e6)
            w, c = time.perf_counter(), time.thread_time()
            audit.answered(caller, "query", QUESTION, trace, "0" * 32)
            cpu["audit"].append((time.thread_time() - c) * 1e6)
            wall["audit"].append((time.perf_counter() - w) * 1e6)
    for proof in ("api key", "jwt"):
        for table in (wall, cpu):
            table[f"{proof} + audit"] = [
                a + b for a, b in zip(table[proof], table["audit"], strict=True)
            ]
    return {
        name: {**_us(wall[name]), **{f"cpu_{k}": v for k, v in _us(cpu[name]).items()}}
        for name in wall
    }


async def a_trace(url: str) -> Any:
    tools = {n: BoundTool(SleepTool(n, 0), timeout_s=30) for n in ("sql_query", "vector_search")}
    model = OpenAIChatModel(url, "scripted", stream=True, timeout_s=60)
    try:
        agent = Agent(model, ToolRunner(tools, None), LoopSettings(max_iterations=5))
        return (await agent.run(QUESTION)).trace
    finally:
        await model.aclose()


class Served:
    """The agent's HTTP app for one mode, on a free loopback port, in this process."""

    def __init__(self, model_url: str, config: AccessConfig | None, audit: Path) -> None:
        agent = AgentConfig.model_validate(
            {
                "model": {"endpoint": model_url, "servedModelName": "scripted"},
                "maxConcurrentRequests": 256,
                "onlineEval": {"sampleRate": 0},
                "toolCacheTTLSeconds": 0,
            }
        ).model_copy(update={"access": config})
        tools = {
            n: BoundTool(SleepTool(n, 0), timeout_s=30) for n in ("sql_query", "vector_search")
        }
        self.audit = audit.open("w")
        app = create_app(
            agent, name="bench", tools=tools, audit_sink=lambda line: self.audit.write(line + "\n")
        )
        self.port = free_port()
        self.server = uvicorn.Server(
            server_config(app, "127.0.0.1", self.port, HttpLimits(), log_level="warning")
        )
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> str:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:  # noqa: ASYNC110 (uvicorn has no event for it)
            await asyncio.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        if self.task is not None:
            await self.task
        self.audit.close()


async def _ask(
    client: httpx.AsyncClient, url: str, gate: asyncio.Semaphore, into: list[float]
) -> None:
    async with gate:
        start = time.perf_counter()
        resp = await client.post(url + "/v1/query", json={"question": QUESTION})
        elapsed = (time.perf_counter() - start) * 1000
    assert resp.status_code == 200, resp.text
    into.append(elapsed)


async def end_to_end(
    model_url: str, config: AccessConfig, key: str, token: str, args: argparse.Namespace
) -> list[dict[str, Any]]:
    modes = {"off": (None, {}), "api key": (config, {"Authorization": f"Bearer {key}"})}
    modes["jwt"] = (config, {"Authorization": f"Bearer {token}"})
    durations: dict[str, list[float]] = {m: [] for m in modes}
    per_round: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    tmp = Path(tempfile.mkdtemp(prefix="sleuth-bench-access-"))
    for r in range(args.rounds):
        order = list(modes)[r % 3 :] + list(modes)[: r % 3]
        for mode in order:
            cfg, headers = modes[mode]
            async with (
                Served(model_url, cfg, tmp / f"{mode}.jsonl") as url,
                httpx.AsyncClient(headers=headers, timeout=60) as client,
            ):
                gate = asyncio.Semaphore(args.concurrency)
                await _ask(client, url, gate, [])  # warm-up, not counted
                this: list[float] = []
                await asyncio.gather(*(_ask(client, url, gate, this) for _ in range(args.requests)))
                durations[mode] += this
                per_round[mode].append((pct(this, 0.5), pct(this, 0.99)))
    rows = []
    for mode, values in durations.items():
        # paired by round (the same minutes of the machine): the median of the differences
        d50 = [m[0] - o[0] for m, o in zip(per_round[mode], per_round["off"], strict=True)]
        d99 = [m[1] - o[1] for m, o in zip(per_round[mode], per_round["off"], strict=True)]
        rows.append(
            {
                "mode": mode,
                "n": len(values),
                "p50_ms": round(pct(values, 0.5), 2),
                "p99_ms": round(pct(values, 0.99), 2),
                "p50_minus_off_ms": round(statistics.median(d50), 2),
                "p99_minus_off_ms": round(statistics.median(d99), 2),
            }
        )
    return rows


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    jwks = Jwks()
    with tempfile.TemporaryDirectory() as tmp:
        config, key = access(Path(tmp) / "keys", jwks)
        token = jwks.token("gw")
        rounds, synth = CASES["2 iterations"]
        scenario = scenario_for(rounds, synth, LatencyProfile())
        with ScriptedProcess(scenario) as server:
            trace = await a_trace(server.url)
            part = await parts(config, key, token, trace, args.parts)
            rows = await end_to_end(server.url, config, key, token, args)
    return {"parts": part, "end_to_end": rows, "config": vars(args)}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| part | wall p50 µs | wall p99 µs | CPU p50 µs | CPU p99 µs |",
        "|---|---|---|---|---|",
    ]
    for name, r in result["parts"].items():
        lines.append(
            f"| {name} | {r['p50_us']} | {r['p99_us']} | {r['cpu_p50_us']} | {r['cpu_p99_us']} |"
        )
    lines += [
        "",
        "| mode | n | p50 ms | p99 ms | p50 − off ms (median of rounds) | p99 − off ms (same) |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["end_to_end"]:
        lines.append(
            f"| {r['mode']} | {r['n']} | {r['p50_ms']} | {r['p99_ms']} | "
            f"{r['p50_minus_off_ms']} | {r['p99_minus_off_ms']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="per mode and round")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", type=int, default=2000, help="timings of each part")
    parser.add_argument("--out", default="bench/results/agent_access.json")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
