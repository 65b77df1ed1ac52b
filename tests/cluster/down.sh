#!/usr/bin/env bash
# Stop and delete the test control plane started by up.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="${SLEUTH_CLUSTER:-sleuth}"
cache="${SLEUTH_CACHE:-$HOME/.cache/sleuth}"
export KWOK_WORKDIR="$cache/kwok"
kwokctl="$cache/bin/current/kwokctl"
[[ -x "$kwokctl" ]] || { echo "no kwokctl in $cache/bin/current; nothing to stop" >&2; exit 0; }
"$kwokctl" delete cluster --name "$name" >&2 || true
rm -f "$cache/kwok/$name.kubeconfig"
