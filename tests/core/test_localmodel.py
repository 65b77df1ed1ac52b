"""The local model's GGUF: assembled from the installed wheel parts, checked, cached, refused
when wrong; the extras that install the parts list exactly the pinned parts."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from sleuth.core import localmodel
from sleuth.core.errors import ConfigError
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration


def test_the_extras_install_exactly_the_pinned_parts() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for model in localmodel.MODELS.values():
        parts = [r for r in extras[model.extra] if not r.startswith("llama-cpp-python")]
        assert parts == model.requirements()


def test_unknown_model_and_missing_parts_say_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"known: 0\.5b, 1\.5b"):
        localmodel.local_model("7b")
    ghost = dataclasses.replace(localmodel.MODELS["0.5b"], package="sleuth-no-such-part")
    with pytest.raises(ConfigError, match=r"sleuth-no-such-part1.*pip install 'sleuth\["):
        localmodel.part_paths(ghost)


def _small_installed() -> None:
    try:
        localmodel.part_paths(localmodel.MODELS["0.5b"])
    except ConfigError as exc:
        pytest.skip(f"make local-model-small: {exc}")


def test_assembles_checks_and_then_trusts_its_stamp(tmp_path: Path) -> None:
    _small_installed()
    path = localmodel.ensure_gguf("0.5b", directory=tmp_path)
    model = localmodel.MODELS["0.5b"]
    assert path == tmp_path / model.file_name
    assert path.stat().st_size == model.size
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"
    before = path.stat().st_mtime_ns
    assert localmodel.ensure_gguf("0.5b", directory=tmp_path) == path
    assert path.stat().st_mtime_ns == before  # not written again
    with path.open("r+b") as f:  # a changed file loses its stamp: assembled and checked again
        f.write(b"XXXX")
    assert localmodel.ensure_gguf("0.5b", directory=tmp_path) == path
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"


def test_a_wrong_checksum_is_refused_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_installed()
    wrong = dataclasses.replace(localmodel.MODELS["0.5b"], sha256="0" * 64)
    monkeypatch.setitem(localmodel.MODELS, "0.5b", wrong)
    with pytest.raises(ConfigError, match="expected 491400064 bytes and 0000"):
        localmodel.ensure_gguf("0.5b", directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_prompt_lookup_decoding_is_on_by_default_and_can_be_turned_off() -> None:
    pytest.importorskip("llama_cpp")
    gguf = Path("model.gguf")
    plain = localmodel.server_command(gguf, 8000, localmodel.ServeSettings(draft_tokens=0))
    assert not any(arg.startswith("--draft_model") for arg in plain)
    drafted = localmodel.server_command(gguf, 8000, localmodel.ServeSettings())
    at = drafted.index("--draft_model")
    assert drafted[at : at + 4] == [
        "--draft_model",
        "prompt-lookup-decoding",
        "--draft_model_num_pred_tokens",
        "2",
    ]
