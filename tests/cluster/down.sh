#!/usr/bin/env bash
# Stop and delete the test control plane started by up.sh (and the real node, if it belongs to
# this cluster), and release its ports.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="${SLEUTH_CLUSTER:-sleuth}"
cache="${SLEUTH_CACHE:-$HOME/.cache/sleuth}"
export KWOK_WORKDIR="$cache/kwok"
kwokctl="$cache/bin/current/kwokctl"
rc=0
state=/run/sleuth-node/state.json
if [[ -f "$state" ]] && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])).get("cluster") != sys.argv[2])' "$state" "$name"; then
  "$here/node.sh" down >&2 || rc=$?
fi
if [[ -x "$kwokctl" ]]; then
  "$kwokctl" delete cluster --name "$name" >&2 || true
else
  echo "no kwokctl in $cache/bin/current; no cluster to stop" >&2
fi
rm -f "$cache/kwok/$name.kubeconfig" "$cache/kwok/$name.kwokctl.yaml" "$cache/kwok/$name.audit.log"
rm -rf "$cache/kwok/$name.front-proxy"
python3 "$here/ports.py" release "$name"
exit "$rc"
