"""The real node's fixed addresses, paths and ports, and the configuration files it runs with.

containerd (CRI: restrict_oom_score_adj, cgroupfs, CNI from /usr/lib/cni, our pause image), the
CNI bridge conflist (no masquerade, no default route), kubelet, kube-proxy (iptables mode),
CoreDNS (no upstream) and the kube-dns Service. Used by node.py; see its docstring.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
BIN = CACHE / "bin" / "current"

NODE_NAME = "sleuth-node"
BRIDGE = "sleuth0"
NODE_IP = "10.244.0.1"
NODE_SUBNET = "10.244.0.0/24"  # this node's pods (host-local IPAM)
CLUSTER_CIDR = "10.244.0.0/16"  # the cluster's pod CIDR
SERVICE_CIDR = "10.0.0.0/24"  # kube-apiserver's --service-cluster-ip-range (its default)
KUBERNETES_SERVICE_IP = "10.0.0.1"
DNS_SERVICE_IP = "10.0.0.10"
CLUSTER_DOMAIN = "cluster.local"
NODE_GID = 64250  # every node process runs with this group id (see the network rule)
NODE_LABEL = "sleuth.dev/real-node"
KUBELET_PORT = 10250
KUBELET_HEALTHZ = 10248
PROXY_HEALTHZ = 10256
PROXY_METRICS = 10249
DNS_READY = 10181

RUN = Path("/run/sleuth-node")  # state, configs, certificates, containerd's state and socket
ROOT = Path("/var/lib/sleuth-node")  # containerd's root (images), kubelet's root, pod logs
LOGS = ROOT / "logs"  # the last run's process logs; kept after `down` for a post-mortem
STATE = RUN / "state.json"
SYSCTL_SAVED = RUN / "sysctl.json"
CONTAINERD_SOCK = RUN / "containerd" / "containerd.sock"
RUNC_ROOT = RUN / "runc"
POD_LOGS = ROOT / "pods"
CHAIN_PREFIXES = ("KUBE-", "CNI-", "SLEUTH-")
GUARD = "SLEUTH-NODE-GUARD"

# Every sysctl the node (or kubelet, kube-proxy, the CNI plugins) may change; saved before `up`,
# restored by `down`. Per-interface ones go with the interfaces.
SYSCTLS = [
    "net/ipv4/ip_forward",
    "net/ipv6/conf/all/forwarding",
    "net/ipv6/conf/default/forwarding",
    "net/ipv4/conf/all/route_localnet",
    "net/ipv4/conf/all/rp_filter",
    "net/ipv4/conf/default/rp_filter",
    "net/ipv4/conf/all/forwarding",
    "net/ipv4/conf/default/forwarding",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/bridge/bridge-nf-call-arptables",
    "net/netfilter/nf_conntrack_max",
    "net/netfilter/nf_conntrack_tcp_timeout_established",
    "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
    "net/netfilter/nf_conntrack_tcp_be_liberal",
    "net/netfilter/nf_conntrack_udp_timeout",
    "net/netfilter/nf_conntrack_udp_timeout_stream",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
]
# What `up` itself sets (kubelet then sets vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
# kernel.panic_on_oops and kernel.keys.root_max*; the bridge plugin sets ip_forward too).
NODE_SYSCTLS = {
    "net/ipv4/ip_forward": "1",
    "net/bridge/bridge-nf-call-iptables": "1",
    "net/bridge/bridge-nf-call-ip6tables": "1",
}


def write_kubeconfig(path: Path, server: str, ca: str, crt: Path, key: Path, user: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "sleuth", "cluster": {"server": server, "certificate-authority": ca}}
        ],
        "users": [{"name": user, "user": {"client-certificate": str(crt), "client-key": str(key)}}],
        "contexts": [{"name": "sleuth", "context": {"cluster": "sleuth", "user": user}}],
        "current-context": "sleuth",
    }
    path.write_text(json.dumps(config, indent=1))
    path.chmod(0o600)


PAUSE_REF = "sleuth.local/pause:v1"
PROBE_REF = "sleuth.local/probe:v1"
NONROOT = 65532


def containerd_config() -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{ROOT / "containerd"}"
state = "{RUN / "containerd"}"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{CONTAINERD_SOCK}"

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{ROOT / "opt"}"

[{cri}]
  sandbox_image = "{PAUSE_REF}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true
  max_concurrent_downloads = 1

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{RUN / "cni"}"
  max_conf_num = 1

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{RUNC_ROOT}"

[{cri}.registry]
  config_path = "{RUN / "registry.d"}"
"""


def cni_config() -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": NODE_NAME,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "isDefaultGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(RUN / "cni-ipam"),
                    "ranges": [
                        [
                            {
                                "subnet": NODE_SUBNET,
                                "rangeStart": "10.244.0.10",
                                "rangeEnd": "10.244.0.250",
                                "gateway": NODE_IP,
                            }
                        ]
                    ],
                    # No default route: the pod and service CIDRs only, via the bridge.
                    "routes": [{"dst": CLUSTER_CIDR}, {"dst": SERVICE_CIDR}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(ca: str, crt: Path, key: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": KUBELET_HEALTHZ,
        "tlsCertFile": str(crt),
        "tlsPrivateKeyFile": str(key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": ca},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCK}",
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "",  # pods with dnsPolicy Default get no nameserver (no upstream)
        "podLogsDir": str(POD_LOGS),
        "staticPodPath": "",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "registerNode": True,
        "maxPods": 110,
        "serializeImagePulls": False,
        # A small, shared disk: never garbage-collect the imported images, evict only when
        # nearly full.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "imageMinimumGCAge": "87600h",
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
            "imagefs.inodesFree": "1%",
        },
        "evictionMinimumReclaim": {},
        "evictionPressureTransitionPeriod": "10s",
        "nodeStatusUpdateFrequency": "10s",
        "nodeStatusReportFrequency": "1m",
        "protectKernelDefaults": False,
        "shutdownGracePeriod": "0s",
        "volumeStatsAggPeriod": "1m",
        "cpuManagerPolicy": "none",
        "enableServer": True,
    }


def kube_proxy_config(kubeconfig: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "bindAddress": NODE_IP,
        "clusterCIDR": CLUSTER_CIDR,
        "healthzBindAddress": f"127.0.0.1:{PROXY_HEALTHZ}",
        "metricsBindAddress": f"127.0.0.1:{PROXY_METRICS}",
        "nodePortAddresses": [f"{NODE_IP}/32"],
        "oomScoreAdj": 0,
        # Leave the conntrack sysctls alone (0 = do not set).
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "iptables": {"masqueradeAll": False, "localhostNodePorts": False, "syncPeriod": "30s"},
    }


def corefile(kubeconfig: Path) -> str:
    # The cluster's zones from the API server; every other name gets NXDOMAIN: there is no
    # `forward`, so no upstream.
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {NODE_IP}
    errors
    ready 127.0.0.1:{DNS_READY}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} sleuth
        pods insecure
        ttl 5
    }}
    cache 5
}}
.:53 {{
    bind {NODE_IP}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def dns_objects() -> dict[str, Any]:
    """CoreDNS's RBAC, and the kube-dns Service whose one endpoint is CoreDNS on the bridge."""
    ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
    ]
    labels = {"app.kubernetes.io/managed-by": NODE_NAME}
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "sleuth-node:coredns", "labels": labels},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["endpoints", "services", "pods", "namespaces"],
                        "verbs": ["list", "watch"],
                    },
                    {
                        "apiGroups": ["discovery.k8s.io"],
                        "resources": ["endpointslices"],
                        "verbs": ["list", "watch"],
                    },
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "sleuth-node:coredns", "labels": labels},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "sleuth-node:coredns",
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": "sleuth-node:coredns",
                    }
                ],
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kube-dns",
                    "namespace": "kube-system",
                    "labels": {**labels, "k8s-app": "kube-dns"},
                },
                "spec": {
                    "clusterIP": DNS_SERVICE_IP,
                    "ports": [{**p, "targetPort": 53} for p in ports],
                },
            },
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "kube-dns-sleuth-node",
                    "namespace": "kube-system",
                    "labels": {
                        **labels,
                        "kubernetes.io/service-name": "kube-dns",
                        "endpointslice.kubernetes.io/managed-by": "sleuth-node",
                    },
                },
                "addressType": "IPv4",
                "endpoints": [
                    {"addresses": [NODE_IP], "conditions": {"ready": True}, "nodeName": NODE_NAME}
                ],
                "ports": ports,
            },
        ],
    }
