#!/usr/bin/env bash
# Start the test control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kwok-controller as host processes (kwokctl's binary runtime, pointed at binaries built from the
# Go module proxy — nothing is downloaded), then simulated nodes and the prometheus-operator CRDs.
#
#   tests/cluster/up.sh [--h100 N] [--cpu N] [--real-node] [--service-cidr CIDR] [--audit-policy FILE]
#                                                            # prints the kubeconfig path on stdout
#
# --real-node also joins this machine as a real worker node (tests/cluster/node.sh up: containerd,
# kubelet, kube-proxy, CoreDNS) and taints the simulated CPU nodes kwok.x-k8s.io/node=fake:NoSchedule
# so CPU pods run for real. One real node per machine.
#
# Every cluster gets (the kwokctl configuration written below): its own pinned ports (ports.py),
# no leader election in kube-controller-manager and kube-scheduler, kube-controller-manager's client
# limits raised from 20/30 to 100/200 requests a second (at 1,000 agents its default limit, not
# CPU, held Deployments to about one ready a second on either side of bench/operator_scale.py;
# tests never reach it), a kwok-controller that manages
# only nodes annotated kwok.x-k8s.io/node=fake, and a kube-apiserver ready for a real kubelet
# (kubelet client certificate, InternalIP first, advertise address and serving-cert SANs that
# pods can reach), and kube-apiserver's aggregation layer (a front-proxy CA of the cluster's own,
# made here with openssl: the --requestheader-* flags and the proxy client certificate that
# extension API servers such as KEDA's metrics adapter trust; tests/operator/keda_kit.py).
# Kwok-only clusters behave as before otherwise.
#
# --service-cidr widens the Service IP range (default 10.0.0.0/24, about 250 Services: ~50 agents
# with three tools each); bench/operator_scale.py passes 10.0.0.0/16. Kwok-only clusters: the real
# node's routes are fixed to the default. --audit-policy starts kube-apiserver with that audit
# policy file, logging to $SLEUTH_CACHE/kwok/<name>.audit.log (the benchmark counts writes there).
#
# Environment: SLEUTH_CLUSTER (cluster name, default "sleuth"), SLEUTH_CACHE (build cache).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/versions.env"
# The real node's addresses (tests/cluster/node.py): the bridge address is the node IP and the
# kube-apiserver's advertise address.
NODE_IP=10.244.0.1
DEFAULT_SERVICE_CIDR=10.0.0.0/24
h100=4 cpu=2 real_node=0 service_cidr="$DEFAULT_SERVICE_CIDR" audit_policy=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --h100) h100="$2"; shift 2 ;;
    --cpu) cpu="$2"; shift 2 ;;
    --real-node) real_node=1; shift ;;
    --service-cidr) service_cidr="$2"; shift 2 ;;
    --audit-policy) audit_policy="$(realpath "$2")"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if (( real_node )) && [[ "$service_cidr" != "$DEFAULT_SERVICE_CIDR" ]]; then
  echo "up.sh: --service-cidr with --real-node: the real node routes only $DEFAULT_SERVICE_CIDR" >&2
  exit 2
fi
if [[ -n "$audit_policy" && ! -f "$audit_policy" ]]; then
  echo "up.sh: --audit-policy $audit_policy: no such file" >&2
  exit 2
fi
# The first IP of the range is the kubernetes Service's (10.0.0.1 for the default).
FIRST_SERVICE_IP="$(python3 -c 'import ipaddress, sys; print(ipaddress.ip_network(sys.argv[1])[1])' "$service_cidr")" || {
  echo "up.sh: --service-cidr $service_cidr: not a network address" >&2
  exit 2
}

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
  log "cluster $name exists; deleting it first (and its real node, if it has one)"
  "$here/down.sh" >&2 || true
fi
if (( real_node )); then
  owner="$("$here/node.sh" owner)"
  if [[ -n "$owner" ]]; then
    echo "up.sh: the real node is in use by cluster $owner (one per machine); tests/cluster/node.sh down first" >&2
    exit 1
  fi
fi
base="$(python3 "$here/ports.py" claim "$name")"
pki="$KWOK_WORKDIR/clusters/$name/pki"
config="$KWOK_WORKDIR/$name.kwokctl.yaml"
audit_log="$KWOK_WORKDIR/$name.audit.log"
# The aggregation layer's front proxy: a CA that only signs the client certificate kube-apiserver
# presents when it proxies to an extension API server (never the cluster CA, which signs admins).
front="$KWOK_WORKDIR/$name.front-proxy"
rm -rf "$front"; mkdir -p "$front"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=front-proxy-ca" \
  -keyout "$front/ca.key" -out "$front/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=front-proxy-client" \
  -keyout "$front/client.key" -out "$front/client.csr" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > "$front/client.ext"
openssl x509 -req -in "$front/client.csr" -CA "$front/ca.crt" -CAkey "$front/ca.key" \
  -CAcreateserial -days 2 -extfile "$front/client.ext" -out "$front/client.crt" 2>/dev/null
rm -f "$audit_log"
audit_args=""
if [[ -n "$audit_policy" ]]; then
  audit_args="- {key: audit-policy-file, value: \"$audit_policy\"}
  - {key: audit-log-path, value: \"$audit_log\"}"
fi
cat > "$config" <<YAML
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  etcdPort: $((base + 0))
  etcdPeerPort: $((base + 1))
  kubeApiserverPort: $((base + 2))
  kubeControllerManagerPort: $((base + 3))
  kubeSchedulerPort: $((base + 4))
  kwokControllerPort: $((base + 5))
  kubeApiserverCertSANs: ["$NODE_IP", "$FIRST_SERVICE_IP"]
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - {key: service-cluster-ip-range, value: "$service_cidr"}
  - {key: advertise-address, value: "$NODE_IP"}
  - {key: kubelet-client-certificate, value: "$pki/admin.crt"}
  - {key: kubelet-client-key, value: "$pki/admin.key"}
  - {key: kubelet-preferred-address-types, value: "InternalIP,Hostname"}
  - {key: requestheader-client-ca-file, value: "$front/ca.crt"}
  - {key: requestheader-allowed-names, value: "front-proxy-client"}
  - {key: requestheader-username-headers, value: "X-Remote-User"}
  - {key: requestheader-group-headers, value: "X-Remote-Group"}
  - {key: requestheader-extra-headers-prefix, value: "X-Remote-Extra-"}
  - {key: proxy-client-cert-file, value: "$front/client.crt", override: true}
  - {key: proxy-client-key-file, value: "$front/client.key", override: true}
  $audit_args
- name: kube-controller-manager
  extraArgs:
  - {key: leader-elect, value: "false"}
  - {key: kube-api-qps, value: "100"}
  - {key: kube-api-burst, value: "200"}
- name: kube-scheduler
  extraArgs:
  - {key: leader-elect, value: "false"}
- name: kwok-controller
  extraArgs:
  - {key: manage-all-nodes, value: "false", override: true}
  - {key: manage-nodes-with-annotation-selector, value: "kwok.x-k8s.io/node=fake"}
YAML
log "starting cluster $name (Kubernetes $KUBERNETES_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION; ports $base-$((base + 5)))"
kwokctl --config "$config" create cluster --name "$name" --runtime binary \
  --etcd-binary "$bin/etcd" \
  --kube-apiserver-binary "$bin/kube-apiserver" \
  --kube-controller-manager-binary "$bin/kube-controller-manager" \
  --kube-scheduler-binary "$bin/kube-scheduler" \
  --kwok-controller-binary "$bin/kwok" \
  --kubeconfig "$cache/kwok/$name.kubeconfig" \
  --wait 120s >&2
export KUBECONFIG="$kubeconfig"
taint=()
if (( real_node )); then taint=(--taint-cpu); fi
log "adding $h100 simulated H100 nodes and $cpu CPU nodes${taint:+ (tainted kwok.x-k8s.io/node=fake:NoSchedule)}"
python3 "$here/nodes.py" --h100 "$h100" --cpu "$cpu" "${taint[@]}" | kubectl apply -f - >/dev/null
log "installing prometheus-operator $PROMETHEUS_OPERATOR_VERSION CRDs"
crds="$cache/crds/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
kubectl apply --server-side -f "$crds/monitoring.coreos.com_prometheusrules.yaml" \
  -f "$crds/monitoring.coreos.com_servicemonitors.yaml" -f "$crds/monitoring.coreos.com_podmonitors.yaml" >/dev/null
kubectl wait --for=condition=Established --timeout=60s \
  crd/prometheusrules.monitoring.coreos.com crd/servicemonitors.monitoring.coreos.com >/dev/null
log "installing KEDA $KEDA_VERSION's CRDs (its module's: the operator renders ScaledObjects)"
kubectl apply --server-side -f "$cache/crds/keda-$KEDA_VERSION/" >/dev/null
# Just created, a CRD may have no status yet, which `kubectl wait` reports as an error, not as "not
# yet": ask again until it answers.
for _ in $(seq 1 120); do
  kubectl wait --for=condition=Established --timeout=60s crd/scaledobjects.keda.sh >/dev/null 2>&1 && break
  sleep 0.5
done
kubectl wait --for=condition=Established --timeout=60s crd/scaledobjects.keda.sh >/dev/null
kubectl wait --for=condition=Ready --timeout=$((60 + (h100 + cpu) / 2))s node --all >/dev/null
# The default ServiceAccount appears once kube-controller-manager runs.
for _ in $(seq 1 360); do  # up to 3 min: kube-controller-manager starts slowly under load
  kubectl get serviceaccount default -n default >/dev/null 2>&1 && break
  sleep 0.5
done
kubectl get serviceaccount default -n default >/dev/null
if (( real_node )); then
  log "joining this machine as the real node"
  "$here/node.sh" up --kubeconfig "$kubeconfig" --cluster "$name" >/dev/null
fi
log "cluster $name ready in $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" "$t0") s"
echo "$kubeconfig"
