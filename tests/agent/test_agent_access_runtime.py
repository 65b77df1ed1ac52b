"""Access while the agent runs: keys rotated under traffic, a JWKS that cannot be read, a
noisy caller held to its share, and a laptop's agent that listens on loopback only."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.scripted import LatencyProfile, Scenario, ScriptedResponse, ScriptedServer
from tests.agent.access_kit import LocalIssuer, key_directory, new_key
from tests.agent.agent_doubles import SEED_QUESTION, seed_tools, seed_turns
from tests.agent.agent_process import AgentProcess
from tests.support.paths import ROOT
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

AUDIENCE = "sleuth.dev/agent/test/ops"


def _config(model_url: str, access: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": {"endpoint": model_url, "servedModelName": "scripted"},
        "tools": seed_tools(),
        "planner": {"fallbackToRouter": False},
        **extra,
    }
    if access is not None:
        config["access"] = access
    return config


def _ask(url: str, key: str) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    resp = httpx.post(
        f"{url}/v1/query", json={"question": SEED_QUESTION}, headers=headers, timeout=30
    )
    return resp.status_code


def test_keys_rotate_under_traffic_without_a_restart(tmp_path: Path) -> None:
    """Clients keep asking (4 threads, at most 30 s and 600 requests) while a new key is added,
    the clients move to it, and the old key is removed: no request with a key in its
    directory is refused, the removed key is refused within the reload period, same process."""
    old, new = new_key(), new_key()
    keys = tmp_path / "keys"
    directory = key_directory(keys, "dashboard", old)
    access = {
        "callers": [{"name": "dashboard", "apiKeyDirectory": str(directory)}],
        "keyReloadSeconds": 1,
    }
    with ScriptedServer(Scenario(turns=seed_turns())) as model:
        config = _config(model.url, access)
        with AgentProcess(config, tmp_path, name="rotate") as agent:
            pid = agent._proc.pid if agent._proc else None
            current = [old]
            results: Counter[tuple[str, int]] = Counter()
            stop = threading.Event()
            deadline = time.monotonic() + 30

            def client() -> None:
                for _ in range(150):
                    if stop.is_set() or time.monotonic() > deadline:
                        return
                    key = current[0]
                    results[("old" if key == old else "new", _ask(agent.url, key))] += 1

            threads = [threading.Thread(target=client) for _ in range(4)]
            for t in threads:
                t.start()
            try:
                time.sleep(1.0)
                (directory / "key-next").write_text(new)  # step 1: both valid
                eventually(lambda: (_ask(agent.url, new) == 200) or None, 15, "new key valid")
                current[0] = new  # step 2: the clients move
                time.sleep(1.0)
                (directory / "key-0").unlink()  # step 3: the old key goes
                eventually(lambda: (_ask(agent.url, old) == 401) or None, 15, "old key refused")
                time.sleep(1.0)
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=40)
            assert agent._proc is not None
            assert agent._proc.pid == pid
            assert agent._proc.poll() is None
            assert results[("new", 200)] > 0
            assert results[("old", 200)] > 0
            # Traffic with the old key stopped before it was removed: nothing was refused.
            assert set(results) <= {("old", 200), ("new", 200)}, results


def test_tokens_are_refused_until_the_jwks_can_be_read_and_a_new_key_id_is_fetched(
    tmp_path: Path,
) -> None:
    with LocalIssuer() as issuer, ScriptedServer(Scenario(turns=seed_turns())) as model:
        issuer.available = False
        access = {
            "issuers": [
                {"issuer": issuer.issuer, "jwksUrl": issuer.jwks_url, "audiences": [AUDIENCE]}
            ],
            "callers": [{"name": "gw", "token": {"issuer": issuer.issuer, "subject": "gw"}}],
            "keyReloadSeconds": 1,
        }
        with AgentProcess(_config(model.url, access), tmp_path, name="jwks") as agent:
            token = issuer.token("gw", AUDIENCE)
            assert _ask(agent.url, token) == 401  # fail closed: no JWKS yet
            assert "its tokens are refused" in agent.log.read_text()
            issuer.available = True
            eventually(lambda: (_ask(agent.url, token) == 200) or None, 30, "JWKS read again")
            issuer.rotate("k2")  # the issuer's new signing key, a key id the agent lacks
            eventually(
                lambda: (_ask(agent.url, issuer.token("gw", AUDIENCE)) == 200) or None,
                30,
                "the new key id fetched",
            )
            assert _ask(agent.url, token) == 401  # the old key left the JWKS


def test_a_noisy_caller_meets_429_at_its_share_while_a_quiet_one_gets_in(
    tmp_path: Path,
) -> None:
    slow = ScriptedResponse(content="slow answer", delay_ms=3000)
    quiet_key, noisy_key = new_key(), new_key()
    keys = tmp_path / "keys"
    access = {
        "callers": [
            {"name": "quiet", "apiKeyDirectory": str(key_directory(keys, "quiet", quiet_key))},
            {"name": "noisy", "apiKeyDirectory": str(key_directory(keys, "noisy", noisy_key))},
        ]
    }
    scenario = Scenario(turns=[], fallback=slow, latency=LatencyProfile())
    with ScriptedServer(scenario) as model:
        config = _config(model.url, access, maxConcurrentRequests=4, tools=[])
        with AgentProcess(config, tmp_path, name="fair") as agent:
            codes: dict[str, list[int]] = {"noisy": [], "quiet": []}
            bodies: list[str] = []

            def ask(name: str, key: str) -> None:
                resp = httpx.post(
                    f"{agent.url}/v1/query",
                    json={"question": "q"},
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=30,
                )
                codes[name].append(resp.status_code)
                if resp.status_code == 429:
                    bodies.append(resp.text)

            first = threading.Thread(target=ask, args=("quiet", quiet_key))
            first.start()  # the quiet caller is active: two callers share 4 slots
            time.sleep(0.5)
            noisy = [threading.Thread(target=ask, args=("noisy", noisy_key)) for _ in range(4)]
            for t in noisy:
                t.start()
                time.sleep(0.1)
            time.sleep(0.3)
            second = threading.Thread(target=ask, args=("quiet", quiet_key))
            second.start()
            for t in [first, second, *noisy]:
                t.join(timeout=40)
            assert sorted(codes["noisy"]) == [200, 200, 429, 429], codes
            assert codes["quiet"] == [200, 200], codes
            assert all("its share (2)" in b for b in bodies), bodies


def _run_agent(env: dict[str, str], config: Path, timeout: float = 60) -> subprocess.Popen[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
    return subprocess.Popen(
        [*cmd, "agent", "--config", str(config), "--port", "0"],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_without_access_the_agent_refuses_to_listen_beyond_loopback(tmp_path: Path) -> None:
    config = tmp_path / "agent.json"
    config.write_text('{"model": {"endpoint": "http://127.0.0.1:9/v1", "servedModelName": "m"}}')
    proc = _run_agent({"SLEUTH_AGENT_HOST": "0.0.0.0"}, config)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "SLEUTH_AGENT_HOST=0.0.0.0" in out
    assert "no `access`" in out


def test_without_access_the_agent_says_it_listens_on_loopback_only(tmp_path: Path) -> None:
    with ScriptedServer(Scenario(turns=seed_turns())) as model:
        env_host = os.environ.pop("SLEUTH_AGENT_HOST", None)
        try:
            with AgentProcess(_config(model.url, None), tmp_path, name="laptop") as agent:
                assert httpx.post(
                    f"{agent.url}/v1/query", json={"question": SEED_QUESTION}, timeout=30
                ).json()["trace"]  # the local caller is granted everything
                log = agent.log.read_text()
        finally:
            if env_host is not None:
                os.environ["SLEUTH_AGENT_HOST"] = env_host
    assert "no access configured: listening on 127.0.0.1 only" in log
