"""What a client may send to a service: ``spec.agent.limits`` (AgentDeployment) and
``spec.limits`` (ToolBinding).

Every limit is checked before the request costs anything: the body's size while it is read (its
``Content-Length`` first), the time a client takes to send its headers and its body, and — for the
agent — the question, the history and an estimate of the prompt's tokens against the model's
context length. The operator writes ``spec.agent.limits`` into the agent's configuration file as
it is (the file's ``limits`` is this model); the tool service reads its ToolBinding spec
directly.
"""

from __future__ import annotations

from pydantic import Field

from sleuth.core.api.fields import (
    KeepAliveTimeoutSeconds,
    MaxBodyBytes,
    MaxHeaderBytes,
    MaxHistoryChars,
    MaxHistoryMessages,
    MaxQuestionChars,
    ReadTimeoutSeconds,
)
from sleuth.core.api.v1alpha1.common import SpecModel


class HttpLimitsSpec(SpecModel):
    """Limits of a service's HTTP server against oversized and slow requests."""

    max_body_bytes: MaxBodyBytes = Field(
        default=1048576,
        description="Bytes of one request body (default 1 MiB); a larger body is refused with "
        "413 before it is read.",
    )
    max_header_bytes: MaxHeaderBytes = Field(
        default=16384,
        description="Bytes of one request's request line and headers (default 16 KiB); beyond "
        "it: 431 and the connection is closed.",
    )
    header_read_timeout_seconds: ReadTimeoutSeconds = Field(
        default=10,
        description="Time a client has to send a request's headers (default 10); then the "
        "connection is closed.",
    )
    body_read_timeout_seconds: ReadTimeoutSeconds = Field(
        default=30,
        description="Time a client has to send a request's body (default 30); then 408.",
    )
    keep_alive_timeout_seconds: KeepAliveTimeoutSeconds = Field(
        default=5,
        description="Time an idle keep-alive connection stays open (default 5).",
    )


class AgentLimitsSpec(HttpLimitsSpec):
    """Limits of the agent's API: the HTTP server's, plus the conversation a request carries.

    One policy for /v1/query, /v1/chat/completions and /a2a. Over a limit: 422 naming the field and
    the limit; a prompt estimated (UTF-8 bytes / 4) above the model's maxModelLen minus its
    maxTokens: 413.
    """

    max_question_chars: MaxQuestionChars = Field(
        default=20000, description="Characters of the question (the last user message)."
    )
    max_history_messages: MaxHistoryMessages = Field(
        default=50, description="Earlier messages a request may carry as history."
    )
    max_history_chars: MaxHistoryChars = Field(
        default=100000,
        description="Characters of all history messages together.",
    )


__all__ = ["AgentLimitsSpec", "HttpLimitsSpec"]
