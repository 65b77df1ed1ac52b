"""What an EvalSchedule's pods may do in the API: write their EvalSchedule's status, no more.

Each run's pods run as the ServiceAccount ``<schedule>-eval``; its Role (same name) allows ``get``
on the EvalSchedule and ``get`` + ``patch`` on its ``status`` subresource, for that one object
(``resourceNames``), and the RoleBinding ties the two together. The pods report their parts of
a run there (read-modify-write guarded by resourceVersion).
"""

from __future__ import annotations

from sleuth.core.api.v1alpha1.common import GROUP
from sleuth.core.api.v1alpha1.kinds import EVAL_SCHEDULE
from sleuth.operator.render.meta import Manifest, Owner, metadata

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"


def eval_account_name(schedule: str) -> str:
    """Name of the ServiceAccount, Role and RoleBinding of an EvalSchedule's pods."""
    return f"{schedule}-eval"


def render_eval_service_account(owner: Owner, agent: str) -> Manifest:
    """The ServiceAccount the eval pods run as."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(eval_account_name(owner.name), owner, "eval", agent),
    }


def render_eval_role(owner: Owner, agent: str) -> Manifest:
    """Read this EvalSchedule, read and patch its status: nothing else, no other object."""
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": metadata(eval_account_name(owner.name), owner, "eval", agent),
        "rules": [
            {
                "apiGroups": [GROUP],
                "resources": [EVAL_SCHEDULE.plural],
                "resourceNames": [owner.name],
                "verbs": ["get"],
            },
            {
                "apiGroups": [GROUP],
                "resources": [f"{EVAL_SCHEDULE.plural}/status"],
                "resourceNames": [owner.name],
                "verbs": ["get", "patch"],
            },
        ],
    }


def render_eval_role_binding(owner: Owner, agent: str) -> Manifest:
    """Grants the Role to the ServiceAccount (both named ``<schedule>-eval``)."""
    name = eval_account_name(owner.name)
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": metadata(name, owner, "eval", agent),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": owner.namespace}],
    }


def render_eval_access(owner: Owner, agent: str) -> list[Manifest]:
    """ServiceAccount, Role and RoleBinding, in the order they are applied."""
    return [
        render_eval_service_account(owner, agent),
        render_eval_role(owner, agent),
        render_eval_role_binding(owner, agent),
    ]


__all__ = [
    "eval_account_name",
    "render_eval_access",
    "render_eval_role",
    "render_eval_role_binding",
    "render_eval_service_account",
]
