"""``spec.webSearch`` of a ToolBinding: public web search through a provider."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from sleuth.core.api.v1alpha1.common import URL_PATTERN, SecretKeyRef, SpecModel


class WebSearchSpec(SpecModel):
    """Public web search through a provider. Queries leave the cluster: an explicit opt-in."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.allowExternal == true",
                    "message": "spec.webSearch.allowExternal must be true: web_search sends "
                    "queries outside the cluster",
                }
            ]
        }
    )

    provider: Literal["searxng"] = Field(
        default="searxng", description="Search provider API (SearxNG's JSON API)."
    )
    url: str = Field(
        max_length=2048,
        pattern=URL_PATTERN,
        description="Provider base URL, e.g. http://searxng:8080.",
    )
    allow_external: bool = Field(
        description="Must be true: acknowledges that queries are sent outside the cluster."
    )
    api_key_secret_ref: SecretKeyRef | None = Field(
        default=None, description="Secret key holding the provider API key, if needed."
    )

    @model_validator(mode="after")
    def _opt_in(self) -> WebSearchSpec:
        if not self.allow_external:
            raise ValueError("spec.webSearch.allowExternal must be true")
        return self


__all__ = ["WebSearchSpec"]
