#!/usr/bin/env bash
# The real worker node (containerd, kubelet, kube-proxy, CoreDNS on a CNI bridge): see node.py.
#
#   tests/cluster/node.sh up --kubeconfig KUBECONFIG   # (up.sh --real-node does this for you)
#   tests/cluster/node.sh down                          # safe to run twice, or after a failed up
#   tests/cluster/node.sh status | import ARCHIVE... | leftovers | check-network
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "$here/node.py" "$@"
