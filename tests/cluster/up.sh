#!/usr/bin/env bash
# Start the test control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kwok-controller as host processes (kwokctl's binary runtime, pointed at binaries built from the
# Go module proxy — nothing is downloaded), then simulated nodes and the prometheus-operator CRDs.
#
#   tests/cluster/up.sh [--h100 N] [--cpu N]     # prints the kubeconfig path on stdout
#
# Environment: SLEUTH_CLUSTER (cluster name, default "sleuth"), SLEUTH_CACHE (build cache).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/versions.env"
h100=4 cpu=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --h100) h100="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
name="${SLEUTH_CLUSTER:-sleuth}"
cache="${SLEUTH_CACHE:-$HOME/.cache/sleuth}"
bin="$("$here/build.sh")"
export KWOK_WORKDIR="$cache/kwok"
export KWOK_KUBE_VERSION="$KUBERNETES_VERSION"
export PATH="$bin:$PATH"
kubeconfig="$KWOK_WORKDIR/clusters/$name/kubeconfig.yaml"
log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

t0=$(date +%s.%N)
if kwokctl get clusters 2>/dev/null | grep -qx "$name"; then
  log "cluster $name exists; deleting it first"
  kwokctl delete cluster --name "$name" >&2 || true
fi
log "starting cluster $name (Kubernetes $KUBERNETES_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION)"
kwokctl create cluster --name "$name" --runtime binary \
  --etcd-binary "$bin/etcd" \
  --kube-apiserver-binary "$bin/kube-apiserver" \
  --kube-controller-manager-binary "$bin/kube-controller-manager" \
  --kube-scheduler-binary "$bin/kube-scheduler" \
  --kwok-controller-binary "$bin/kwok" \
  --kubeconfig "$cache/kwok/$name.kubeconfig" \
  --wait 120s >&2
export KUBECONFIG="$kubeconfig"
log "adding $h100 simulated H100 nodes and $cpu CPU nodes"
python3 "$here/nodes.py" --h100 "$h100" --cpu "$cpu" | kubectl apply -f - >/dev/null
log "installing prometheus-operator $PROMETHEUS_OPERATOR_VERSION CRDs"
crds="$cache/crds/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
kubectl apply --server-side -f "$crds/monitoring.coreos.com_prometheusrules.yaml" \
  -f "$crds/monitoring.coreos.com_servicemonitors.yaml" -f "$crds/monitoring.coreos.com_podmonitors.yaml" >/dev/null
kubectl wait --for=condition=Established --timeout=60s \
  crd/prometheusrules.monitoring.coreos.com crd/servicemonitors.monitoring.coreos.com >/dev/null
kubectl wait --for=condition=Ready --timeout=60s node --all >/dev/null
# The default ServiceAccount appears once kube-controller-manager runs.
for _ in $(seq 1 360); do  # up to 3 min: kube-controller-manager starts slowly under load
  kubectl get serviceaccount default -n default >/dev/null 2>&1 && break
  sleep 0.5
done
kubectl get serviceaccount default -n default >/dev/null
log "cluster $name ready in $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$t0") s"
echo "$kubeconfig"
