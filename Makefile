# The README's commands are targets here. Everything the project needs is
# installed by these targets; nothing is installed by hand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLUSTER_DIR ?= .cluster/default
PYTEST_ARGS ?=
#: how the suite is run; `make coverage` (and CI) run it under coverage.py
PYTEST ?= $(BIN)/pytest
# Python caches bytecode in the checkout's __pycache__ (git ignores it). A shell that sets PYTHONDONTWRITEBYTECODE
# (some build machines do) would have every plugin process of the suite, the demo and the benchmarks compile our
# modules from source again: ~0.8 s more per in-process command, and a suite of thousands of them.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup system-packages binaries demo tui test coverage unit integration lint cluster-up cluster-down cluster-status clean compare-argo bench-drain bench-campaign bench-rollout bench-canary bench-start bench-agent bench-tui bench-tui-campaign bench-unreachable dist screenshots

## setup: Debian packages, the .venv with the plugin and its dev tools, the control-plane binaries
setup: system-packages $(VENV)/.installed binaries

system-packages:
	hack/install-system-packages.sh

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

## binaries: build etcd, Kubernetes, kwok and krew from Go modules (cached outside git)
binaries:
	hack/build-binaries.sh

## demo: set everything up, start the local cluster and run the plugin against it
demo: setup cluster-up
	PATH="$(CURDIR)/$(BIN):$$PATH" hack/demo.sh $(abspath $(CLUSTER_DIR))/kubeconfig

## tui: open the TUI on the local agent's jobs and the local cluster (after make demo)
tui: $(VENV)/.installed
	PATH="$(CURDIR)/$(BIN):$$PATH" KUBECONFIG=$(abspath $(CLUSTER_DIR))/kubeconfig $(CURDIR)/.bin/kubectl rollout-plus tui

## test: every test, unit and integration (the latter against real local control planes), on several
## workers, beside the few that need a cluster to themselves on theirs (hack/run-suite.sh)
test: setup
	PYTHON=$(PYTHON) hack/run-suite.sh $(PYTEST) -- $(PYTEST_ARGS)

## coverage: the whole suite under coverage.py (CLI subprocesses and the agent included), then the total
coverage: setup
	rm -rf .coverage-data && mkdir -p .coverage-data
	$(MAKE) test PYTEST="$(CURDIR)/$(BIN)/coverage run -m pytest"; status=$$?; \
	$(BIN)/coverage combine -q; $(BIN)/coverage report | grep "^TOTAL"; exit $$status

unit: $(VENV)/.installed
	$(BIN)/pytest -m "not integration" $(PYTEST_ARGS)

integration: setup
	$(BIN)/pytest -m integration $(PYTEST_ARGS)

## lint: ruff, mypy, and the import contracts of pyproject.toml (lint-imports)
lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

cluster-up: binaries
	$(PYTHON) hack/cluster.py up --dir $(CLUSTER_DIR)

cluster-down:
	$(PYTHON) hack/cluster.py down --dir $(CLUSTER_DIR)

cluster-status:
	$(PYTHON) hack/cluster.py status --dir $(CLUSTER_DIR)

clean: cluster-down
	for dir in .cluster/*/; do $(PYTHON) hack/cluster.py down --dir $$dir; done
	rm -rf $(VENV) .bin .cluster build dist *.egg-info

## bench-drain: kubectl drain vs kubectl rollout-plus drain on one cluster (prints figures)
bench-drain: setup
	$(BIN)/python hack/bench_drain.py

## dist: the Krew archives (dist/) and krew-manifest.yaml rendered from them; commit the manifest
dist: $(VENV)/.installed
	$(BIN)/python hack/dist/build_archives.py
	$(BIN)/python hack/dist/render_krew_manifest.py

## bench-campaign: a 30-node pool in waves vs drain and kubectl drain node by node, its lower bound; 300 nodes' RSS (prints figures)
bench-campaign: setup
	$(BIN)/python hack/bench_campaign.py

## bench-agent: the agent's memory, journal size, event latency and attached vs in-process drains (prints figures)
bench-agent: setup
	$(BIN)/python hack/bench_agent.py

## bench-tui: the TUI's event-to-screen latency, CPU and bytes to an 80x24 pty during a 1000- then a 5000-pod drain, first paints (prints figures)
bench-tui: setup
	$(BIN)/python hack/bench_tui.py

## bench-tui-campaign: the campaign screen's event-to-screen latency, CPU and bytes to an 80x24 pty while a synthetic 300-node / 6000-pod campaign streams (prints figures)
bench-tui-campaign: $(VENV)/.installed
	$(BIN)/python hack/bench_tui_campaign.py

## bench-rollout: the Deployment controller vs rollout-plus on the same rollout (prints figures)
bench-rollout: setup
	$(BIN)/python hack/bench_rollout.py

## bench-canary: a 10-step canary of 100 replicas: our overhead beyond pauses and readiness waits, requests per step; the controller's rolling update beside it (prints figures)
bench-canary: setup
	$(BIN)/python hack/bench_canary.py
## compare-argo: Argo Rollouts' controller (built from its Go module, cached) beside our canary, step by step
## (by hand only: the build takes many CPU-minutes; KUBECONFIG_ARG=--kubeconfig=PATH uses a running cluster)
compare-argo: setup
	$(BIN)/python hack/compare_argo.py $(KUBECONFIG_ARG)

## bench-start: start time of the plugin (venv and Krew executable) beside kubectl version --client (prints figures)
bench-start: setup
	$(BIN)/python hack/bench_start.py

## bench-unreachable: every command against a refusing and a silent API server, beside kubectl (prints figures)
bench-unreachable: setup
	$(BIN)/python hack/bench_unreachable.py

## screenshots: render the README's TUI pictures (docs/*.png) from the SVG snapshots
screenshots: $(VENV)/.installed
	$(BIN)/pip install --quiet resvg-py
	$(BIN)/python hack/render_screenshots.py
