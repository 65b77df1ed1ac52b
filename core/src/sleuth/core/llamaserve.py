"""The local model server's process: llama-cpp-python's OpenAI-compatible server, with two changes.

``python -m sleuth.core.llamaserve <llama_cpp.server arguments> [--full-grammar]``
(:func:`command` builds it; :mod:`sleuth.core.localmodel` starts it).

1. **No extra buffer types.** On hosts whose CPU reports AMX, the source build of llama.cpp
   enables its AMX matrix kernel, which segfaulted on the first multi-token batch
   (llama-cpp-python 0.3.36, ``ggml_backend_amx_mul_mat``); without extra buffers the plain CPU
   kernels run.
2. **Greedy decoding under a grammar looks at the best token first.** llama-cpp-python samples
   through one chain (repeat penalties, then the grammar, then the best token), so the grammar
   judges all ~150,000 tokens of the vocabulary at every step. With temperature 0 the answer is
   the best token the grammar allows: :class:`GrammarLast` takes the best token after the
   penalties, asks the grammar about that one token, and judges the whole vocabulary only when
   the grammar refuses it. The tokens are the same as the chain's (it is the same argmax over the
   same logits); guided TSA replies of the 1.5B took 0.85x the time side by side
   (``bench/grammar_shortcut.py``; docs/evals.md, issue 33's fifth round). Sampling at a
   temperature above 0, or with logits processors, keeps the chain. ``--full-grammar`` turns the
   shortcut off (to measure against it).
"""

from __future__ import annotations

import ctypes
import runpy
import sys
from typing import Any, Final

FULL_GRAMMAR_FLAG: Final = "--full-grammar"
MODULE: Final = "sleuth.core.llamaserve"


def command(*server_args: str, full_grammar: bool = False) -> list[str]:
    """The argv that runs the server with these ``llama_cpp.server`` arguments."""
    return [
        sys.executable,
        "-m",
        MODULE,
        *server_args,
        *([FULL_GRAMMAR_FLAG] if full_grammar else []),
    ]


class GrammarLast:
    """A greedy sampler for one generation: penalties, the best token, and the grammar asked
    about that token before it is asked about every token. Has the ``sample(ctx, idx)`` that
    ``Llama.generate`` calls on its sampler."""

    def __init__(self, llama: Any, grammar: Any, penalties: tuple[float, float, float]) -> None:
        import llama_cpp.llama_cpp as c
        import numpy as np

        self._c = c
        self._np = np
        self._n_vocab = int(llama._n_vocab)
        repeat, frequency, presence = penalties
        # The same arguments in the same order as llama-cpp-python's own chain passes them.
        self._penalties = c.llama_sampler_init_penalties(
            self._n_vocab, llama.last_n_tokens_size, repeat, frequency, presence
        )
        self._grammar = c.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode(), grammar._root.encode()
        )
        if not self._grammar:
            self.close()
            raise ValueError("llama.cpp could not parse the grammar")
        token_data = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        self._ids = np.arange(self._n_vocab, dtype=np.int32)
        self._all = np.zeros(self._n_vocab, dtype=token_data)  # llama_token_data, 12 bytes
        self._one = np.zeros(1, dtype=token_data)
        self.shortcuts = 0
        self.full_checks = 0

    def _apply(self, sampler: Any, data: Any) -> None:
        c = self._c
        array = c.llama_token_data_array(
            data=data.ctypes.data_as(c.llama_token_data_p),
            size=len(data),
            selected=-1,
            sorted=False,
        )
        c.llama_sampler_apply(sampler, ctypes.byref(array))

    def sample(self, ctx: Any, idx: int = -1) -> int:
        c, np = self._c, self._np
        logits = np.ctypeslib.as_array(c.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n_vocab,))
        every = self._all
        every["id"] = self._ids
        every["logit"] = logits
        every["p"] = 0.0
        self._apply(self._penalties, every)
        token = int(np.argmax(every["logit"]))
        self._one[0] = (token, every["logit"][token], 0.0)
        self._apply(self._grammar, self._one)
        if np.isfinite(self._one["logit"][0]):
            self.shortcuts += 1
        else:  # refused: the best token the grammar allows, judged over the whole vocabulary
            self.full_checks += 1
            self._apply(self._grammar, every)
            token = int(np.argmax(every["logit"]))
        c.llama_sampler_accept(self._penalties, token)
        c.llama_sampler_accept(self._grammar, token)
        return token

    def close(self) -> None:
        for name in ("_penalties", "_grammar"):
            sampler = getattr(self, name, None)
            if sampler:
                self._c.llama_sampler_free(sampler)
                setattr(self, name, None)

    def __del__(self) -> None:
        self.close()


def install_grammar_last(llama_class: Any) -> None:
    """Make ``llama_class`` (``llama_cpp.Llama``) sample greedy grammar-constrained generations
    with :class:`GrammarLast`; every other generation keeps llama-cpp-python's chain."""
    chain = llama_class._init_sampler

    def init_sampler(self: Any, *args: Any, **kwargs: Any) -> Any:
        grammar = kwargs.get("grammar")
        greedy = (
            not args
            and grammar is not None
            and kwargs.get("temp") == 0.0
            and kwargs.get("logits_processor") is None
            and kwargs.get("mirostat_mode", 0) == 0
        )
        if greedy:
            penalties = (
                kwargs.get("repeat_penalty", 1.0),
                kwargs.get("frequency_penalty", 0.0),
                kwargs.get("presence_penalty", 0.0),
            )
            try:
                return GrammarLast(self, grammar, penalties)
            except ValueError:
                pass  # the chain reports a grammar it cannot parse its own way
        return chain(self, *args, **kwargs)

    llama_class._init_sampler = init_sampler


def without_extra_buffer_types() -> None:
    """Load models in this process without ggml's extra buffer types (call before loading)."""
    import llama_cpp.llama_cpp as c

    defaults = c.llama_model_default_params

    def params() -> Any:
        value = defaults()
        value.use_extra_bufts = False
        return value

    c.llama_model_default_params = params


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    full_grammar = FULL_GRAMMAR_FLAG in args
    args = [a for a in args if a != FULL_GRAMMAR_FLAG]
    without_extra_buffer_types()
    if not full_grammar:
        import llama_cpp

        install_grammar_last(llama_cpp.Llama)
    sys.argv = ["llama_cpp.server", *args]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
