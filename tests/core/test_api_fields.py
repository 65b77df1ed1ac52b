"""The CRD specs and the agent's configuration file agree on every field they share.

The operator renders the file (:mod:`sleuth.core.api.agent_config`) from the specs
(:mod:`sleuth.core.api.v1alpha1`); a field both models have must have the same type and bounds
(:mod:`sleuth.core.api.fields`), or a spec the apiserver accepts renders a file the agent refuses.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, TypeAdapter

from sleuth.core.api.access_config import (
    AccessConfig,
    AuditConfig,
    CallerConfig,
    ClaimMatch,
    IssuerConfig,
    ServiceAccountRef,
    TokenMatch,
)
from sleuth.core.api.agent_config import (
    A2AConfig,
    AgentConfig,
    ApprovalsConfig,
    ModelEndpointConfig,
    OnlineEvalConfig,
    OnlineEvalEmbeddingsConfig,
    OnlineEvalJudgeConfig,
    PlannerConfig,
    ToolConfig,
)
from sleuth.core.api.v1alpha1.access import (
    AccessCaller,
    AccessIssuer,
    AccessSpec,
    AuditSpec,
    ClaimRequirement,
    ServiceAccountSubject,
    TokenCaller,
)
from sleuth.core.api.v1alpha1.agent import A2ASpec, AgentSpec
from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.approval import ApprovalMatch, ApprovalSpec
from sleuth.core.api.v1alpha1.evalschedule import JudgeSpec
from sleuth.core.api.v1alpha1.limits import AgentLimitsSpec
from sleuth.core.api.v1alpha1.model import ModelSpec
from sleuth.core.api.v1alpha1.onlineeval import OnlineEvalEmbeddings, OnlineEvalSpec
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.api.v1alpha1.vectorsearch import EmbeddingSpec

pytestmark = pytest.mark.unit

# spec model → the file model the operator renders it into (sleuth.operator.render.agent)
PAIRS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (AgentSpec, AgentConfig),
    (A2ASpec, A2AConfig),
    (ModelSpec, ModelEndpointConfig),
    (ToolBindingSpec, ToolConfig),
    (OnlineEvalSpec, OnlineEvalConfig),
    (JudgeSpec, OnlineEvalJudgeConfig),
    (OnlineEvalEmbeddings, OnlineEvalEmbeddingsConfig),
    (EmbeddingSpec, OnlineEvalEmbeddingsConfig),  # the retrieval's embeddings, by default
    (AccessSpec, AccessConfig),
    (AccessCaller, CallerConfig),
    (ServiceAccountSubject, ServiceAccountRef),
    (TokenCaller, TokenMatch),
    (ClaimRequirement, ClaimMatch),
    (AccessIssuer, IssuerConfig),
    (AuditSpec, AuditConfig),
]
# File models with no spec counterpart (the operator always writes their defaults).
FILE_ONLY = {PlannerConfig, ApprovalsConfig}
# Spec models the file holds as they are (one model for both sides).
SAME_MODEL = {AgentLimitsSpec, ApprovalSpec, ApprovalMatch}
# Shared fields whose types differ on purpose: (spec model, field) → why.
DIFFERENT_BY_DESIGN: dict[tuple[type[BaseModel], str], str] = {
    (ModelSpec, "endpoint"): "a URL: the CRD checks its pattern, the file parses it (AnyHttpUrl)",
    (JudgeSpec, "endpoint"): "a URL, as above",
    (OnlineEvalEmbeddings, "endpoint"): "a URL, as above",
    (EmbeddingSpec, "endpoint"): "a URL, as above",
    (ToolBindingSpec, "type"): "the file also has in-process `custom` tools (checked below)",
    (AccessIssuer, "issuer"): "https only in the CRD; the file also takes a test issuer's URL",
    (AccessIssuer, "jwks_url"): "a URL, as above",
    (AccessSpec, "issuers"): "the CRD's list leaves room for the cluster's own issuer",
}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``X | None``, ``list[X]``), outermost first."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    """The JSON Schema of one field's type and bounds: no description, default or null branch."""
    info = model.model_fields[name]
    annotated: Any = (
        Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    )
    schema = TypeAdapter(annotated).json_schema()
    options = [o for o in schema.pop("anyOf", []) if o.get("type") != "null"]
    if len(options) == 1:
        schema |= options[0]
    elif options:
        schema["anyOf"] = options
    return {k: v for k, v in schema.items() if k not in ("title", "description", "default")}


def _shared(spec: type[BaseModel], config: type[BaseModel]) -> list[str]:
    return sorted(set(spec.model_fields) & set(config.model_fields))


@pytest.mark.parametrize(("spec", "config"), PAIRS, ids=lambda m: m.__name__)
def test_shared_fields_have_one_type_and_the_same_bounds(
    spec: type[BaseModel], config: type[BaseModel]
) -> None:
    shared = _shared(spec, config)
    assert shared, f"{spec.__name__} and {config.__name__} share no field: not a pair"
    for name in shared:
        if (spec, name) in DIFFERENT_BY_DESIGN:
            continue
        nested = _models_in(spec.model_fields[name].annotation)
        if nested:  # a nested model: its pair is checked on its own
            file_nested = _models_in(config.model_fields[name].annotation)
            if nested[0] is file_nested[0]:
                assert nested[0] in SAME_MODEL, f"{spec.__name__}.{name}: list it in SAME_MODEL"
                continue
            assert (nested[0], file_nested[0]) in PAIRS, f"{spec.__name__}.{name}: pair missing"
            continue
        assert _schema(spec, name) == _schema(config, name), (
            f"{spec.__name__}.{name} and {config.__name__}.{name} differ: declare the field "
            "with one type of sleuth.core.api.fields on both sides"
        )


def test_every_file_model_is_paired_with_a_spec_model() -> None:
    """A new section of the file has its spec counterpart listed above (or none at all)."""
    found: set[type[BaseModel]] = set()
    todo: list[type[BaseModel]] = [AgentConfig]
    while todo:
        model = todo.pop()
        if model not in found:
            found.add(model)
            todo += [m for f in model.model_fields.values() for m in _models_in(f.annotation)]
    paired = {config for _, config in PAIRS}
    assert found - FILE_ONLY - SAME_MODEL == paired
    for spec, name in DIFFERENT_BY_DESIGN:  # no stale exception
        (config,) = [c for s, c in PAIRS if s is spec]
        assert name in _shared(spec, config)
        assert _schema(spec, name) != _schema(config, name), f"{spec.__name__}.{name} agrees now"


def test_the_file_takes_every_tool_type_a_binding_has() -> None:
    bound = set(_schema(ToolBindingSpec, "type")["enum"])
    assert bound == {"vector_search", "sql_query", "web_search"}
    assert set(_schema(ToolConfig, "type")["enum"]) == {*bound, "custom"}


def test_a_spec_at_its_bounds_renders_a_file_the_agent_reads() -> None:
    """The largest values the CRD allows (and the smallest) render into a valid file."""
    from sleuth.operator.render import Owner, RenderSettings
    from sleuth.operator.render.agent import Binding, agent_config

    owner = Owner(kind="AgentDeployment", name="a", namespace="ns", uid="u")
    judge = {"endpoint": "http://judge:8000/v1", "model": "j" * 256}
    for bound in ("maximum", "minimum"):
        big = bound == "maximum"
        spec = AgentDeploymentSpec.model_validate(
            {
                "model": {"endpoint": "http://m:8000/v1", "servedModelName": "m" * 256},
                "agent": {
                    "maxIterations": 10 if big else 1,
                    "systemPrompt": "p" * 32768 if big else "",
                    "toolCacheTTLSeconds": 86400 if big else 0,
                    "requestTimeoutSeconds": 3600 if big else 1,
                    "maxConcurrentRequests": 10000 if big else 1,
                    "onlineEval": {
                        "sampleRate": 1 if big else 0,
                        "judge": judge,
                        "queueSize": 10000 if big else 1,
                        "concurrency": 64 if big else 1,
                        "window": 10000 if big else 1,
                        "timeoutSeconds": 600 if big else 1,
                    },
                },
            }
        )
        tool = ToolBindingSpec.model_validate(
            {
                "agentRef": {"name": "a"},
                "type": "web_search",
                "name": "t" * 64,
                "description": "d" * (4096 if big else 1),
                "timeoutSeconds": 300 if big else 1,
                "cacheTTLSeconds": 86400 if big else 0,
                "webSearch": {"url": "http://searx:8080", "allowExternal": True},
            }
        )
        rendered = agent_config(owner, spec, [Binding("t", tool)], RenderSettings())
        again = AgentConfig.model_validate(rendered.to_file_dict())
        assert again == rendered
        assert again.tools[0].timeout_seconds == (300 if big else 1)
        assert again.model.timeout_seconds == (600 if big else 1)  # one call within the request


def test_the_module_holds_the_types() -> None:
    """Both sides name the same objects (not two copies that happen to agree today)."""
    from sleuth.core.api import fields

    def declared(model: type[BaseModel], name: str) -> Any:
        # The object the annotation names in its module. Not the member of an evaluated
        # `X | None`: typing caches unions by equality, so that member may be an equal copy
        # of X that an earlier import left in the cache.
        owner = next(k for k in model.__mro__ if name in inspect.get_annotations(k))
        text = inspect.get_annotations(owner)[name]
        if not isinstance(text, str):
            text = typing.get_type_hints(owner, include_extras=True)[name]
            if isinstance(text, types.UnionType) or typing.get_origin(text) is typing.Union:
                (text,) = [a for a in typing.get_args(text) if a is not type(None)]
            return text
        (named,) = [p.strip() for p in text.split("|") if p.strip() != "None"]
        return eval(named, vars(sys.modules[owner.__module__]))

    shared_types = {v for k, v in vars(fields).items() if k[0].isupper() and k in fields.__all__}
    for spec, config in PAIRS:
        for name in _shared(spec, config):
            if (spec, name) in DIFFERENT_BY_DESIGN or _models_in(
                spec.model_fields[name].annotation
            ):
                continue
            hint = declared(spec, name)
            if hint in (bool, str):  # no bounds to share
                continue
            assert hint in shared_types, f"{spec.__name__}.{name}: not a type of fields.py"
            assert declared(config, name) is hint, f"{config.__name__}.{name}: another type"
