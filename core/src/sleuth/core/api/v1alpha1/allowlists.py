"""Where a resource may send requests and what it may run: the platform team's allowlists.

A spec's endpoints (every URL field: the model endpoint, Qdrant, embeddings, reranker, web
search, judges, tracing, the JWKS of an AgentDeployment's token issuers) may name only

- a Service of the cluster by its cluster name, ``<service>.<namespace>.svc`` or
  ``<service>.<namespace>.svc.<cluster domain>`` (plain HTTP allowed: it stays in the cluster);
- a host the platform team lists, as ``https://host`` or ``https://*.suffix`` (a ``http://``
  entry allows plain HTTP to it, when the team wants that).

Shorter names (``qdrant``, ``vllm.models``) are refused: the pod's DNS search list also tries the
node's own domains and finally the name as it stands, so ``collector.attacker`` or ``evil.com``
would leave the cluster. IP literals and user info in the URL are refused too.

A spec's images (``spec.model.image``, ``spec.agent.image``, a ToolBinding's or EvalSchedule's
``spec.image``) must come from a listed repository (``repo``, or ``prefix/*`` for every
repository below it); the operator's own images (``--image``, ``--model-image``) always are.

One source, two enforcers: :func:`endpoint_problem` and :func:`image_problem` are what the
operator checks before it renders anything; :func:`validations` writes the same rules as CEL for
the chart's ValidatingAdmissionPolicies (:mod:`sleuth.core.api.admissiongen`), which read the
lists from the policy's ``variables`` (filled from the chart's values). The regular expressions
below are used by both (RE2 and Python agree on them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel

from sleuth.core.api.v1alpha1.specpaths import endpoint_paths, image_paths, value_at, values_at

DEFAULT_CLUSTER_DOMAIN = "cluster.local"
OFFICIAL_VLLM_REPOSITORIES = ("vllm/vllm-openai", "docker.io/vllm/vllm-openai")

LABEL = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"  # a DNS-1035 label: what Service names are
_TAIL = r"(:[0-9]{1,5})?(/[^\s]*)?$"
SERVICE_URL = rf"^https?://{LABEL}\.{LABEL}\.svc"  # followed by the cluster domain, optionally
HOST_URL = r"^(https?)://([a-z0-9]([-a-z0-9.]*[a-z0-9])?)" + _TAIL
HOST_ENTRY = r"^(https?)://(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
REPOSITORY_ENTRY = r"^[a-z0-9]([-a-z0-9._/:]*[a-z0-9])?(/\*)?$"

ENDPOINT_RULE = (
    "a Service by its cluster name (http[s]://<service>.<namespace>.svc[.<cluster domain>]) "
    "or an https:// host the platform team allows"
)
IMAGE_RULE = "an image from a repository the platform team allows"


@dataclass(frozen=True)
class Allowlists:
    """The platform team's allowlists (the chart's ``admission`` values; operator flags)."""

    hosts: tuple[str, ...] = ()  # https://host, https://*.suffix (http:// allows plain HTTP)
    repositories: tuple[str, ...] = OFFICIAL_VLLM_REPOSITORIES
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    always: tuple[str, ...] = field(default=())  # repositories of the operator's own images

    def __post_init__(self) -> None:
        for entry in self.hosts:
            if not re.match(HOST_ENTRY, entry):
                raise ValueError(
                    f"allowed host {entry!r}: write https://host or https://*.suffix "
                    "(lowercase; http:// to allow plain HTTP)"
                )
        for entry in self.repositories:
            if not re.match(REPOSITORY_ENTRY, entry):
                raise ValueError(f"allowed image repository {entry!r}: write repo or prefix/*")


def _service_url(cluster_domain: str) -> str:
    return SERVICE_URL + r"(\." + re.escape(cluster_domain) + ")?" + _TAIL


def _host_allowed(scheme: str, host: str, entries: tuple[str, ...]) -> bool:
    for entry in entries:
        want, _, pattern = entry.partition("://")
        if want != scheme:
            continue
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
        if host == pattern:
            return True
    return False


def endpoint_allowed(url: str, allow: Allowlists) -> bool:
    """Whether a spec may send requests to ``url``."""
    if re.match(_service_url(allow.cluster_domain), url):
        return True
    found = re.match(HOST_URL, url)
    return found is not None and _host_allowed(found.group(1), found.group(2), allow.hosts)


def repository(image: str) -> str:
    """The repository of an image reference: without ``@digest`` and ``:tag``."""
    name = image.split("@", 1)[0]
    colon, slash = name.rfind(":"), name.rfind("/")
    return name[:colon] if colon > slash else name


def image_allowed(image: str, allow: Allowlists) -> bool:
    """Whether a spec may run ``image``."""
    repo = repository(image)
    for entry in (*allow.repositories, *allow.always):
        if entry.endswith("/*") and repo.startswith(entry[:-1]):
            return True
        if repo == entry:
            return True
    return False


def endpoint_problem(model: type[BaseModel], wire: dict[str, object], allow: Allowlists) -> str:
    """The first endpoint of a spec (wire form) outside the allowlist, as a message naming the
    field; "" when every one is allowed."""
    for path in endpoint_paths(model):
        for where, url in values_at(wire, path):
            if isinstance(url, str) and not endpoint_allowed(url, allow):
                return f"spec.{where}: not an allowed endpoint: use {ENDPOINT_RULE}"
    return ""


def image_problem(model: type[BaseModel], wire: dict[str, object], allow: Allowlists) -> str:
    """The first image of a spec (wire form) outside the allowlist, as a message naming the
    field and the repository; "" when every one is allowed."""
    for path in image_paths(model):
        image = value_at(wire, path)
        if isinstance(image, str) and not image_allowed(image, allow):
            return (
                f"spec.{path}: repository {repository(image)} is not allowed: use {IMAGE_RULE} "
                f"({', '.join((*allow.repositories, *allow.always)) or 'none listed'})"
            )
    return ""


# --- the same rules as CEL, for the chart's ValidatingAdmissionPolicies -----------------------


def _cel(text: str) -> str:
    """A regular expression as a CEL single-quoted string literal."""
    return "'" + text.replace("\\", "\\\\") + "'"


def _has_chain(path: str, root: str = "object.spec") -> str:
    steps = path.split(".")
    return " && ".join(f"has({root}." + ".".join(steps[: i + 1]) + ")" for i in range(len(steps)))


def _endpoint_ok(value: str) -> str:
    service = (
        f"{value}.matches({_cel(SERVICE_URL + '(')} + '\\\\.' + "
        f"variables.clusterDomain.replace('.', '\\\\.') + {_cel(')?' + _TAIL)})"
    )
    host = f"{value}.split('/')[2].split(':')[0]"
    scheme = f"{value}.split(':')[0]"
    listed = (
        f"({value}.matches({_cel(HOST_URL)}) && variables.allowedHosts.exists(e, "
        f"e.split('://')[0] == {scheme} && (e.split('://')[1].startsWith('*.') ? "
        f"{host}.endsWith(e.split('://')[1].substring(1)) : {host} == e.split('://')[1])))"
    )
    return f"{service} || {listed}"


def _image_ok(value: str) -> str:
    name = f"{value}.split('@')[0]"
    repo = (
        f"({name}.lastIndexOf(':') > {name}.lastIndexOf('/') ? "
        f"{name}.substring(0, {name}.lastIndexOf(':')) : {name})"
    )
    return (
        f"variables.allowedRepositories.exists(e, e.endsWith('/*') ? "
        f"{repo}.startsWith(e.substring(0, size(e) - 1)) : {repo} == e)"
    )


def validations(model: type[BaseModel]) -> list[dict[str, str]]:
    """The ValidatingAdmissionPolicy validations of one kind's spec: one per endpoint and image
    field, each refusing with a message that names the field."""
    out = []
    for path in endpoint_paths(model):
        if "[]" in path:  # every item of the list (specpaths allows one list on the way)
            listed, _, rest = path.partition("[].")
            value = f"item.{rest}"
            check = (
                f"object.spec.{listed}.all(item, !({_has_chain(rest, 'item')}) || "
                f"{_endpoint_ok(value)})"
            )
            expression = f"!({_has_chain(listed)}) || {check}"
        else:
            expression = f"!({_has_chain(path)}) || {_endpoint_ok(f'object.spec.{path}')}"
        out.append(
            {
                "expression": expression,
                "message": f"spec.{path}: not an allowed endpoint: use {ENDPOINT_RULE}",
                "reason": "Invalid",
            }
        )
    for path in image_paths(model):
        value = f"object.spec.{path}"
        out.append(
            {
                "expression": f"!({_has_chain(path)}) || {_image_ok(value)}",
                "message": f"spec.{path}: not an allowed image: use {IMAGE_RULE}",
                "reason": "Invalid",
            }
        )
    return out


__all__ = [
    "DEFAULT_CLUSTER_DOMAIN",
    "ENDPOINT_RULE",
    "HOST_ENTRY",
    "IMAGE_RULE",
    "OFFICIAL_VLLM_REPOSITORIES",
    "REPOSITORY_ENTRY",
    "Allowlists",
    "endpoint_allowed",
    "endpoint_problem",
    "image_allowed",
    "image_problem",
    "repository",
    "validations",
]
