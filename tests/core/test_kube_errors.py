"""The Kubernetes client classifies failures by the apiserver's Status body (bodies as seen from
kube-apiserver v1.34), not by the HTTP code alone."""

from __future__ import annotations

import json

import pytest

from sleuth.core.errors import KubeConflict, KubeExhausted, KubeRejected, KubeRetryable
from sleuth.core.kubestatus import classify

pytestmark = pytest.mark.unit


def _status(
    code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None
) -> str:
    body = {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if causes is not None:
        body["details"] = {"causes": causes}
    return json.dumps(body)


DUPLICATE = _status(
    422,
    "Invalid",
    'Service "x-agent" is invalid: spec.ports[1].name: Duplicate value: "http"',
    [
        {
            "reason": "FieldValueDuplicate",
            "field": "spec.ports[1].name",
            "message": 'Duplicate value: "http"',
        }
    ],
)
BANANA = _status(
    500,
    "InternalError",
    "failed to convert new object (ns/x; apps/v1, Kind=Deployment) to proper version: unable to "
    "convert unstructured object to apps/v1, Kind=Deployment: quantities must match the regular "
    "expression",
)
RANGE_FULL = _status(
    500,
    "InternalError",
    "Internal error occurred: failed to allocate a serviceIP: range is full",
    [{"message": "failed to allocate a serviceIP: range is full"}],
)
TERMINATING = _status(
    403,
    "Forbidden",
    'configmaps "x" is forbidden: unable to create new content in namespace t because it is '
    "being terminated",
    [
        {
            "reason": "NamespaceTerminating",
            "field": "metadata.namespace",
            "message": "namespace t is being terminated",
        }
    ],
)


def test_an_invalid_object_is_permanent_with_its_causes() -> None:
    err = classify(422, DUPLICATE, "PATCH /api/v1/namespaces/n/services/x-agent")
    assert isinstance(err, KubeRejected)
    assert (err.status, err.reason) == (422, "Invalid")
    assert err.detail.endswith('spec.ports[1].name: Duplicate value: "http"')
    assert [c.field for c in err.causes] == ["spec.ports[1].name"]
    assert "PATCH /api/v1/namespaces/n/services/x-agent" in str(err)


def test_a_500_for_an_unconvertible_object_is_permanent() -> None:
    err = classify(500, BANANA, "PATCH /apis/apps/v1/namespaces/n/deployments/x")
    assert isinstance(err, KubeRejected)
    assert "quantities must match" in err.detail


def test_a_full_service_ip_range_is_exhausted_and_retryable() -> None:
    err = classify(500, RANGE_FULL, "PATCH /api/v1/namespaces/n/services/x")
    assert isinstance(err, KubeExhausted)
    assert err.retryable


@pytest.mark.parametrize(
    ("code", "text", "kind"),
    [
        (409, _status(409, "Conflict", "the object has been modified"), KubeConflict),
        (409, _status(409, "AlreadyExists", 'leases "x" already exists'), KubeConflict),
        (429, _status(429, "TooManyRequests", "too many requests"), KubeRetryable),
        (500, _status(500, "InternalError", "etcdserver: request timed out"), KubeRetryable),
        (503, "<html>Service Unavailable</html>", KubeRetryable),
        (504, _status(504, "Timeout", "the server was unable to return a response"), KubeRetryable),
        (403, TERMINATING, KubeRetryable),
        (
            403,
            _status(403, "Forbidden", 'cronjobs is forbidden: User "x" cannot patch'),
            KubeRejected,
        ),
        (413, _status(413, "RequestEntityTooLarge", "request is too large"), KubeRejected),
        (
            400,
            _status(400, "BadRequest", "the body of the request was in an unknown format"),
            KubeRejected,
        ),
    ],
)
def test_each_failure_is_classified_by_what_it_is(code: int, text: str, kind: type) -> None:
    err = classify(code, text, "GET /x")
    assert type(err) is kind
