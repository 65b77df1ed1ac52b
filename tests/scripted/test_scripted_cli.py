"""``sleuth scripted-model --responder FILE:FUNCTION``: a Python responder before the rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.scripted.cli import load_responder

pytestmark = pytest.mark.unit


def test_a_responder_file_is_loaded_and_answers_before_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "resp.py"
    path.write_text(
        "from sleuth.scripted import ScriptedResponse\n"
        "def respond(body):\n"
        "    return ScriptedResponse(content='pong') if 'ping' in str(body) else None\n"
    )
    respond = load_responder(f"{path}:respond")
    assert respond is not None
    answer = respond({"messages": [{"role": "user", "content": "ping"}]})
    assert answer is not None
    assert answer.content == "pong"
    assert respond({"messages": [{"role": "user", "content": "other"}]}) is None


def test_no_responder_and_a_malformed_one() -> None:
    assert load_responder(None) is None
    with pytest.raises(SystemExit, match="FILE:FUNCTION"):
        load_responder("no-function-given")
