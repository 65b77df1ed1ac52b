"""The model pod's judge: answers the RAGAS prompts of an eval Job (``--responder``).

The eval Job's judge defaults to the agent's own model server, which here is the scripted one.
This responder reads the input block RAGAS puts at the end of each prompt and answers the way
an agreeable judge would: every statement supported, every chunk useful, every reference claim
attributed. The scores it leads to say nothing about quality; they prove that the Job's pods run,
score through the judge, and write the EvalSchedule's status. Prompts it does not recognise
(the agent's planning requests) go on to the scenario's rules.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sleuth.scripted import ScriptedResponse

MARKER = "Now perform the same with the following input\ninput: "


def _input(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(user[0]["content"]) if user else ""
    start = text.rfind(MARKER)
    if start < 0:
        return text, {}
    block = text[start + len(MARKER) :]
    end = block.rfind("\nOutput:")
    try:
        data = json.loads(block[:end] if end >= 0 else block)
    except ValueError:
        return text, {}
    return text, data if isinstance(data, dict) else {}


def _sentences(text: str) -> list[str]:
    found = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 3]
    return found[:3] or [text.strip() or "The answer states nothing."]


def _json(payload: dict[str, Any]) -> ScriptedResponse:
    return ScriptedResponse(content=json.dumps(payload))


def respond(body: dict[str, Any]) -> ScriptedResponse | None:
    text, data = _input(body)
    keys = set(data)
    if keys == {"question", "answer"}:
        return _json({"statements": _sentences(str(data["answer"]))})
    if keys == {"context", "statements"}:
        verdicts = [
            {"statement": s, "reason": "supported", "verdict": 1} for s in data["statements"]
        ]
        return _json({"statements": verdicts})
    if keys == {"question", "context", "answer"} and "was useful" in text:
        return _json({"reason": "useful", "verdict": 1})
    if keys == {"question", "context", "answer"} and "attributed" in text:
        claims = [
            {"statement": s, "reason": "in the context", "attributed": 1}
            for s in _sentences(str(data["answer"]))
        ]
        return _json({"classifications": claims})
    if keys == {"response"}:
        return _json({"question": "What does the answer say?", "noncommittal": 0})
    return None
