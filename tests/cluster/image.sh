#!/usr/bin/env bash
# Build a sleuth image without Docker or a registry: a Debian root filesystem (mmdebstrap), the
# hash-pinned wheels of a lock file installed offline into a venv, local distributions built into
# wheels and installed without dependencies, packed as a one-layer OCI archive that
# `ctr -n k8s.io images import` accepts. Needs root, mmdebstrap, unshare, git and a python3.
#
#   tests/cluster/image.sh                                    # the recipe's defaults (image.env)
#   tests/cluster/image.sh --image operator                   # requirements/operator.lock, its dists
#   tests/cluster/image.sh --name NAME --lock LOCK --dist DIR [--dist DIR ...] [--smoke CMD]
#                          [--import [--address SOCKET] [--namespace NS]]
#
#   --image NAME   one of the project's images: --name NAME --lock requirements/NAME.lock, and
#                  the distributions that lock's '# distributions:' header names
#   --name NAME    image name (default IMAGE_NAME, "sleuth"); the ref is sleuth.local/NAME:KEY
#   --lock LOCK    requirements file in pip's --require-hashes format: every third-party wheel,
#                  exact and hashed, installed with --no-deps (default IMAGE_LOCK)
#   --dist DIR     a folder with a pyproject.toml, built into a wheel with the lock's build
#                  backend (no build isolation, offline) and installed with --no-deps; repeat it,
#                  they are installed in the order given (default IMAGE_DISTS, or when that is
#                  empty the workspace folders the lock's '# distributions:' header names)
#   --smoke CMD    a shell command the build runs in the image as its user, which must succeed
#                  (default IMAGE_SMOKE, "sleuth --help"; `sleuth --help` loads every
#                  subcommand, so a role's image names its own, e.g. 'sleuth operator --help');
#                  getpass.getuser() is always checked. Not part of KEY: it changes no content.
#   --import       also `ctr --address SOCKET -n NS images import` the archive
#                  (defaults /run/containerd/containerd.sock, k8s.io)
#   Relative LOCK and DIR paths are taken from the repository root, not the current directory.
#
# Output (stdout, two lines): the archive's path, then the image ref. Progress goes to stderr.
#
# KEY is the first 12 hex digits of a sha256 over this script, image_oci.py, image_recipe.py,
# image.env, the lock file, and each distribution's git-tracked files (working-tree content;
# nested folders with their own pyproject.toml excluded) — see image_recipe.py. With nothing
# changed a second run only computes KEY and prints the cached archive.
#
# Cache, under ${SLEUTH_CACHE:-~/.cache/sleuth}/images/ (after a build the ${SLEUTH_IMAGE_KEEP:-4}
# last used base, wheels and deps entries and the newest two archives of NAME are kept):
#   base-<K>.tar        the Debian rootfs, keyed by the mmdebstrap arguments (suite, packages)
#   wheels-<K>/         the lock's wheels, downloaded on the host (pip in the chroot cannot verify
#                       the registry proxy's TLS), keyed by the lock file's sha256
#   deps-<K>/           base + venv + the lock installed, keyed by base, lock and builder files
#   NAME-KEY.oci.tar    the image archive; NAME-KEY.json: its ref, digests, size, build seconds
# shellcheck disable=SC2016  # the scripts run in the chroot are single-quoted on purpose
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=image.env
source "$here/image.env"
PYTHON="${PYTHON:-python3}"
EPOCH=0   # every mtime in the layer, and SOURCE_DATE_EPOCH for mmdebstrap and the wheel builds
cache="${SLEUTH_CACHE:-$HOME/.cache/sleuth}/images"
builder=("$here/image.sh" "$here/image_oci.py" "$here/image_recipe.py" "$here/image.env")

log() { printf '[image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$repo/$1" ;; esac; }
short_sha() { sha256sum | cut -c1-12; }
args=("$@")

name="$IMAGE_NAME" lock="$IMAGE_LOCK" dists=() do_import=0 smoke="$IMAGE_SMOKE"
address=/run/containerd/containerd.sock namespace=k8s.io
while (( $# )); do
  case "$1" in
    --image) name="$2"; lock="requirements/$2.lock"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --lock) lock="$2"; shift 2 ;;
    --dist) dists+=("$2"); shift 2 ;;
    --smoke) smoke="$2"; shift 2 ;;
    --import) do_import=1; shift ;;
    --address) address="$2"; shift 2 ;;
    --namespace) namespace="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;/^# shellcheck/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
[[ "$name" =~ ^[a-z0-9][a-z0-9._-]*$ ]] || die "--name: lower-case letters, digits, . _ - only"
lock="$(abs "$lock")"
[[ -f "$lock" ]] || die "no lock file $lock"
(( ${#dists[@]} )) || read -ra dists <<< "$IMAGE_DISTS"
(( ${#dists[@]} )) || read -ra dists <<< "$(sed -n 's/^# distributions: //p' "$lock")"
(( ${#dists[@]} )) || die "$lock names no distributions (a '# distributions:' header) and no --dist"
for i in "${!dists[@]}"; do
  dists[i]="$(abs "${dists[i]}")"
  [[ -f "${dists[i]}/pyproject.toml" ]] || die "${dists[i]}: no pyproject.toml"
done

key_args=(--lock "$lock")
for d in "${dists[@]}"; do key_args+=(--dist "$d"); done
for f in "${builder[@]}"; do key_args+=(--builder "$f"); done
key="$("$PYTHON" "$here/image_recipe.py" key "${key_args[@]}")"
ref="$IMAGE_REGISTRY/$name:$key"
archive="$cache/$name-$key.oci.tar"

import_archive() {
  (( do_import )) || return 0
  log "importing into containerd at $address (namespace $namespace)"
  ctr --address "$address" -n "$namespace" images import "$archive" >&2
}

finish() {
  printf '%s\n%s\n' "$archive" "$ref"
  import_archive
  exit 0
}

[[ -f "$archive" ]] && finish

# ---- a build: one at a time per cache (the rootfs steps need root) --------------------------
[[ $EUID -eq 0 ]] || die "building needs root (mmdebstrap, chroot, unshare)"
# The build runs in a private mount namespace: the overlay of step 4 and every chroot's mounts
# vanish with it, whatever happens.
if [[ -z "${_SLEUTH_IMAGE_NS:-}" ]]; then
  exec env _SLEUTH_IMAGE_NS=1 unshare --mount --propagation private -- "$here/image.sh" "${args[@]}"
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
[[ -f "$archive" ]] && finish   # built by the run we waited for
start=$SECONDS
rm -rf "$cache"/.tmp-image-sh-*   # left by a killed run (we hold the lock: none is running)
work="$(mktemp -d "$cache/.tmp-image-sh-$name.XXXXXX")"
trap 'umount -l "$work/rootfs" 2>/dev/null || true; rm -rf --one-file-system "$work"' EXIT

# Run a command chrooted in ROOTFS, offline: own mount and network namespaces, /proc, a /dev
# with the usual character devices, and WHEELS (unless "-") bound read-only at /wheels, for that
# command only; the mounts vanish with the namespace. IN_ROOT_USER=uid:gid runs it as that user;
# IN_ROOT_ENV (a JSON list) replaces the build environment.
in_root() {
  local root="$1" wheels="$2"; shift 2
  local -a envs
  if [[ -n "${IN_ROOT_ENV:-}" ]]; then
    mapfile -t envs < <("$PYTHON" -c 'import json,sys; print(*json.loads(sys.argv[1]), sep="\n")' \
      "$IN_ROOT_ENV")
  else
    envs=(PATH="$IMAGE_VENV/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME=/root LC_ALL=C.UTF-8
          PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
          SOURCE_DATE_EPOCH="$EPOCH")
  fi
  unshare --mount --net --fork -- /bin/bash -euc '
    root="$1" wheels="$2" user="$3"; shift 3
    mount -t proc proc "$root/proc"
    mount -t tmpfs -o mode=755 tmpfs "$root/dev"
    for n in null zero full random urandom tty; do
      touch "$root/dev/$n"; mount --bind "/dev/$n" "$root/dev/$n"
    done
    ln -s /proc/self/fd "$root/dev/fd"
    mkdir -m 1777 "$root/dev/shm"
    if [[ "$wheels" != - ]]; then
      mkdir -p "$root/wheels"
      mount --bind "$wheels" "$root/wheels"
      mount -o remount,bind,ro "$root/wheels"
    fi
    exec chroot ${user:+--userspec="$user"} "$root" /usr/bin/env -i "$@"
  ' _ "$root" "$wheels" "${IN_ROOT_USER:-}" "${envs[@]}" "$@"
  if [[ "$wheels" != - ]]; then rmdir "$root/wheels"; fi
}

# Run a chatty command with its output in $work/log, shown (the end of it) only if it fails.
quietly() {
  "$@" > "$work/log" 2>&1 || { local rc=$?; tail -n 40 "$work/log" >&2; return "$rc"; }
}

# Keep the newest KEEP entries matching a glob, remove the rest.
prune() {
  local keep="$1"; shift
  local -a old
  # shellcheck disable=SC2012  # our own names: no newlines
  mapfile -t old < <(ls -dt "$@" 2>/dev/null | tail -n +"$((keep + 1))")
  (( ${#old[@]} )) || return 0
  local names=()
  for o in "${old[@]}"; do o="${o%/}"; names+=("${o##*/}"); done
  log "pruning ${names[*]}"
  rm -rf "${old[@]}"
}

# ---- 1. the Debian root filesystem ----------------------------------------------------------
mapfile -t deb_args <<EOF
--variant=essential
--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
--include=${IMAGE_DEB_PACKAGES// /,}
--dpkgopt=path-exclude=/usr/share/doc/*
--dpkgopt=path-include=/usr/share/doc/*/copyright
--dpkgopt=path-exclude=/usr/share/man/*
--dpkgopt=path-exclude=/usr/share/info/*
--dpkgopt=path-exclude=/usr/share/locale/*
--dpkgopt=path-exclude=/usr/share/lintian/*
$IMAGE_SUITE
EOF
base_key="$(printf '%s\n' "${deb_args[@]}" | short_sha)"
base="$cache/base-$base_key.tar"
if [[ ! -f "$base" ]]; then
  log "Debian $IMAGE_SUITE rootfs with $IMAGE_DEB_PACKAGES (mmdebstrap, ~1.5 min)"
  SOURCE_DATE_EPOCH="$EPOCH" quietly mmdebstrap "${deb_args[@]}" "$work/base.tar"
  mv "$work/base.tar" "$base"
fi
touch "$base"   # pruning keeps what was used last

# ---- 2. the lock's wheels, downloaded on the host -------------------------------------------
lock_key="$(short_sha < "$lock")"
wheels="$cache/wheels-$lock_key"
if [[ ! -d "$wheels" ]]; then
  log "downloading the wheels of ${lock#"$repo/"} (pip download --require-hashes)"
  # From /: a `python -m` run in the repository root would import its operator/ folder as the
  # standard library's operator module. --only-binary: a lock that needs an sdist fails here.
  (cd / && "$PYTHON" -m pip download --quiet --require-hashes --no-deps --only-binary=:all: \
     -r "$lock" -d "$work/wheels") >&2
  mv "$work/wheels" "$wheels"
fi
touch "$wheels"

# ---- 3. base + venv + the locked third-party set ---------------------------------------------
deps_key="$(printf '%s\n' "$base_key" "$lock_key" "$(cat "${builder[@]}" | short_sha)" | short_sha)"
deps="$cache/deps-$deps_key"
if [[ ! -d "$deps" ]]; then
  log "venv $IMAGE_VENV with the locked wheels, offline in the chroot"
  mkdir "$work/deps"
  tar --numeric-owner -xpf "$base" -C "$work/deps"
  cp "$lock" "$work/deps/tmp/requirements.lock"
  in_root "$work/deps" "$wheels" /bin/sh -euc '
    venv="$1"
    python3 -m venv "$venv"
    # Every wheel must carry a tag this interpreter accepts (Linux x86_64, CPython 3.11, the
    # rootfs glibc): say which ones do not before pip fails on the first.
    "$venv/bin/python" - <<PY
import os, sys
from pip._vendor.packaging.tags import sys_tags
from pip._vendor.packaging.utils import parse_wheel_filename
ok = set(sys_tags())
bad = [f for f in sorted(os.listdir("/wheels"))
       if not f.endswith(".whl") or not parse_wheel_filename(f)[3] & ok]
if bad:
    sys.exit("wheels this image cannot install:\n  " + "\n  ".join(bad))
PY
    "$venv/bin/pip" install --quiet --no-index --find-links /wheels --require-hashes --no-deps \
      --no-compile -r /tmp/requirements.lock
    rm /tmp/requirements.lock
  ' _ "$IMAGE_VENV" >&2
  mv "$work/deps" "$deps"
fi
touch "$deps"

# ---- 4. the local distributions, the user, the clean-up --------------------------------------
log "local distributions: ${dists[*]#"$repo/"}"
# An overlay on deps-<K>: nothing is copied, and what this image adds or removes stays in
# $work/upper (deps-<K> itself is never written).
root="$work/rootfs"
mkdir "$work/upper" "$work/ovl" "$root"
mount -t overlay overlay -o "lowerdir=$deps,upperdir=$work/upper,workdir=$work/ovl" "$root"
for i in "${!dists[@]}"; do
  src="$root/tmp/src/$(printf %02d "$i")"
  mkdir -p "$src"
  (cd "${dists[i]}" && "$PYTHON" "$here/image_recipe.py" files . | tar --null -T - -cf -) \
    | tar -xf - -C "$src"
done
in_root "$root" - /bin/sh -euc '
  venv="$1"
  for src in /tmp/src/*; do
    "$venv/bin/pip" wheel --quiet --no-deps --no-build-isolation --no-index -w /tmp/dist "$src"
  done
  "$venv/bin/pip" install --quiet --no-deps --no-index --no-compile /tmp/dist/*.whl
' _ "$IMAGE_VENV" >&2

grep -q "^${IMAGE_PASSWD%%:*}:" "$root/etc/passwd" || echo "$IMAGE_PASSWD" >> "$root/etc/passwd"
grep -q "^${IMAGE_GROUP%%:*}:" "$root/etc/group" || echo "$IMAGE_GROUP" >> "$root/etc/group"

# What a runtime image does not need: caches, logs, the build's sources, bytecode compiled with
# timestamps (the layer's mtimes are all EPOCH, so those would be stale), the host's resolver
# and name (the runtime mounts its own), device nodes (the runtime mounts /dev).
find "$root" -xdev -depth -name __pycache__ -type d -exec rm -rf {} +
rm -rf "${root:?}"/tmp/* "${root:?}"/var/tmp/* "${root:?}"/root/.cache "${root:?}"/dev/* \
  "${root:?}"/var/cache/apt/* "${root:?}"/var/lib/apt/lists/* "${root:?}"/var/cache/debconf/*-old \
  "${root:?}"/var/lib/dpkg/*-old "${root:?}"/var/cache/ldconfig/aux-cache \
  "${root:?}"/etc/resolv.conf "${root:?}"/etc/hostname
find "${root:?}/var/log" -type f -delete

"$PYTHON" "$here/image_recipe.py" config "$here/image.env" > "$work/config.json"
image_env="$("$PYTHON" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["Env"]))' \
  "$work/config.json")"
user_name="${IMAGE_PASSWD%%:*}"
log "smoke test as $IMAGE_USER: getpass.getuser() == $user_name; $smoke"
IN_ROOT_USER="$IMAGE_USER" IN_ROOT_ENV="$image_env" in_root "$root" - /bin/sh -euc '
  cd "$1"
  test "$(python -c "import getpass; print(getpass.getuser())")" = "$2"
  /bin/sh -euc "$3" >/dev/null
' _ "$IMAGE_WORKDIR" "$user_name" "$smoke" >&2
find "${root:?}/tmp" -mindepth 1 -delete

log "packing $ref"
"$PYTHON" "$here/image_oci.py" pack "$root" --ref "$ref" --config "$work/config.json" \
  --out "$work/image.oci.tar" --epoch "$EPOCH" --compress "$IMAGE_LAYER_COMPRESSION" \
  > "$work/packed.json"
"$PYTHON" - "$work/packed.json" "$root" "$SECONDS" "$start" "$lock" "${base##*/}" \
  "${wheels##*/}" "${deps##*/}" "${dists[@]}" > "$work/meta.json" <<'PY'
import json, subprocess, sys
packed, root, now, start, lock, base, wheels, deps, *dists = sys.argv[1:]
meta = json.load(open(packed))
du = subprocess.run(["du", "-sb", root], capture_output=True, text=True, check=True).stdout
meta.update(rootfs_bytes=int(du.split()[0]), build_seconds=int(now) - int(start), lock=lock,
            dists=dists, base=base, wheels=wheels, deps=deps)
print(json.dumps(meta, indent=2))
PY
mv "$work/meta.json" "$cache/$name-$key.json"
mv "$work/image.oci.tar" "$archive"
log "built in $((SECONDS - start)) s: $(du -h "$archive" | cut -f1) $archive"

keep="${SLEUTH_IMAGE_KEEP:-4}"
prune "$keep" "$cache"/base-*.tar
prune "$keep" "$cache"/wheels-*/
prune "$keep" "$cache"/deps-*/
prune 2 "$cache/$name"-????????????.oci.tar
mapfile -t metas < <(ls "$cache/$name"-????????????.json 2>/dev/null)
for m in "${metas[@]}"; do [[ -f "${m%.json}.oci.tar" ]] || rm -f "$m"; done
finish
