"""Benchmark probe: what a real local model writes for ``needs_tool`` after a given thought.

The guided reply (sleuth.core.guided) is ``{"thought": ..., "needs_tool": ..., ...}``: the
decision is written after the thought. This probe asks whether the thought decides it. For each
(question, thought) pair it renders the request the model client sends in guided mode — the
shipped system prompt, the reply instructions of sleuth.core.guidedprompt, the shipped tools —
through the GGUF's own chat template, appends the reply up to ``"needs_tool":`` and asks the
server (llama-cpp-python's ``/v1/completions``, no grammar, temperature 0) for the log
probabilities of the next token: `` true`` against `` false``.

    nice -n 10 .venv/bin/python bench/guided_decision.py --model 1.5b

Prints what the reply instructions cost in prompt tokens, then one row per pair; figures go to
docs/evals.md (issue 33, the cause).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx
import jinja2
from llama_cpp import Llama

from sleuth.agent.loop import opening_messages
from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
from sleuth.core.guidedprompt import REPLY_RULES, reply_instructions, with_reply_instructions
from sleuth.core.localmodel import LocalModelServer, ServeSettings, ensure_gguf
from sleuth.core.tools import DEFAULT_SPECS

PAIRS = [  # (question, thought): the thoughts the 1.5B wrote before and after issue 33's fix
    (
        "Convert 5 kilometres to miles.",
        "The question needs to convert 5 kilometres to miles. The tool that holds this "
        "information is web_search.",
    ),
    ("Convert 5 kilometres to miles.", "A unit conversion: general knowledge, no tool."),
    ("What is 17 times 23?", "The question needs to find the product of 17 and 23."),
    ("What is 17 times 23?", "A multiplication: arithmetic, no tool."),
    ("What does the acronym SQL stand for?", "SQL stands for Structured Query Language."),
    ("How many orders in March?", "The number of orders in March: company records, SQL."),
]


def _template(vocab: Llama) -> jinja2.Template:
    return jinja2.Environment().from_string(vocab.metadata["tokenizer.chat_template"])


def _print_sizes(vocab: Llama) -> None:
    """What the reply instructions cost in prompt tokens: the rules, and the examples."""

    def tokens(text: str) -> int:
        return len(vocab.tokenize(text.encode(), add_bos=False))

    tools = [spec.to_openai() for spec in DEFAULT_SPECS.values()]
    whole, rules = tokens(reply_instructions(tools)), tokens(REPLY_RULES)
    print(f"reply instructions: {whole} tokens (rules {rules}, examples {whole - rules})")


def _prompt(template: jinja2.Template, question: str, thought: str) -> str:
    tools = [spec.to_openai() for spec in DEFAULT_SPECS.values()]
    messages = with_reply_instructions(opening_messages(DEFAULT_SYSTEM_PROMPT, question), tools)
    rendered = template.render(messages=messages, tools=tools, add_generation_prompt=True)
    return rendered + json.dumps({"thought": thought})[:-1] + ', "needs_tool":'


def _next_token(url: str, prompt: str) -> dict[str, float]:
    body: dict[str, Any] = {"prompt": prompt, "max_tokens": 1, "logprobs": 10, "temperature": 0}
    reply = httpx.post(f"{url}/completions", json=body, timeout=600).json()
    top: dict[str, float] = reply["choices"][0]["logprobs"]["top_logprobs"][0]
    return top


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="1.5b")
    parser.add_argument("--sizes-only", action="store_true", help="token counts only, no server")
    args = parser.parse_args()
    vocab = Llama(model_path=str(ensure_gguf(args.model)), vocab_only=True, verbose=False)
    _print_sizes(vocab)
    if args.sizes_only:
        return 0
    template = _template(vocab)
    print("| question | thought | logprob ` true` | logprob ` false` | decision |")
    print("|---|---|---|---|---|")
    with LocalModelServer(args.model, ServeSettings()) as server:
        for question, thought in PAIRS:
            top = _next_token(server.url, _prompt(template, question, thought))
            yes, no = top.get(" true", float("-inf")), top.get(" false", float("-inf"))
            decision = "true" if yes > no else "false"
            print(f"| {question} | {thought} | {yes:.2f} | {no:.2f} | {decision} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
