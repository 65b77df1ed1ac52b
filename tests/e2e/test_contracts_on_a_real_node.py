"""The platform as a platform team runs it, on a real node: the README's "On a cluster" block.

`helm install` (the operator's pod runs from the operator image, holds the Lease through the
in-cluster config and reconciles), `kubectl apply -f examples/contracts/` with only the values a
team changes for its cluster (platform_kit), `kubectl wait --for=condition=Ready` on all three
kinds, then the seed's question from the host through the agent's Service, answered through the
tool service pods, PostgreSQL and the Qdrant store; `helm test`; an eval Job from the CronJob
whose pods write the EvalSchedule's status; what the pods are placed on; and life under change.

Every container of ours really runs (kubelet, containerd, runc on this machine); GPU pods go to
kwok's simulated H100 nodes. Slow: images are cached by key, the cluster start and the rollouts
take minutes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contracts_kit import (
    AGENT_PODS,
    APP,
    RELEASE,
    SYSTEM,
    Platform,
    assert_none_failed,
    audit_records,
    chart_values,
    eval_traces,
    jaeger_of,
    pods_of,
    post,
    served_across_pods,
    under_traffic,
    with_agent_spans,
)
from manifests import TRACE_NAMESPACE, backends, caller_job, trace_backend, vector_store
from node_config import CONTAINERD_SOCK
from platform_kit import (
    ROOT,
    build_image,
    eventually,
    example_as_a_user_edits_it,
    prometheus,
    self_hosted_agent,
)

from sleuth.core.names import TSA_GAUGE
from sleuth.tools.sample.contracts import SEED_QUESTION
from tests.support.jaeger import CONFIG as JAEGER_CONFIG
from tests.support.jaeger import required_binary

pytestmark = [pytest.mark.cluster, pytest.mark.realnode, pytest.mark.slow]


@pytest.fixture(scope="module")
def platform(real_node: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    images = {}
    for name in ("operator", "sleuth", "testkit"):
        archive, ref = build_image(name)
        real_node.import_image(archive)
        images[name] = ref
    p = Platform(real_node, images)

    # What a platform team has before sleuth: PostgreSQL, SearxNG, a model server, a store, and
    # a trace backend (Jaeger) the chart's tracing.endpoint names.
    p.apply(backends(images["testkit"]))
    p.apply(trace_backend(images["testkit"], required_binary(), JAEGER_CONFIG))
    store = Path(tmp_path_factory.mktemp("qdrant-store"))
    os.chown(store, 65532, 65532)
    p.apply(vector_store(APP, images["sleuth"], store, real_node.node_name))

    # helm install, as the README says (with the images a team builds, and two replicas so that
    # a standby can take the Lease).
    real_node.helm(
        "install", RELEASE, str(ROOT / "charts" / "sleuth"), "--namespace", SYSTEM,
        "--create-namespace", *chart_values(images), "--wait", "--timeout", "10m", timeout=900,
    )  # fmt: skip
    p.kubectl("wait", "--for=condition=complete", "job/ingest-contract-clauses", "-n", APP,
              "--timeout=600s", timeout=660)  # fmt: skip
    p.apply(example_as_a_user_edits_it(APP))
    p.apply([self_hosted_agent(APP)])
    for ns, deploy in (("data", "postgres"), ("search", "searxng"), ("models", "model"),
                       (TRACE_NAMESPACE, "jaeger")):  # fmt: skip
        p.kubectl("rollout", "status", f"deployment/{deploy}", "-n", ns, "--timeout=600s",
                  timeout=660)  # fmt: skip
    yield p
    for ns, deploy in (("data", "postgres"),):
        log = p.kubectl("logs", f"deployment/{deploy}", "-n", ns, "--tail=50", check=False)
        print(f"--- {ns}/{deploy}\n{log.stdout}{log.stderr}")
    log = p.kubectl("logs", "-n", SYSTEM, "-l", "app.kubernetes.io/name=sleuth", "--tail=80",
                    "--prefix", check=False)  # fmt: skip
    print(f"--- operator\n{log.stdout}{log.stderr}")


def test_every_kind_becomes_ready(platform: Platform) -> None:
    for what in ("agentdeployment/contracts", "toolbinding --all", "evalschedule/contracts-weekly"):
        platform.kubectl(
            "wait", "--for=condition=Ready", *what.split(), "-n", APP, "--timeout=600s",
            timeout=660,
        )  # fmt: skip


def test_the_operator_pod_runs_and_holds_the_lease(platform: Platform) -> None:
    pods = pods_of(platform, SYSTEM, "app.kubernetes.io/name=sleuth")
    assert len(pods) == 2
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    assert len(running) == 2, [p["status"] for p in pods]
    for pod in pods:
        for status in pod["status"]["containerStatuses"]:
            assert status["restartCount"] == 0, status  # no crash loop (the getpwuid defect)
    lease = platform.get("lease", "sleuth-operator", "-n", SYSTEM)
    holder = lease["spec"]["holderIdentity"]
    assert any(holder.startswith(p["metadata"]["name"]) for p in pods), holder


def test_seed_question_is_answered_through_the_agent_service(platform: Platform) -> None:
    url = platform.service_url(APP, "contracts-agent", "http") + "/v1/query"
    _, body = eventually(
        "the agent answers",
        lambda: (lambda r: r if r[0] == 200 else None)(
            post(url, {"question": SEED_QUESTION}, token=platform.portal_token())
        ),
        timeout=300,
    )
    answer = body["answer"]
    for fact in ("47 contracts", "8.3 M€", "clause 8.3", "Provider A", "Provider B", "7.1",
                 "Provider C"):  # fmt: skip
        assert fact in answer, (fact, answer)
    cited = {c["id"] for c in body["citations"]}
    assert {"contract-provider-a-2025#0", "contract-provider-b-2025#0",
            "contract-provider-c-2025#0"} <= cited, cited  # fmt: skip
    steps = body["trace"]["steps"]
    calls = [(c["tool"], c["status"]) for s in steps if s["kind"] == "tools" for c in s["calls"]]
    assert calls == [("sql_query", "ok"), ("vector_search", "ok")], calls


def test_the_pods_trace_a_request_into_the_trace_backend(platform: Platform) -> None:
    """The chart's tracing.endpoint → the operator's flags → OTEL_* on the agent and tool-service
    pods → spans from three pods in one trace, read back from Jaeger."""
    url = platform.service_url(APP, "contracts-agent", "http") + "/v1/query"
    status, body = post(url, {"question": SEED_QUESTION}, token=platform.portal_token())
    assert status == 200, body
    jaeger = jaeger_of(platform)
    # root, 3 chat, 2 execute_tool (the tool calls may be answered from the agent's tool cache:
    # the seed question was asked before, and then no tool service is called). The spans come
    # in several exports, the root (which ends last) in the last one: wait for all of the agent's.
    trace = eventually(
        "the agent pod's spans of the request in Jaeger",
        lambda: with_agent_spans(jaeger.trace(body["sleuth"]["traceId"])),
        timeout=120,
    )
    root = trace.one("invoke_agent contracts")
    assert (root.service, root.parent_id) == ("sleuth-agent-contracts", None)
    assert len([s for s in trace.children(root) if s.name.startswith("chat ")]) == 3
    assert {s.name for s in trace.children(root)} >= {
        "execute_tool sql_query",
        "execute_tool vector_search",
    }
    # The tool-service pods' spans, below the agent pod's calls (the seed question's first
    # asking, when nothing was cached, or this one)
    for tool, binding in (("sql_query", "contracts-sql"), ("vector_search", "contracts-clauses")):
        eventually(
            f"a {tool} call traced from the agent pod into the {binding} pod",
            lambda tool=tool, binding=binding: served_across_pods(jaeger, tool, binding),
            timeout=120,
        )


def assert_eval_questions_traced(platform: Platform) -> None:
    """An eval Job's pod traced each golden question; the agent pod's request is a child of
    it, the scores beside it."""
    jaeger = jaeger_of(platform)
    traces = eventually("the eval's traces", lambda: eval_traces(jaeger), timeout=120)
    joined, scored = 0, 0
    for trace in traces:
        [question] = [s for s in trace.spans if s.name.startswith("eval_case ")]
        below = {s.name: s for s in trace.children(question)}
        agent = below.get("invoke_agent contracts")
        # every question: the agent pod's request below it, or the reason it has no answer
        assert agent is not None or "evaluate agent" in below, sorted(below)
        joined += agent is not None and agent.service == "sleuth-agent-contracts"
        scored += any(name.startswith("evaluate ") for name in below)
    assert joined > 0
    assert scored > 0


def test_helm_test_succeeds(platform: Platform) -> None:
    out = platform.cluster.helm("test", RELEASE, "--namespace", SYSTEM, "--timeout", "5m",
                                timeout=400)  # fmt: skip
    assert "Phase:          Succeeded" in out.stdout, out.stdout


def test_our_pods_run_on_the_real_node_and_gpu_pods_on_h100(platform: Platform) -> None:
    node = platform.cluster.node_name
    pods = platform.get("pods", "-A")["items"]
    ours = [p for p in pods if p["metadata"]["labels"].get("app.kubernetes.io/part-of") == "sleuth"
            or p["metadata"]["namespace"] == SYSTEM]  # fmt: skip
    assert ours
    for pod in ours:
        where = pod["spec"].get("nodeName", "")
        component = pod["metadata"]["labels"].get("app.kubernetes.io/component", "operator")
        if component == "model":
            assert where.startswith("gpu-h100"), (pod["metadata"]["name"], where)
        else:
            assert where == node, (pod["metadata"]["name"], where)
    for pod in pods_of(platform, APP, "app.kubernetes.io/part-of=sleuth"):
        if pod["metadata"]["labels"].get("app.kubernetes.io/component") != "model":
            assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": node}, pod["spec"]
    agent = platform.get("agentdeployment", "contracts", "-n", APP)
    ready = {c["type"]: c for c in agent["status"]["conditions"]}["Ready"]
    assert ready["status"] == "True"
    # Ready counts only really Ready pods: once the rollout is over, every agent pod is on the
    # real node and Ready
    platform.kubectl("rollout", "status", "deployment/contracts-agent", "-n", APP,
                     "--timeout=300s", timeout=330)  # fmt: skip
    eventually(
        "the old ReplicaSets' pods are gone",
        lambda: len(pods_of(platform, APP, AGENT_PODS)) == 2,
        timeout=120,
    )
    agent_pods = pods_of(platform, APP, AGENT_PODS)
    assert len(agent_pods) == 2
    for pod in agent_pods:
        conds = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert conds["Ready"] == "True"


def test_an_eval_job_writes_scores_into_the_status(platform: Platform) -> None:
    platform.kubectl("create", "job", "--from=cronjob/contracts-weekly-eval",
                     "contracts-weekly-now", "-n", APP)  # fmt: skip
    platform.kubectl("wait", "--for=condition=complete", "job/contracts-weekly-now", "-n", APP,
                     "--timeout=900s", timeout=960)  # fmt: skip
    schedule = platform.get("evalschedule", "contracts-weekly", "-n", APP)
    status = schedule["status"]
    assert status["lastRunOutcome"] == "Succeeded", status
    assert status["lastRunId"] == "contracts-weekly-now"
    assert "toolSelectionAccuracy" in status["scores"], status["scores"]
    assert_eval_questions_traced(platform)


def test_pods_authenticate_with_projected_tokens_and_another_account_is_refused(
    platform: Platform,
) -> None:
    """Real identities end to end: the eval Job's pod (the previous test) was admitted by its
    projected ServiceAccount token; two pods identical but for their ServiceAccount — the
    portal's, which the example admits, and one no rule names — each send the token their
    kubelet obtained by TokenRequest for the agent's audience: 200 and 401."""
    eval_account = "contracts-weekly-eval"
    records = [
        r
        for r in audit_records(platform)
        if r.get("subject") == f"system:serviceaccount:{APP}:{eval_account}"
    ]
    assert {(r["caller"], r["proof"]) for r in records} == {("eval-contracts-weekly", "token")}
    assert any(r["outcome"] == "answered" for r in records), records
    audience = platform.get("agentdeployment", "contracts", "-n", APP)["status"]["agentAudience"]
    platform.portal_token()  # creates the portal's ServiceAccount when it is missing
    platform.kubectl("create", "serviceaccount", "contracts-intruder", "-n", APP)
    url = platform.service_url(APP, "contracts-agent", "http") + "/v1/query"
    image = platform.images["testkit"]
    jobs = {"portal": "contracts-portal", "intruder": "contracts-intruder"}
    platform.apply(
        [caller_job(f"ask-as-{who}", acct, audience, image, url, APP) for who, acct in jobs.items()]
    )
    for who in jobs:
        platform.kubectl("wait", "--for=condition=complete", f"job/ask-as-{who}", "-n", APP,
                         "--timeout=300s", timeout=330)  # fmt: skip
    said = {
        who: platform.kubectl("logs", f"job/ask-as-{who}", "-n", APP).stdout.strip() for who in jobs
    }
    assert said == {"portal": "status 200", "intruder": "status 401"}, said
    refused = eventually(
        "the agent's audit record of the intruder's request",
        lambda: [r for r in audit_records(platform) if r["outcome"] == "unauthenticated"],
        timeout=60,
    )
    assert all(r["caller"] is None for r in refused)


def test_a_real_prometheus_scraping_as_the_servicemonitor_says_sees_the_scores(
    platform: Platform, tmp_path: Path
) -> None:
    (monitor,) = [
        m
        for m in platform.get("servicemonitors", "-n", SYSTEM)["items"]
        if "operator" in m["metadata"]["name"]
    ]
    endpoint = monitor["spec"]["endpoints"][0]
    selector = ",".join(f"{k}={v}" for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    (service,) = platform.get("services", "-n", SYSTEM, "-l", selector)["items"]
    port = next(p for p in service["spec"]["ports"] if p["name"] == endpoint["port"])
    slices = platform.get(
        "endpointslices",
        "-n",
        SYSTEM,
        "-l",
        f"kubernetes.io/service-name={service['metadata']['name']}",
    )["items"]
    targets = sorted(
        f"{address}:{next(p['port'] for p in piece['ports'] if p['name'] == port['name'])}"
        for piece in slices
        for e in piece.get("endpoints") or []
        for address in e["addresses"]
    )
    assert len(targets) == 2, targets  # both operator pods, as a ServiceMonitor scrapes them
    with prometheus(tmp_path, targets, endpoint.get("path", "/metrics")) as query:
        value = eventually(
            "Prometheus has the eval's TSA series",
            lambda: query(f'{TSA_GAUGE[0]}{{namespace="{APP}",eval_schedule="contracts-weekly"}}'),
            timeout=120,
        )
    schedule = platform.get("evalschedule", "contracts-weekly", "-n", APP)
    assert value == pytest.approx(schedule["status"]["scores"]["toolSelectionAccuracy"])


def test_deleting_an_agent_pod_under_traffic_is_absorbed(platform: Platform) -> None:
    # The agents' PodDisruptionBudget, as the disruption controller sees it: 2 pods, 1 may go.
    eventually(
        "the PodDisruptionBudget counts both agent pods",
        lambda: (lambda s: s.get("expectedPods") == 2 and s.get("disruptionsAllowed") == 1)(
            platform.get("pdb", "contracts-agent", "-n", APP).get("status", {})
        ),
        timeout=120,
    )

    def delete_one() -> None:
        victim = pods_of(platform, APP, AGENT_PODS)[0]
        platform.kubectl("delete", "pod", victim["metadata"]["name"], "-n", APP, "--wait=false")
        platform.kubectl("rollout", "status", "deployment/contracts-agent", "-n", APP,
                         "--timeout=300s", timeout=330)  # fmt: skip

    outcomes = under_traffic(platform, delete_one)
    assert_none_failed(outcomes)


def test_helm_upgrade_to_a_new_tag_rolls_operator_and_agents_without_failed_requests(
    platform: Platform,
) -> None:
    """The same images under a new tag (a release with nothing else changed): helm upgrade
    rolls the operator's pods, and the operator rolls the agent and tool pods onto the new tag,
    while a bounded request loop through the agent's Service keeps getting answers."""
    tag = "upgrade-1"
    for name in ("operator", "sleuth"):
        repo = platform.images[name].rsplit(":", 1)[0]
        subprocess.run(
            ["ctr", "--address", str(CONTAINERD_SOCK), "-n", "k8s.io", "images", "tag",
             "--force", platform.images[name], f"{repo}:{tag}"],
            check=True, capture_output=True,
        )  # fmt: skip
    retagged = {n: f"{r.rsplit(':', 1)[0]}:{tag}" for n, r in platform.images.items()}
    outcomes = under_traffic(platform, lambda: _upgrade(platform, retagged))
    assert_none_failed(outcomes)
    # helm --wait counts the new pods ready; the old ones may still be terminating.
    eventually(
        "every operator pod runs the new tag",
        lambda: all(
            pod["spec"]["containers"][0]["image"] == retagged["operator"]
            for pod in pods_of(platform, SYSTEM, "app.kubernetes.io/name=sleuth")
        ),
        timeout=120,
    )
    agents = pods_of(platform, APP, AGENT_PODS)
    assert agents
    assert all(p["spec"]["containers"][0]["image"] == retagged["sleuth"] for p in agents)


def _upgrade(platform: Platform, images: dict[str, str]) -> None:
    platform.cluster.helm(
        "upgrade", RELEASE, str(ROOT / "charts" / "sleuth"), "--namespace", SYSTEM,
        *chart_values(images), "--wait", "--timeout", "10m", timeout=900,
    )  # fmt: skip

    def agents_on(image: str) -> bool:
        pods = pods_of(platform, APP, AGENT_PODS)
        return bool(pods) and all(
            p["spec"]["containers"][0]["image"] == image
            and p["status"].get("phase") == "Running"
            and {c["type"]: c["status"] for c in p["status"].get("conditions", [])}.get("Ready")
            == "True"
            for p in pods
        )

    eventually("the agent pods run the new tag", lambda: agents_on(images["sleuth"]), 600)


def test_killing_the_leader_hands_the_lease_to_the_standby(platform: Platform) -> None:
    lease = platform.get("lease", "sleuth-operator", "-n", SYSTEM)
    holder = lease["spec"]["holderIdentity"]
    leader = next(
        p["metadata"]["name"]
        for p in pods_of(platform, SYSTEM, "app.kubernetes.io/name=sleuth")
        if holder.startswith(p["metadata"]["name"])
    )
    platform.kubectl("delete", "pod", leader, "-n", SYSTEM, "--grace-period=0", "--force")

    def new_holder() -> str | None:
        spec = platform.get("lease", "sleuth-operator", "-n", SYSTEM)["spec"]
        h = str(spec.get("holderIdentity") or "")
        return h if h and not h.startswith(leader) else None

    eventually("the standby takes the Lease", new_holder, timeout=120)
    # ... and reconciles: a deleted child comes back
    platform.kubectl("delete", "configmap", "contracts-agent", "-n", APP)
    eventually(
        "the new leader restores the agent's ConfigMap",
        lambda: (
            platform.kubectl(
                "get", "configmap", "contracts-agent", "-n", APP, check=False
            ).returncode
            == 0
        ),
        timeout=120,
    )
