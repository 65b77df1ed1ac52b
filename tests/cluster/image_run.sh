#!/usr/bin/env bash
# Run commands in an image archive under a private, throw-away containerd — no Kubernetes, and
# nothing shared with a node's containerd (own root, state and socket under a temporary folder).
# Needs root, containerd, runc and ctr.
#
#   tests/cluster/image_run.sh ARCHIVE 'sleuth --help' 'sleuth operator --help' ...
#
# Imports ARCHIVE into the k8s.io namespace (as a node's kubelet would see it), then runs each
# argument as `/bin/sh -c ARG` in its own container (`ctr run --rm`) with the image's own user,
# environment and working directory, as the chart's and the operator's pods run it: a read-only
# root filesystem with a writable /tmp; prints each command's output after a `### ARG` line, and
# exits non-zero as soon as one fails. Every process it started is stopped by PID, and its folders
# and mounts removed, on the way out. Progress and timings go to stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
log() { printf '[image-run %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
(( $# >= 1 )) || { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 2; }
[[ $EUID -eq 0 ]] || { log "needs root"; exit 1; }
archive="$(realpath "$1")"; shift
ref="$("$PYTHON" "$here/image_oci.py" ref "$archive")"

dir="$(mktemp -d /tmp/sleuth-image-run.XXXXXX)"
sock="$dir/containerd.sock"
# The runc shim puts its sockets in /run/containerd/s and runc its state in /run/containerd/runc
# whatever the config says; if this run created /run/containerd, its empty folders go afterwards.
made_run=0
[[ -d /run/containerd ]] || made_run=1
pid=""
cleanup() {
  # The shims of this containerd (their argv names its socket) exit just after their container
  # is deleted: wait for them, then stop any that linger, by PID, before the folders go.
  local shims s
  for _ in $(seq 50); do
    shims="$(pgrep -f -- "-address $sock" || true)"
    [[ -z "$shims" ]] && break
    sleep 0.2
  done
  for s in $shims; do kill "$s" 2>/dev/null || true; done
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  # snapshots a container left mounted (none after `ctr run --rm`, but a killed run may)
  local m
  for m in $(findmnt -rn -o TARGET | grep -F "$dir/" | sort -r || true); do umount -l "$m" || true; done
  rm -rf --one-file-system "$dir"
  if (( made_run )) && [[ -d /run/containerd ]]; then
    find /run/containerd -depth -type d -empty -delete
  fi
}
trap cleanup EXIT

cat > "$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
[plugins."io.containerd.grpc.v1.cri"]
  # root here lacks CAP_SYS_RESOURCE: runc cannot lower a pod sandbox's oom_score_adj
  restrict_oom_score_adj = true
EOF
containerd --config "$dir/config.toml" > "$dir/containerd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  ctr --address "$sock" version >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/containerd.log" >&2; exit 1; }
  sleep 0.2
done
ctr() { command ctr --address "$sock" -n k8s.io "$@"; }

t0=$SECONDS
ctr images import "$archive" >&2
log "imported $ref in $((SECONDS - t0)) s"
ctr images ls -q | grep -qxF "$ref" || { log "$ref is not in containerd after the import"; exit 1; }

n=0
for cmd in "$@"; do
  n=$((n + 1))
  printf '### %s\n' "$cmd"
  ctr run --rm --read-only --mount type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev:mode=1777 \
    "$ref" "sleuth-image-run-$$-$n" /bin/sh -c "$cmd"
done
