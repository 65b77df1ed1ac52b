"""The two image recipes agree, and the Docker-less one builds a valid OCI archive.

The Dockerfile (for people with Docker) and tests/cluster/image.sh (mmdebstrap, no Docker, no
registry) must give the same runtime contract: user, passwd entry, entrypoint, environment,
workdir, labels, lock file, virtual environment. image.sh reads it from tests/cluster/image.env;
these tests read the Dockerfile and fail on any difference. tests/charts/test_chart_image.py
covers the Dockerfile on its own (hadolint, pinned base, the lock's contents).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
from image_oci import check, pack
from image_recipe import dist_files, key, read_recipe, recipe_config

from tests.support.workers import REAL_NODE_GROUP

# On the real node's worker (tests/support/workers.py): the platform test builds images under the
# same cache lock, and a build waited for there would run down these tests' timeouts.
pytestmark = pytest.mark.xdist_group(REAL_NODE_GROUP)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RECIPE_FILE = HERE / "image.env"
RECIPE = read_recipe(RECIPE_FILE)


def _instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip())
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def final_stage() -> list[tuple[str, str]]:
    """The Dockerfile's instructions after its last FROM, continuation lines joined."""
    ins = _instructions()
    last = max(i for i, (k, _) in enumerate(ins) if k == "FROM")
    return ins[last + 1 :]


def build_stage() -> list[tuple[str, str]]:
    """The instructions between the first FROM and the last."""
    ins = _instructions()
    froms = [i for i, (k, _) in enumerate(ins) if k == "FROM"]
    return ins[froms[0] + 1 : froms[-1]]


def one(stage: list[tuple[str, str]], kind: str) -> str:
    values = [v for k, v in stage if k == kind]
    assert len(values) == 1, f"the Dockerfile's final stage has {len(values)} {kind} lines"
    return values[0]


def env_pairs(value: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in shlex.split(value))


# ---- the recipes agree (fast) -----------------------------------------------------------------


@pytest.mark.unit
def test_the_shell_and_python_read_the_recipe_alike() -> None:
    keys = " ".join(RECIPE)
    out = subprocess.run(
        [
            "bash",
            "-c",
            f'source "$1"; for k in {keys}; do printf "%s\\0" "${{!k}}"; done',
            "_",
            str(RECIPE_FILE),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert dict(zip(RECIPE, out.split("\0")[:-1], strict=True)) == RECIPE


@pytest.mark.unit
def test_user_entrypoint_env_workdir_and_labels_match_the_dockerfile() -> None:
    stage = final_stage()
    config = recipe_config(RECIPE)
    assert one(stage, "USER") == RECIPE["IMAGE_USER"] == config["User"]
    assert json.loads(one(stage, "ENTRYPOINT")) == config["Entrypoint"]
    assert json.loads(one(stage, "CMD")) == config["Cmd"]
    assert one(stage, "WORKDIR") == config["WorkingDir"]
    assert env_pairs(one(stage, "ENV")) == dict(
        e.split("=", 1) for e in json.loads(RECIPE["IMAGE_ENV"])
    )
    assert env_pairs(one(stage, "LABEL")) == config["Labels"]
    # the OCI config spells $PATH out: the venv first, then the base image's PATH
    (path,) = [e for e in config["Env"] if e.startswith("PATH=")]
    assert path.startswith(f"PATH={RECIPE['IMAGE_VENV']}/bin:")
    assert "$" not in path


@pytest.mark.unit
def test_both_recipes_give_uid_65532_a_passwd_entry() -> None:
    """kopf's peering identity calls getpass.getuser(): without an entry it raises KeyError
    ('getpwuid(): uid not found: 65532') and the operator pod crash-loops."""
    name, _, uid, gid, _, home, shell = RECIPE["IMAGE_PASSWD"].split(":")
    assert f"{uid}:{gid}" == RECIPE["IMAGE_USER"]
    group_name, _, group_gid, _ = RECIPE["IMAGE_GROUP"].split(":")
    assert (group_name, group_gid) == (name, gid)
    assert home == RECIPE["IMAGE_WORKDIR"]
    assert f"HOME={home}" in json.loads(RECIPE["IMAGE_ENV"])
    assert shell == "/usr/sbin/nologin"
    runs = " ; ".join(v for k, v in final_stage() if k == "RUN")
    assert f"echo '{RECIPE['IMAGE_PASSWD']}' >> /etc/passwd" in runs
    assert f"echo '{RECIPE['IMAGE_GROUP']}' >> /etc/group" in runs
    # before USER: the final stage's RUN lines run as root, so the append can write
    stage = final_stage()
    run_at = max(i for i, (k, v) in enumerate(stage) if k == "RUN" and "/etc/passwd" in v)
    assert run_at < stage.index(("USER", RECIPE["IMAGE_USER"]))
    # image.sh appends exactly these lines
    script = (HERE / "image.sh").read_text()
    assert 'echo "$IMAGE_PASSWD" >> "$root/etc/passwd"' in script
    assert 'echo "$IMAGE_GROUP" >> "$root/etc/group"' in script


@pytest.mark.unit
def test_the_same_lock_venv_distribution_and_python_go_in() -> None:
    build = build_stage()
    runs = " ; ".join(v for k, v in build if k == "RUN")
    venv = RECIPE["IMAGE_VENV"]
    assert f"python -m venv {venv}" in runs
    # the same lock: requirements/<IMAGE>.lock, IMAGE defaulting to the recipe's name
    assert RECIPE["IMAGE_LOCK"] == f"requirements/{RECIPE['IMAGE_NAME']}.lock"
    assert ("ARG", f"IMAGE={RECIPE['IMAGE_NAME']}") in build
    assert ("COPY", "requirements/${IMAGE}.lock requirements.lock") in build
    assert f"{venv}/bin/pip install --require-hashes --no-deps -r requirements.lock" in runs
    # the same distributions: those the lock's header names, installed without dependencies
    assert RECIPE["IMAGE_DISTS"] == ""
    assert "sed -n 's/^# distributions: //p' requirements.lock" in runs
    assert f"xargs {venv}/bin/pip install --no-deps --no-build-isolation" in runs
    header = [
        line
        for line in (ROOT / RECIPE["IMAGE_LOCK"]).read_text().splitlines()
        if line.startswith("# distributions: ")
    ]
    assert len(header) == 1
    copied = {v.split()[0].rstrip("/") for k, v in build if k == "COPY"}
    for folder in header[0].removeprefix("# distributions: ").split():
        assert folder in copied or folder == ".", folder
    assert ("COPY", f"--from=build {venv} {venv}") in final_stage()
    # the same Python minor and Debian release: python:3.11.x-slim-<suite> vs Debian's python3
    (base,) = [v for k, v in _instructions() if k == "ARG" and v.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(rf"PYTHON_IMAGE=python:3\.11\.\d+-slim-{RECIPE['IMAGE_SUITE']}\S*", base)
    assert RECIPE["IMAGE_SUITE"] == "bookworm"  # whose python3 is 3.11
    assert "CPython 3.11" in (ROOT / RECIPE["IMAGE_LOCK"]).read_text().splitlines()[0]


# ---- the packer and the key (fast, no root) ----------------------------------------------------


def _tiny_rootfs(root: Path) -> None:
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "bin" / "tool").chmod(0o755)
    os.link(root / "bin" / "tool", root / "bin" / "same-tool")
    (root / "bin" / "alias").symlink_to("tool")
    (root / "tmp").mkdir(mode=0o1777)
    (root / "tmp").chmod(0o1777)


@pytest.mark.unit
@pytest.mark.parametrize("compress", ["none", "gzip"])
def test_pack_writes_a_valid_deterministic_archive(tmp_path: Path, compress: str) -> None:
    root = tmp_path / "rootfs"
    _tiny_rootfs(root)
    config = recipe_config(RECIPE)
    first, second = tmp_path / "a.tar", tmp_path / "b.tar"
    packed = pack(root, "sleuth.local/t:1", config, first, compress=compress)
    time.sleep(0.01)
    (root / "etc" / "passwd").touch()  # a new mtime changes nothing: every mtime is the epoch
    pack(root, "sleuth.local/t:1", config, second, compress=compress)
    assert first.read_bytes() == second.read_bytes()

    archive = check(first)
    assert archive.ref == "sleuth.local/t:1"
    assert archive.manifest["layers"][0]["digest"] == packed.layer
    assert archive.config["config"] == config
    assert archive.config["rootfs"]["diff_ids"] == [packed.diff_id]
    members = archive.layer_members
    # the second path of a hard-linked file (in sorted order) is a link to the first
    assert members["bin/tool"].islnk()
    assert members["bin/tool"].linkname == "bin/same-tool"
    assert members["bin/alias"].issym()
    assert members["bin/alias"].linkname == "tool"
    assert members["bin/same-tool"].mode == 0o755
    assert members["tmp"].mode == 0o1777
    assert {m.mtime for m in members.values()} == {0}
    assert archive.files["etc/passwd"] == b"root:x:0:0::/root:/bin/sh\n"
    with tarfile.open(first) as outer:
        assert {"oci-layout", "index.json"} <= set(outer.getnames())


@pytest.mark.unit
def test_check_rejects_a_tampered_layer(tmp_path: Path) -> None:
    root = tmp_path / "rootfs"
    _tiny_rootfs(root)
    archive = tmp_path / "a.tar"
    pack(root, "sleuth.local/t:1", recipe_config(RECIPE), archive)
    data = bytearray(archive.read_bytes())
    at = data.index(b"#!/bin/sh\n")
    data[at] = ord("X")
    archive.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="layer: digest"):
        check(archive)


@pytest.mark.unit
def test_the_key_follows_tracked_sources_but_not_nested_distributions(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "core" / "src").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname='top'\n")
    (repo / "cli.py").write_text("print(1)\n")
    (repo / "core" / "pyproject.toml").write_text("[project]\nname='core'\n")
    (repo / "core" / "src" / "m.py").write_text("x = 1\n")
    (repo / "link").symlink_to("cli.py")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    lock = tmp_path / "lock"
    lock.write_text("a==1 --hash=sha256:" + "0" * 64 + "\n")

    assert dist_files(repo) == ["cli.py", "link", "pyproject.toml"]
    assert dist_files(repo / "core") == ["pyproject.toml", "src/m.py"]
    top = key(lock, [repo], [])
    (repo / "core" / "src" / "m.py").write_text("x = 2\n")  # another distribution's file
    (repo / "untracked.py").write_text("")  # not tracked: not built, not keyed
    assert key(lock, [repo], []) == top
    both = key(lock, [repo, repo / "core"], [])
    (repo / "core" / "src" / "m.py").write_text("x = 3\n")
    assert key(lock, [repo, repo / "core"], []) != both
    (repo / "cli.py").write_text("print(2)\n")  # an uncommitted edit counts
    assert key(lock, [repo], []) != top
    lock.write_text("a==2 --hash=sha256:" + "0" * 64 + "\n")
    assert len(key(lock, [repo], [])) == 12


# ---- the real build (slow: about 7 minutes cold, seconds once cached) --------------------------


def _can_build() -> str | None:
    if os.geteuid() != 0:
        return "building the image needs root (mmdebstrap, chroot, unshare)"
    for tool in ("mmdebstrap", "unshare", "chroot"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (make setup)"
    return None


def _build(*args: str) -> tuple[Path, str]:
    reason = _can_build()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    proc = subprocess.run(
        [str(HERE / "image.sh"), *args], capture_output=True, text=True, timeout=3000
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    path, ref = proc.stdout.split()
    return Path(path), ref


@pytest.fixture(scope="module")
def built() -> tuple[Path, str]:
    """The recipe's default image: sleuth (agents, tool services, eval jobs)."""
    return _build()


@pytest.fixture(scope="module")
def operator_built() -> tuple[Path, str]:
    return _build("--image", "operator")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_built_archive_is_the_recipe(built: tuple[Path, str]) -> None:
    path, ref = built
    archive = check(path)  # every digest and size, the layer's diff_id
    assert archive.ref == ref
    assert re.fullmatch(rf"{RECIPE['IMAGE_REGISTRY']}/{RECIPE['IMAGE_NAME']}:[0-9a-f]{{12}}", ref)
    config = archive.config["config"]
    assert config == recipe_config(RECIPE)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["sleuth"]

    passwd = archive.files["etc/passwd"].decode().splitlines()
    assert RECIPE["IMAGE_PASSWD"] in passwd
    assert [line for line in passwd if line.split(":")[2] == "65532"] == [RECIPE["IMAGE_PASSWD"]]
    assert RECIPE["IMAGE_GROUP"] in archive.files["etc/group"].decode().splitlines()

    members = archive.layer_members
    venv = RECIPE["IMAGE_VENV"].lstrip("/")
    assert f"{venv}/bin/sleuth" in members
    assert members[f"{venv}/bin/python"].issym()
    assert members["tmp"].mode == 0o1777
    assert not [n for n in members if n.startswith("dev/")]
    assert not [n for n in members if n.startswith(("tmp/", "var/lib/apt/lists/", "root/.cache"))]
    assert not [n for n in members if n.startswith("usr/share/man/")]
    # the installed set is the lock's, plus the local distribution
    site = f"{venv}/lib/python3.11/site-packages/"

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    installed = {
        norm(n[len(site) :].split("-")[0])
        for n in members
        if n.startswith(site) and n.endswith(".dist-info") and n.count("/") == site.count("/")
    }
    lock = ROOT / RECIPE["IMAGE_LOCK"]
    pinned = {
        norm(line.split("==")[0])
        for line in lock.read_text().splitlines()
        if line and not line.startswith("#")
    }
    header = next(
        line for line in lock.read_text().splitlines() if line.startswith("# distributions: ")
    )
    dists = {
        "sleuth" if f == "." else f"sleuth-{f}"
        for f in header.removeprefix("# distributions: ").split()
    }
    assert installed - {"pip"} == pinned | dists


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_second_build_is_the_cached_archive(built: tuple[Path, str]) -> None:
    start = time.monotonic()
    proc = subprocess.run([str(HERE / "image.sh")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(built[0]), built[1]]
    assert time.monotonic() - start < 30


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_image_runs_as_65532_under_containerd(built: tuple[Path, str]) -> None:
    """Imported into a private containerd and run with `ctr run` (no Kubernetes) as the pods run
    it (read-only root, writable /tmp): the image's own user, the call that crash-looped the
    operator pod (kopf's peering identity, in the operator's image below), every subcommand's
    entry."""
    commands = [
        "id",
        "pwd",
        "python -c 'import getpass; print(getpass.getuser())'",
        "sleuth --help",
        "sleuth agent --help",
        "sleuth tool-service --help",
        "sleuth eval --help",
        "python -c 'import ragas, sleuth.scoring.judge; print(\"ok\")'",
        "touch /opt/sleuth/probe 2>/dev/null && echo writable || echo read-only",
    ]
    out = _run_in(built[0], commands)
    assert out["id"].startswith("uid=65532(sleuth) gid=65532(sleuth)")
    assert out["pwd"].strip() == "/tmp"
    assert out[commands[2]].strip() == "sleuth"
    assert "usage: sleuth" in out["sleuth --help"]
    offered = re.findall(r"^    ([a-z][a-z-]*)\s", out["sleuth --help"], flags=re.M)
    assert "agent" in offered, out["sleuth --help"]
    assert "operator" not in offered  # the operator has its own image
    for sub in ("agent", "tool-service", "eval"):
        assert f"usage: sleuth {sub}" in out[f"sleuth {sub} --help"]
    assert out[commands[-2]].strip() == "ok"  # the eval code's heavy imports, on a read-only root
    assert out[commands[-1]].strip() == "read-only"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_operator_image_runs_kopf_as_65532_without_the_scoring_stack(
    operator_built: tuple[Path, str],
) -> None:
    """The call that crash-looped the operator pod (kopf's peering identity) works as 65532, and
    the operator's image offers the operator and carries no ragas."""
    commands = [
        "python -c 'from kopf._core.engines.peering import detect_own_id as d; "
        "print(d(manual=False))'",
        "sleuth operator --help",
        "python -c 'import ragas' 2>/dev/null && echo ragas || echo no-ragas",
    ]
    out = _run_in(operator_built[0], commands)
    assert out[commands[0]].startswith("sleuth@")
    assert "usage: sleuth operator" in out["sleuth operator --help"]
    assert out[commands[2]].strip() == "no-ragas"


def _run_in(archive: Path, commands: list[str]) -> dict[str, str]:
    """Each command's output, run by image_run.sh under a private containerd."""
    missing = [t for t in ("containerd", "ctr", "runc") if shutil.which(t) is None]
    if missing:
        reason = f"{', '.join(missing)} not installed (make setup)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    proc = subprocess.run(
        [str(HERE / "image_run.sh"), str(archive), *commands],
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict([*block.split("\n", 1), ""][:2] for block in proc.stdout.split("### ")[1:])
