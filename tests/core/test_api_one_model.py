"""One model per setting: what the CRD spec and the agent's file both hold is declared once, and
so is the head every status starts with."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from sleuth.core.api.agent_config import (
    A2AConfig,
    AgentConfig,
    OnlineEvalConfig,
    OnlineEvalEmbeddingsConfig,
)
from sleuth.core.api.v1alpha1.agent import A2ASpec, AgentSpec
from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentStatus
from sleuth.core.api.v1alpha1.common import StatusModel
from sleuth.core.api.v1alpha1.evalstatus import EvalScheduleStatus
from sleuth.core.api.v1alpha1.kinds import KINDS
from sleuth.core.api.v1alpha1.limits import AgentLimitsSpec
from sleuth.core.api.v1alpha1.onlineeval import (
    EmbeddingsChoice,
    OnlineEvalEmbeddings,
    OnlineEvalSettings,
    OnlineEvalSpec,
)
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingStatus

pytestmark = pytest.mark.unit


def _declared_here(model: type[BaseModel]) -> set[str]:
    """Fields the class itself declares (not those it inherits)."""
    return set(model.__annotations__)


def test_the_file_holds_the_specs_limits_model_itself() -> None:
    assert AgentSpec.model_fields["limits"].annotation is AgentLimitsSpec
    assert AgentConfig.model_fields["limits"].annotation is AgentLimitsSpec


@pytest.mark.parametrize(
    ("base", "spec", "config"),
    [
        (OnlineEvalSettings, OnlineEvalSpec, OnlineEvalConfig),
        (EmbeddingsChoice, OnlineEvalEmbeddings, OnlineEvalEmbeddingsConfig),
        (A2ASpec, A2ASpec, A2AConfig),
    ],
    ids=lambda m: m.__name__,
)
def test_spec_and_file_extend_one_model_and_restate_none_of_its_fields(
    base: type[BaseModel], spec: type[BaseModel], config: type[BaseModel]
) -> None:
    for model in (spec, config):
        assert issubclass(model, base)
        restated = (_declared_here(model) & set(base.model_fields)) if model is not base else set()
        assert not restated, f"{model.__name__} restates {sorted(restated)} of {base.__name__}"
    for name, field in base.model_fields.items():  # the same definition, description included
        assert config.model_fields[name].description == field.description
        assert config.model_fields[name].default == field.default


def test_a_setting_written_into_the_file_reads_back_as_the_spec_wrote_it() -> None:
    """The file's camelCase keys of the shared sections are the CRD's."""
    limits = AgentLimitsSpec(max_question_chars=123, keep_alive_timeout_seconds=7)
    config = AgentConfig.model_validate(
        {
            "model": {"endpoint": "http://m:8000/v1", "servedModelName": "m"},
            "limits": limits.to_wire(),
            "onlineEval": OnlineEvalSettings(sample_rate=0.5, queue_size=9).to_wire(),
            "a2a": A2ASpec(description="contracts").to_wire(),
        }
    )
    written = config.to_file_dict()
    assert written["limits"]["maxQuestionChars"] == 123
    assert written["limits"]["keepAliveTimeoutSeconds"] == 7
    assert (written["onlineEval"]["sampleRate"], written["onlineEval"]["queueSize"]) == (0.5, 9)
    assert written["a2a"]["description"] == "contracts"
    assert config.limits == limits


@pytest.mark.parametrize(
    "status",
    [AgentDeploymentStatus, ToolBindingStatus, EvalScheduleStatus],
    ids=lambda m: m.__name__,
)
def test_every_status_starts_with_the_one_header(status: type[BaseModel]) -> None:
    assert issubclass(status, StatusModel)
    assert not _declared_here(status) & set(StatusModel.model_fields)
    assert list(status.model_fields)[:2] == ["observed_generation", "conditions"]


def test_every_kind_uses_a_status_with_the_header() -> None:
    assert {kind.status for kind in KINDS} == {
        AgentDeploymentStatus,
        ToolBindingStatus,
        EvalScheduleStatus,
    }
