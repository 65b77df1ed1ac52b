"""Benchmark: greedy grammar-constrained replies with llama-cpp-python's sampling chain against
the shortcut of :mod:`sleuth.core.llamaserve`, side by side in one process.

Replays the chat requests of a capture (``bench/guided_latency_ab.py capture``) on two instances
of the same model in this process, one sampling through llama-cpp-python's chain (the grammar
judges the whole vocabulary at every step) and one with :class:`GrammarLast` (the grammar asked
about the best token first), alternating case by case, and prints seconds per case of each, the
ratio, and how many replies are byte for byte the same (all of them, or the shortcut is wrong)::

    .venv/bin/python bench/grammar_shortcut.py /tmp/ab_now.json --limit 8 \\
        --out bench/results/issue33_grammar_shortcut_now.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from sleuth.core import llamaserve
from sleuth.core.localmodel import ServeSettings, ensure_gguf


def _reply(llm: Any, request: dict[str, Any]) -> tuple[float, int, str]:
    body = {k: v for k, v in request.items() if k != "model"}
    started = time.perf_counter()
    out = llm.create_chat_completion(**body)
    seconds = time.perf_counter() - started
    return seconds, int(out["usage"]["completion_tokens"]), out["choices"][0]["message"]["content"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("capture", type=Path)
    parser.add_argument("--model", default="1.5b")
    parser.add_argument("--limit", type=int, default=8, help="first N cases (0: all)")
    parser.add_argument("--draft-tokens", type=int, default=ServeSettings.draft_tokens)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    requests = json.loads(args.capture.read_text())["requests"][: args.limit or None]
    gguf = ensure_gguf(args.model)

    llamaserve.without_extra_buffer_types()
    import llama_cpp
    from llama_cpp import llama_speculative

    class Shortcut(llama_cpp.Llama):
        pass

    llamaserve.install_grammar_last(Shortcut)
    settings = ServeSettings()

    def load(cls: Any) -> Any:
        draft = (
            llama_speculative.LlamaPromptLookupDecoding(num_pred_tokens=args.draft_tokens)
            if args.draft_tokens
            else None
        )
        return cls(
            model_path=str(gguf),
            n_ctx=settings.context,
            n_threads=settings.threads,
            n_threads_batch=settings.batch_threads,
            logits_all=True,
            draft_model=draft,
            verbose=False,
        )

    models = [load(llama_cpp.Llama), load(Shortcut)]
    rows: list[list[tuple[float, int, str]]] = [[], []]
    for i, request in enumerate(requests):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            rows[k].append(_reply(models[k], request))
        (sa, ta, _), (sb, tb, _) = rows[0][-1], rows[1][-1]
        print(
            f"  {i + 1:>3}/{len(requests)}: chain {sa:5.1f} s {ta:3d} tok, "
            f"shortcut {sb:5.1f} s {tb:3d} tok",
            file=sys.stderr,
            flush=True,
        )
    chain, shortcut = (statistics.fmean(r[0] for r in side) for side in rows)
    same = sum(a[2] == b[2] for a, b in zip(rows[0], rows[1], strict=True))
    print(
        f"chain {chain:.2f} s/case, shortcut {shortcut:.2f} s/case, "
        f"shortcut / chain {shortcut / chain:.3f}; identical replies {same}/{len(requests)}"
    )
    if args.out:
        out = {
            "meta": {
                "capture": str(args.capture),
                "model": args.model,
                "draft_tokens": args.draft_tokens,
                "load_average": os.getloadavg(),
            },
            "seconds_per_case": {"chain": chain, "shortcut": shortcut},
            "ratio": shortcut / chain,
            "identical": same,
            "cases": len(requests),
            "rows": {"chain": rows[0], "shortcut": rows[1]},
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1))
    return 0 if same == len(requests) else 1


if __name__ == "__main__":
    sys.exit(main())
