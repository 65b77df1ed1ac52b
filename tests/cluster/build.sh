#!/usr/bin/env bash
# Build the test control plane's binaries from the Go module proxy into a cache folder outside
# the repository, keyed by version. A second run with the same versions does nothing.
#
#   tests/cluster/build.sh            # build what is missing, print the bin folder
#   tests/cluster/build.sh jaeger     # only the trace backend (tests/support/jaeger.py)
#   tests/cluster/build.sh kube-network-policies   # only the real node's NetworkPolicy enforcer
#   tests/cluster/build.sh registry   # only the local OCI registry of the push test (on demand)
#   tests/cluster/build.sh keda       # KEDA's operator and metrics apiserver (not built by default)
#   tests/cluster/build.sh keda-crds  # only KEDA's CRDs, from its module
#
# Output folder: ${SLEUTH_CACHE:-~/.cache/sleuth}/bin/<component>-<version>/
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
cache="${SLEUTH_CACHE:-$HOME/.cache/sleuth}"
# One build at a time per cache: two runs at once (two checkouts, a test fixture and `make bins`)
# would remove each other's half-built folders. The second waits for the first, then finds its
# binaries built.
mkdir -p "$cache"
exec 9>"$cache/.build.lock"
flock 9
# The control plane, kubectl, and the real worker node's kubelet and kube-proxy.
KUBE_PROGRAMS="kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy"
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
export CGO_ENABLED=0

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

staging_modules() {
  # The staging modules are the ones k8s.io/kubernetes replaces with ./staging/src/...
  local mod
  mod="$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$mod"
}

build_kubernetes() {
  local out="$cache/bin/kubernetes-$KUBERNETES_VERSION"
  local c ok=1
  for c in $KUBE_PROGRAMS; do [[ -x "$out/$c" ]] || ok=0; done
  if (( ok )); then
    echo "$out"; return
  fi
  log "building Kubernetes $KUBERNETES_VERSION ($KUBE_PROGRAMS)"
  local work="$cache/src/kubernetes-$KUBERNETES_VERSION"
  rm -rf "$work"; mkdir -p "$work" "$out.tmp"
  (
    cd "$work"
    {
      echo "module sleuth.local/k8sbuild"
      echo "go 1.24.0"
      echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
      for m in $(staging_modules); do echo "replace $m => $m $KUBERNETES_STAGING_VERSION"; done
      for c in $KUBE_PROGRAMS; do
        echo "tool k8s.io/kubernetes/cmd/$c"
      done
    } > go.mod
    go mod tidy >&2
    local minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
    local ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
      ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
    done
    local pkgs=()
    for c in $KUBE_PROGRAMS; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
    go build -trimpath -ldflags "$ld" -o "$out.tmp/" "${pkgs[@]}" >&2
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "$out"
}

build_etcd() {
  local out="$cache/bin/etcd-$ETCD_VERSION"
  if [[ -x "$out/etcd" ]]; then echo "$out"; return; fi
  log "building etcd $ETCD_VERSION"
  local work="$cache/src/etcd-$ETCD_VERSION"
  rm -rf "$work"; mkdir -p "$work" "$out.tmp"
  (
    cd "$work"
    printf 'module sleuth.local/etcdbuild\ngo 1.24.0\nrequire go.etcd.io/etcd/server/v3 %s\ntool go.etcd.io/etcd/server/v3\n' "$ETCD_VERSION" > go.mod
    go mod tidy >&2
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "$out"
}

build_jaeger() {
  # Jaeger v2 (cmd/jaeger, an OpenTelemetry Collector distribution). Its go.mod has a replace
  # directive, which `go install pkg@version` refuses: build it as a tool of a throwaway module
  # that repeats the module's single-line replace directives.
  local out="$cache/bin/jaeger-$JAEGER_VERSION"
  if [[ -x "$out/jaeger" ]]; then echo "$out"; return; fi
  log "building jaeger $JAEGER_VERSION"
  local work="$cache/src/jaeger-$JAEGER_VERSION"
  rm -rf "$work"; mkdir -p "$work" "$out.tmp"
  (
    cd "$work"
    local mod
    mod="$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
    {
      echo "module sleuth.local/jaegerbuild"
      sed -n 's/^go \([0-9.]*\)$/go \1/p' "$mod"
      echo "require github.com/jaegertracing/jaeger $JAEGER_VERSION"
      grep '^replace .* => ' "$mod" || true
      echo "tool github.com/jaegertracing/jaeger/cmd/jaeger"
    } > go.mod
    go mod tidy >&2
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger >&2
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "$out"
}

go_install() {  # name version ldflags package...
  local name="$1" version="$2" ldflags="$3"; shift 3
  local out="$cache/bin/$name-$version"
  local want; want="$(basename "$1")"
  if [[ -x "$out/$want" ]]; then echo "$out"; return; fi
  log "building $name $version"
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  for pkg in "$@"; do GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w $ldflags" "$pkg@$version" >&2; done
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "$out"
}

build_kube_network_policies() {
  # SIG Network's NetworkPolicy implementation. Its main package is .../cmd, which `go install`
  # would name `cmd`: install into a scratch folder and rename.
  local out="$cache/bin/kube-network-policies-$KUBE_NETWORK_POLICIES_VERSION"
  if [[ -x "$out/kube-network-policies" ]]; then echo "$out"; return; fi
  log "building kube-network-policies $KUBE_NETWORK_POLICIES_VERSION"
  rm -rf "$out.tmp"; mkdir -p "$out.tmp/gobin"
  GOBIN="$out.tmp/gobin" go install -trimpath -ldflags "-s -w" \
    "sigs.k8s.io/kube-network-policies/cmd@$KUBE_NETWORK_POLICIES_VERSION" >&2
  mv "$out.tmp/gobin/cmd" "$out.tmp/kube-network-policies"
  rmdir "$out.tmp/gobin"
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "$out"
}

build_registry() {
  # The CNCF registry (cmd/registry) and a bcrypt htpasswd writer for its basic-auth test, built
  # in one module so that golang.org/x/crypto is the version the registry itself verifies with.
  local out="$cache/bin/registry-$DISTRIBUTION_VERSION"
  if [[ -x "$out/registry" && -x "$out/htpasswd" ]]; then echo "$out"; return; fi
  log "building registry $DISTRIBUTION_VERSION"
  local work="$cache/src/registry-$DISTRIBUTION_VERSION"
  rm -rf "$work" "$out.tmp"; mkdir -p "$work/htpasswd" "$out.tmp"
  (
    cd "$work"
    {
      echo "module sleuth.local/registrybuild"
      echo "go 1.24.0"
      echo "require github.com/distribution/distribution/v3 $DISTRIBUTION_VERSION"
      echo "tool github.com/distribution/distribution/v3/cmd/registry"
    } > go.mod
    cat > htpasswd/main.go <<'GO'
// htpasswd USER: one "USER:<bcrypt of the password read from stdin>" line.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	password, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	hash, err := bcrypt.GenerateFromPassword([]byte(strings.TrimRight(password, "\n")), bcrypt.DefaultCost)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s:%s\n", os.Args[1], hash)
}
GO
    go mod tidy >&2
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/registry" \
      github.com/distribution/distribution/v3/cmd/registry >&2
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/htpasswd" ./htpasswd >&2
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "$out"
}

keda_module_dir() {  # where the Go module cache holds KEDA's source (its CRDs, its go.mod)
  go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p'
}

keda_crds() {
  # KEDA's CRDs (ScaledObject, ...) as its module ships them: what the operator's ScaledObjects
  # are checked against in the test cluster, and what KEDA's operator watches when it runs there.
  local out="$cache/crds/keda-$KEDA_VERSION"
  if [[ -f "$out/keda.sh_scaledobjects.yaml" && -f "$out/eventing.keda.sh_cloudeventsources.yaml" ]]; then
    echo "$out"; return
  fi
  log "fetching KEDA $KEDA_VERSION CRDs from its module"
  local dir; dir="$(keda_module_dir)"
  rm -rf "$out"; mkdir -p "$out"
  cp "$dir"/config/crd/bases/*.yaml "$out/"
  chmod -R u+w "$out"
  echo "$out"
}

build_keda() {
  # KEDA's operator and metrics apiserver (cmd/operator, cmd/adapter), built like jaeger: as tools
  # of a throwaway module that repeats the module's single-line replace directives.
  local out="$cache/bin/keda-$KEDA_VERSION"
  if [[ -x "$out/keda-operator" && -x "$out/keda-adapter" ]]; then echo "$out"; return; fi
  log "building KEDA $KEDA_VERSION (operator, metrics apiserver)"
  local work="$cache/src/keda-$KEDA_VERSION"
  rm -rf "$work"; mkdir -p "$work" "$out.tmp"
  (
    cd "$work"
    local mod; mod="$(go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
    {
      echo "module sleuth.local/kedabuild"
      sed -n 's/^go \([0-9.]*\)$/go \1/p' "$mod"
      echo "require github.com/kedacore/keda/v2 $KEDA_VERSION"
      grep '^replace .* => ' "$mod" || true
      echo "tool github.com/kedacore/keda/v2/cmd/operator"
      echo "tool github.com/kedacore/keda/v2/cmd/adapter"
    } > go.mod
    go mod tidy >&2
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/keda-operator" github.com/kedacore/keda/v2/cmd/operator >&2
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/keda-adapter" github.com/kedacore/keda/v2/cmd/adapter >&2
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
  echo "$out"
}

prometheus_operator_crds() {
  local out="$cache/crds/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
  if [[ -f "$out/monitoring.coreos.com_prometheusrules.yaml" ]]; then echo "$out"; return; fi
  log "fetching prometheus-operator $PROMETHEUS_OPERATOR_VERSION CRDs from its module"
  local dir
  dir="$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
  rm -rf "$out"; mkdir -p "$out"
  cp "$dir"/example/prometheus-operator-crd/*.yaml "$out/"
  chmod -R u+w "$out"
  echo "$out"
}

main() {
  local t0=$SECONDS
  if [[ "${1:-}" == jaeger ]]; then build_jaeger; return; fi
  if [[ "${1:-}" == kube-network-policies ]]; then build_kube_network_policies; return; fi
  if [[ "${1:-}" == registry ]]; then build_registry; return; fi
  if [[ "${1:-}" == keda ]]; then build_keda; return; fi
  if [[ "${1:-}" == keda-crds ]]; then keda_crds; return; fi
  local dirs=()
  dirs+=("$(build_etcd)")
  dirs+=("$(go_install kwok "$KWOK_VERSION" "" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)")
  dirs+=("$(go_install helm "$HELM_VERSION" \
    "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
    helm.sh/helm/v3/cmd/helm)")
  dirs+=("$(build_kubernetes)")
  # The real worker node's cluster DNS and CRI client.
  dirs+=("$(go_install coredns "$COREDNS_VERSION" "" github.com/coredns/coredns)")
  dirs+=("$(go_install crictl "$CRICTL_VERSION" "" sigs.k8s.io/cri-tools/cmd/crictl)")
  # The trace backend of the tracing tests (tests/support/jaeger.py).
  dirs+=("$(build_jaeger)")
  # The real node's NetworkPolicy enforcer (tests/cluster/netpol.py).
  dirs+=("$(build_kube_network_policies)")
  prometheus_operator_crds >/dev/null
  keda_crds >/dev/null
  mkdir -p "$cache/bin/current"
  for d in "${dirs[@]}"; do
    for f in "$d"/*; do ln -sfn "$f" "$cache/bin/current/$(basename "$f")"; done
  done
  log "binaries ready in $cache/bin/current ($((SECONDS - t0)) s)"
  echo "$cache/bin/current"
}
main "$@"
