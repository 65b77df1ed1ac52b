"""Hostile-load benchmark of the agent and a tool service: overload, huge bodies, a stampede.

    .venv/bin/python bench/faults.py [--seconds 15] [--quick]

Every part runs real processes: ``sleuth agent``, the scripted model server (seed latency
profile: a tool-call turn of 150 ms, a 31-token answer of 300 ms), and for the stampede
``sleuth tool-service`` serving sql_query on an embedded PostgreSQL (pgserver) with the sample
data. RSS is read from ``/proc/<pid>/status`` every 20 ms.

1. **Overload (10x).** 64 closed-loop clients (the agent's ``maxConcurrentRequests``), then 640
   for the same time; a refused client retries after 10 ms. Served and refused counts, latency of
   served requests and of refusals (the shed latency), the agent's RSS.
2. **10 MB bodies.** 30 concurrent POST /v1/query of 10 MB each, with Content-Length and chunked,
   against the default limit (1 MiB) and against the largest (64 MiB: the whole body is read, as
   before the limit existed), side by side: statuses, bytes the agent accepted, RSS peak and
   RSS 3 s later.
3. **Stampede.** 64 concurrent requests whose model asks sql_query for the same new arguments
   (a 1-2 s query), cache off; then 64 requests with 64 different arguments against a pool of 4:
   calls the tool service received and executed per unique argument set, how the calls ended.

Prints tables and writes ``bench/results/faults.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from sleuth.core.process import free_port, stop_process, wait_healthy
from sleuth.core.tools import ToolSpec
from sleuth.scripted import (
    Match,
    Rule,
    Scenario,
    ScriptedProcess,
    ScriptedResponse,
    ScriptedToolCall,
    seed_latency_profile,
)
from sleuth.tools.base import ToolOutput
from sleuth.tools.sample.contracts import load_postgres

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
ANSWER = "In 2025 you signed 47 contracts with EU providers above 100,000 €. " * 2
MiB = 1024 * 1024


@dataclass
class SleepSql:
    """The overload part's sql_query: sleeps the seed's 50 ms, returns one row."""

    @property
    def spec(self) -> ToolSpec:
        params = {"type": "object", "properties": {"query": {"type": "string"}}}
        return ToolSpec("sql_query", "benchmark stand-in for sql_query", params)

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        await asyncio.sleep(0.05)
        return ToolOutput(content={"num_contracts": 47})


def sleep_sql(config: object) -> SleepSql:
    """Tool factory for the agent's configuration file: ``faults:sleep_sql``."""
    return SleepSql()


# --- processes -------------------------------------------------------------------------------


class Rss:
    """Samples a process's resident set size every 20 ms, in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.now())

    def __enter__(self) -> Rss:
        self.peak = self.now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Child:
    """A ``sleuth`` subcommand as a child process, waited for until /healthz answers."""

    def __init__(self, name: str, args: list[str], workdir: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"{name}.log"
        cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
        cmd += [*args, "--port", str(self.port)]
        full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]), **env}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, env=full, stdout=out, stderr=subprocess.STDOUT)
        wait_healthy(
            f"{self.url}/healthz",
            self.proc,
            timeout=180,
            name=name,
            output=lambda: self.log.read_text()[-2000:],
        )

    def stop(self) -> None:
        stop_process(self.proc)

    def cpu_s(self) -> float:
        """User + system CPU seconds of the child so far (Linux /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def agent(name: str, config: dict[str, Any], workdir: Path) -> Child:
    path = workdir / f"{name}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    env = {"SLEUTH_AGENT_NAME": name, "SLEUTH_AGENT_HOST": "127.0.0.1"}
    return Child(name, ["agent", "--config", str(path)], workdir, env)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- 1. overload -----------------------------------------------------------------------------


@dataclass
class Load:
    clients: int
    served: list[float] = field(default_factory=list)
    shed: list[float] = field(default_factory=list)
    other: Counter[str] = field(default_factory=Counter)
    retry_after: set[str] = field(default_factory=set)


QUERY = json.dumps({"question": "how many?"}).encode()
REQUEST = (
    b"POST /v1/query HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(QUERY)}\r\n\r\n".encode()
    + QUERY
)


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[int, str]:
    """One request on a kept-alive connection: (status, Retry-After)."""
    writer.write(REQUEST)
    await writer.drain()
    status = int((await reader.readline()).split(b" ")[1])
    length, retry = 0, ""
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "retry-after":
            retry = value.strip()
    await reader.readexactly(length)
    return status, retry


async def closed_loop(port: int, clients: int, seconds: float, polite: bool = False) -> Load:
    """``clients`` connections, each sending its next request as soon as it has an answer; a
    refused one after 10 ms (a hostile client), or after its Retry-After (``polite``). A bare
    HTTP/1.1 client, so that 640 of them cost this process little CPU."""
    load = Load(clients)
    deadline = time.monotonic() + seconds

    async def one() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    status, retry = await _exchange(reader, writer)
                except (ConnectionError, OSError, IndexError, ValueError) as err:
                    load.other[type(err).__name__] += 1
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    continue
                ms = (time.perf_counter() - started) * 1000
                if status == 200:
                    load.served.append(ms)
                elif status == 429:
                    load.shed.append(ms)
                    load.retry_after.add(retry or "-")
                    await asyncio.sleep(float(retry or 1) if polite else 0.01)
                else:
                    load.other[str(status)] += 1
        finally:
            writer.close()

    await asyncio.gather(*(one() for _ in range(clients)))
    return load


def overload(model_url: str, workdir: Path, seconds: float) -> dict[str, Any]:
    config = {
        "model": {"endpoint": model_url, "servedModelName": "scripted"},
        "toolCacheTTLSeconds": 0,
        "maxConcurrentRequests": 64,
        "onlineEval": {"sampleRate": 0},
        "tools": [{"name": "sql_query", "type": "custom", "factory": "faults:sleep_sql"}],
    }
    proc = agent("overload", config, workdir)
    rows = []
    try:
        asyncio.run(closed_loop(proc.port, 16, 2))  # warm-up
        for clients, polite in ((64, False), (640, False), (640, True)):
            idle = Rss(proc.proc.pid).now()
            cpu = proc.cpu_s()
            with Rss(proc.proc.pid) as rss:
                load = asyncio.run(closed_loop(proc.port, clients, seconds, polite))
            cpu = proc.cpu_s() - cpu
            time.sleep(3)
            answered = len(load.served) + len(load.shed)
            rows.append(
                {
                    "clients": clients,
                    "on 429": "wait Retry-After" if polite else "retry after 10 ms",
                    "seconds": seconds,
                    "served": len(load.served),
                    "served_per_s": round(len(load.served) / seconds, 1),
                    "served_p50_ms": round(_pct(load.served, 0.5)),
                    "served_p99_ms": round(_pct(load.served, 0.99)),
                    "shed": len(load.shed),
                    "shed_p50_ms": round(_pct(load.shed, 0.5), 1),
                    "shed_p99_ms": round(_pct(load.shed, 0.99), 1),
                    "retry_after": sorted(load.retry_after),
                    "other": dict(load.other),
                    "agent_cpu_ms_per_answer": round(cpu * 1000 / max(answered, 1), 2),
                    "rss_before_mib": round(idle),
                    "rss_peak_mib": round(rss.peak),
                    "rss_after_mib": round(Rss(proc.proc.pid).now()),
                }
            )
    finally:
        proc.stop()
    return {"rows": rows}


# --- 2. huge bodies ----------------------------------------------------------------------------


async def send_body(port: int, size: int, chunked: bool) -> tuple[str, int]:
    """(the agent's status, or what happened; bytes written before it answered or cut)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = "POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {size}\r\n"
    writer.write((head + "\r\n").encode())
    answer = asyncio.ensure_future(reader.readline())
    sent = 0
    status = "no answer"
    try:
        while sent < size and not answer.done():
            block = (b'{"question": "' if sent == 0 else b"") + b"x" * (64 * 1024)
            block = block[: size - sent - 2] + (b'"}' if len(block) >= size - sent - 2 else b"")
            writer.write(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
            await writer.drain()
            sent += len(block)
        if chunked and not answer.done():
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    except (ConnectionError, OSError):
        pass  # the agent closed the connection: its answer, if any, is read below
    try:
        line = await asyncio.wait_for(answer, 120)
        status = line.decode().split(" ")[1] if line else "closed"
    except (ConnectionError, OSError, TimeoutError, IndexError) as err:
        status = f"cut ({type(err).__name__})"
    finally:
        writer.close()
    return status, sent


def bodies(model_url: str, workdir: Path) -> dict[str, Any]:
    rows = []
    for label, limit in (("default (1 MiB)", 1 * MiB), ("largest (64 MiB)", 64 * MiB)):
        config = {
            "model": {"endpoint": model_url, "servedModelName": "scripted"},
            "onlineEval": {"sampleRate": 0},
            "limits": {"maxBodyBytes": limit},
        }
        proc = agent(f"bodies-{limit // MiB}", config, workdir)
        try:
            for chunked in (False, True):
                before = Rss(proc.proc.pid).now()
                started = time.perf_counter()
                with Rss(proc.proc.pid) as rss:

                    async def burst(port: int, chunked: bool) -> list[tuple[str, int]]:
                        return list(
                            await asyncio.gather(
                                *(send_body(port, 10 * MiB, chunked) for _ in range(30))
                            )
                        )

                    results = asyncio.run(burst(proc.port, chunked))
                wall = time.perf_counter() - started
                time.sleep(3)
                rows.append(
                    {
                        "limit": label,
                        "framing": "chunked" if chunked else "Content-Length",
                        "requests": 30,
                        "statuses": dict(Counter(s for s, _ in results)),
                        "mib_sent_per_request": round(
                            statistics.mean(b for _, b in results) / MiB, 2
                        ),
                        "wall_s": round(wall, 2),
                        "rss_before_mib": round(before),
                        "rss_peak_mib": round(rss.peak),
                        "rss_after_3s_mib": round(Rss(proc.proc.pid).now()),
                    }
                )
        finally:
            proc.stop()
    return {"rows": rows}


# --- 3. stampede -------------------------------------------------------------------------------


SLOW_SQL = "SELECT count(*) AS n FROM generate_series(1, $1::int) g WHERE g % 97 = $2"


def stampede_scenario(distinct: int) -> Scenario:
    """Question ``q<i>`` → sql_query with argument set ``i``; then an answer."""
    rules = [
        Rule(
            match=Match(position=0, last_user_contains=f"q{i}."),
            response=ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(
                        name="sql_query", arguments={"query": SLOW_SQL, "params": [4_000_000, i]}
                    )
                ]
            ),
        )
        for i in range(distinct)
    ]
    return Scenario(rules=rules, fallback=ScriptedResponse(content="counted"))


async def prepare_db(owner: str) -> None:
    conn = await asyncpg.connect(owner)
    try:
        await load_postgres(conn)
        await conn.execute((ROOT / "docs" / "sql" / "readonly-role.sql").read_text())
    finally:
        await conn.close()


def tool_calls(url: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
        if line.startswith("sleuth_tool_service_calls_total{"):
            labels, value = line.rsplit(" ", 1)
            outcome = labels.split('outcome="')[1].split('"')[0]
            out[outcome] += int(float(value))
    return out


def stampede(workdir: Path) -> dict[str, Any]:
    from sleuth.demo.postgres import embedded_postgres  # pgserver, a dependency of sleuth

    rows = []
    data = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    with embedded_postgres(data, cleanup_mode="delete") as server:
        owner = server.get_uri()
        asyncio.run(prepare_db(owner))
        scheme, rest = owner.split("://", 1)
        reader = f"{scheme}://sleuth_reader@{rest.split('@', 1)[1]}"
        binding = {
            "agentRef": {"name": "bench"},
            "type": "sql_query",
            "sqlQuery": {
                "connectionSecretRef": {"name": "pg", "key": "uri"},
                "allowedTables": ["contracts"],
                "statementTimeoutSeconds": 30,
                "poolSize": 4,
                "acquireTimeoutSeconds": 2,
            },
        }
        (workdir / "sql.json").write_text(json.dumps(binding))
        args = ["tool-service", "--config", str(workdir / "sql.json"), "--host", "127.0.0.1"]
        tool = Child("sql-tool", args, workdir, {"SLEUTH_SQL_CONNECTION_URI": reader})
        try:
            for distinct in (1, 64):
                with ScriptedProcess(stampede_scenario(distinct)) as model:
                    config = {
                        "model": {"endpoint": model.url, "servedModelName": "scripted"},
                        "toolCacheTTLSeconds": 0,
                        "maxConcurrentRequests": 128,
                        "onlineEval": {"sampleRate": 0},
                        "tools": [
                            {
                                "name": "sql_query",
                                "type": "sql_query",
                                "endpoint": tool.url,
                                "timeoutSeconds": 10,
                            }
                        ],
                    }
                    proc = agent(f"stampede-{distinct}", config, workdir)
                    try:
                        before = tool_calls(tool.url)
                        rows.append(run_stampede(proc.url, distinct) | {"distinct": distinct})
                        after = tool_calls(tool.url)
                    finally:
                        proc.stop()
                received = after - before
                rows[-1]["tool_service_received"] = sum(received.values())
                rows[-1]["tool_service_outcomes"] = dict(received)
                executions = received["ok"] + sum(
                    v for k, v in received.items() if k not in ("ok", "shared", "busy")
                )
                rows[-1]["executions"] = executions
                rows[-1]["calls_per_unique_argument_set"] = round(
                    sum(received.values()) / distinct, 2
                )
        finally:
            tool.stop()
    return {"rows": rows}


def run_stampede(url: str, distinct: int) -> dict[str, Any]:
    async def go() -> list[tuple[int, float, list[str]]]:
        async with httpx.AsyncClient(timeout=120) as client:

            async def ask(i: int) -> tuple[int, float, list[str]]:
                started = time.perf_counter()
                r = await client.post(
                    f"{url}/v1/query", json={"question": f"count q{i % distinct}."}
                )
                ms = (time.perf_counter() - started) * 1000
                steps = r.json()["trace"]["steps"] if r.status_code == 200 else []
                statuses = [c["status"] for s in steps if s["kind"] == "tools" for c in s["calls"]]
                return r.status_code, ms, statuses

            return list(await asyncio.gather(*(ask(i) for i in range(64))))

    results = asyncio.run(go())
    latencies = [ms for _, ms, _ in results]
    return {
        "requests": 64,
        "http": dict(Counter(str(code) for code, _, _ in results)),
        "tool_call_status": dict(Counter(s for _, _, ss in results for s in ss)),
        "p50_ms": round(_pct(latencies, 0.5)),
        "max_ms": round(max(latencies)),
    }


# --- main --------------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="each overload phase")
    parser.add_argument("--quick", action="store_true", help="3 s phases")
    parser.add_argument("--only", choices=["overload", "bodies", "stampede"])
    args = parser.parse_args()
    seconds = 3.0 if args.quick else args.seconds
    scenario = Scenario(
        turns=[
            ScriptedResponse(
                tool_calls=[ScriptedToolCall(name="sql_query", arguments={"query": "q"})],
                completion_tokens=1,
            ),
            ScriptedResponse(content=ANSWER, completion_tokens=31),
        ],
        latency=seed_latency_profile(per_token_ms=5.0),
    )
    out: dict[str, Any] = {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="sleuth-faults-") as tmp:
        workdir = Path(tmp)
        with ScriptedProcess(scenario) as model:
            if args.only in (None, "overload"):
                out["overload"] = overload(model.url, workdir, seconds)
                print("## overload\n" + table(out["overload"]["rows"]), flush=True)
            if args.only in (None, "bodies"):
                out["bodies"] = bodies(model.url, workdir)
                print("## 10 MB bodies\n" + table(out["bodies"]["rows"]), flush=True)
        if args.only in (None, "stampede"):
            out["stampede"] = stampede(workdir)
            print("## stampede\n" + table(out["stampede"]["rows"]), flush=True)
    out["load_average_end"] = os.getloadavg()
    print(f"load average: start {out['load_average_start']}, end {out['load_average_end']}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "faults.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
