# Gantry — one operator for Ray, Trainer (JobSet) and Slurm workloads.
#
# The two commands a newcomer needs:
#   make run    Gantry on an embedded local control plane (kwok, 3 simulated nodes)
#   make test   unit + integration tests against a real kube-apiserver + etcd

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/bin
TOOLS_MOD := $(CURDIR)/test/tools
KWOK_MOD  := $(CURDIR)/test/tools/kwok
HELM_VERSION := v3.22.0

CONTROLLER_GEN := $(GO) tool controller-gen
# gotestsum prints one line per package and a closing "DONE N tests" summary,
# and lists every skipped test with the reason it printed.
GOTESTSUM := $(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg
KUBE_APISERVER := $(BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(BIN)/kube-controller-manager
KUBE_SCHEDULER := $(BIN)/kube-scheduler
KUBECTL := $(BIN)/kubectl
ETCD    := $(BIN)/etcd
KWOK    := $(BIN)/kwok
KWOKCTL := $(BIN)/kwokctl
GOVULNCHECK := $(BIN)/govulncheck
VULN_MOD := $(CURDIR)/test/tools/vuln
HELM    := $(BIN)/helm
# The real JobSet controller for the local control plane (hack/jobset-local.sh).
JOBSET     := $(BIN)/jobset-controller
JOBSET_MOD := $(CURDIR)/test/tools/jobset
# Real Kueue for the e2e tier's kueue specs (hack/kueue-local.sh).
KUEUE     := $(BIN)/kueue
KUEUE_MOD := $(CURDIR)/test/tools/kueue
# The upstream operators `make bench-compare` runs beside Gantry, built from
# the versions their tools modules pin.
KUBERAY     := $(BIN)/kuberay-operator
KUBERAY_MOD := $(CURDIR)/test/tools/kuberay
TRAINER     := $(BIN)/trainer-controller-manager
TRAINER_MOD := $(CURDIR)/test/tools/trainer
SLINKY      := $(BIN)/slurm-operator
SLINKY_MOD  := $(CURDIR)/test/tools/slinky
# The real node beside kwok's (hack/realnode.sh): kubelet and kube-proxy from
# the Kubernetes tools module, CNI plugins and CoreDNS from their own.
KUBELET     := $(BIN)/kubelet
KUBE_PROXY  := $(BIN)/kube-proxy
# Prometheus' PromQL parser, for the e2e check of the chart's dashboards
# and alerts (test/e2e/chartmetrics_test.go).
PROMQL_MOD := $(CURDIR)/test/tools/promql
PROMQL_METRICS := $(BIN)/promql-metrics
REALNODE_MOD := $(CURDIR)/test/tools/realnode
CNI_PLUGINS := $(addprefix $(BIN)/cni/,bridge host-local loopback portmap)
cni_dir = $(if $(filter host-local,$1),ipam,$(if $(filter portmap,$1),meta,main))
COREDNS     := $(BIN)/coredns
REALNODE_TOOLS := $(KUBELET) $(KUBE_PROXY) $(CNI_PLUGINS) $(COREDNS)

# Go test flags; override e.g. `make test GOTEST_FLAGS=-v`.
GOTEST_FLAGS ?=
# -race is on for every package: the framework's concurrency contracts
# (expectations, slow start) are only proven under the race detector.
GOTEST_RACE ?= -race
# Which benchmarks `make bench` runs (a -bench regexp).
BENCH ?= .
CHAOS ?= .
# Which e2e specs `make test-e2e` runs: a Ginkgo label filter over the labels
# ray, trainjob, slurm, kueue and manager, e.g. E2E_LABELS=slurm or 'ray || trainjob'.
# Empty runs them all.
E2E_LABELS ?=

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Run and test
.PHONY: run
RUN_TOOLS := $(KUBE_APISERVER) $(ETCD) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KUBECTL) $(KWOK) $(KWOKCTL) $(HELM) $(JOBSET)
run: manager kwokray ## Start a local control plane (kwok, 3 nodes, and a real node where this machine can run one), helm-install the chart and run the manager as the chart's ServiceAccount.
	@missing=(); for t in $(RUN_TOOLS); do [ -x "$$t" ] || missing+=("$$t"); done; \
	n=$${#missing[@]}; i=0; \
	for t in "$${missing[@]}"; do i=$$((i + 1)); \
		echo "make run: building $${t##*/}, $$i of $$n missing tools (first run only; kube-apiserver takes longest)"; \
		$(MAKE) --no-print-directory "$$t"; \
	done
	@if [ "$${GANTRY_REAL_NODE:-auto}" != false ] && BIN=$(BIN) hack/realnode.sh machine >/dev/null; then \
		$(MAKE) --no-print-directory realnode-tools test-images image || [ "$${GANTRY_REAL_NODE:-auto}" = auto ]; fi
	@BIN=$(BIN) hack/local-cluster.sh up

.PHONY: run-down
run-down: ## Stop everything `make run` started.
	@BIN=$(BIN) hack/local-cluster.sh down

.PHONY: test
test: test-assets ## Unit and integration tests (real kube-apiserver + etcd), and the Trainer, KubeRay and Slinky oracles.
	KUBEBUILDER_ASSETS="$${KUBEBUILDER_ASSETS:-$(BIN)}" $(GOTESTSUM) -- $(GOTEST_RACE) $(GOTEST_FLAGS) ./...
	@$(MAKE) --no-print-directory test-oracle

# The oracles: every shipped runtime and Trainer v2.3.0's runtimes and
# examples, rendered by Trainer's own framework and by Gantry's, must agree
# but for the differences docs/trainjob.md lists; Gantry's Ray dashboard
# client must send what KubeRay's sends and read the same answers; the
# objects Gantry builds for Slinky's CRs must be those Slinky's own builders
# build (slurm-operator v1.1.0, the newest the module proxy serves) but for
# the differences listed with their sources. Each is a module of its own
# (test/oracle/trainer, test/oracle/kuberay, test/oracle/slinky and its
# slinkyrender program), so the upstream dependencies stay out of Gantry's.
.PHONY: test-oracle
test-oracle: ## Gantry against Kubeflow Trainer v2.3.0's, KubeRay's and Slinky's own code (differential tests).
	cd test/oracle/trainer && $(GO) test -count=1 $(GOTEST_FLAGS) ./...
	cd test/oracle/kuberay && $(GO) test -count=1 $(GOTEST_FLAGS) ./...
	cd test/oracle/slinky && $(GO) test -count=1 $(GOTEST_FLAGS) ./...

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME each (default 1m); make test runs only their seed corpora.
	FUZZTIME="$(FUZZTIME)" hack/fuzz.sh

# The fault tier: the manager binary killed, failed over and fed API
# errors while workloads converge; one table per scenario. CHAOS picks
# scenarios (a go test -run pattern); GANTRY_CHAOS_SEED repeats a run.
# govulncheck needs https://vuln.go.dev, which CI machines cannot reach;
# CI runs `go mod verify` (in make verify) instead. Run this before a release.
.PHONY: vulncheck
vulncheck: $(GOVULNCHECK) ## Known vulnerabilities in the code Gantry calls (govulncheck; needs https://vuln.go.dev).
	@if ! curl -fsS --max-time 10 -o /dev/null https://vuln.go.dev/index/db.json; then \
		echo "vulncheck: https://vuln.go.dev cannot be reached from this machine, so govulncheck cannot run here."; \
		echo "vulncheck: run 'make vulncheck' where it can be reached (before every release); CI runs 'go mod verify' instead."; \
		exit 2; fi
	$(GOVULNCHECK) ./...

.PHONY: test-chaos
test-chaos: test-assets manager ## Fault tier: manager kills, leader failover, API errors (see docs/reliability.md).
	KUBEBUILDER_ASSETS="$${KUBEBUILDER_ASSETS:-$(BIN)}" $(GO) test -tags chaos ./test/chaos/ -run '$(CHAOS)' -count=1 -timeout 30m -v $(GOTEST_FLAGS)

.PHONY: bench
bench: test-assets manager ## Benchmarks against a real API server (GANTRY_BENCH_N objects, default 100).
	KUBEBUILDER_ASSETS="$${KUBEBUILDER_ASSETS:-$(BIN)}" $(GO) test ./test/bench/ -run '^$$' -bench '$(BENCH)' -benchtime=1x -timeout 60m -v $(GOTEST_FLAGS)

# BENCH_COMPARE selects pairings (ray, rayjob, trainjob, nodeset; default all;
# rayjob needs root: it routes the simulated Pod CIDRs to loopback),
# BENCH_COMPARE_ROUNDS the rounds (default 3), GANTRY_BENCH_N the objects,
# BENCH_COMPARE_ONLY=gantry|upstream one side only, BENCH_COMPARE_PHASES=k
# the first k phases only.
.PHONY: bench-compare
bench-compare: $(RUN_TOOLS) $(KUBERAY) $(TRAINER) $(SLINKY) manager ## Gantry and the upstream operators side by side on fresh local control planes; prints a table (docs/benchmarks.md).
	$(GO) test -tags benchcompare ./test/benchcompare/ -run TestCompare -count=1 -timeout 300m -v $(GOTEST_FLAGS)

# The e2e suite runs with the ginkgo CLI in parallel processes; GOTEST_FLAGS
# are ginkgo flags here (e.g. -v, --focus 'RayCluster'). The JUnit report
# goes to _artifacts/, and the suite prints its time per label at the end.
# The local control plane is stopped on every exit path (trap), and the
# exit status stays the tests'.
.PHONY: test-e2e
test-e2e: E2E_GINKGO = $(BIN)/ginkgo -tags e2e --procs=4 --timeout 25m \
	--output-dir=$(CURDIR)/_artifacts --junit-report=junit-e2e$(if $(filter incluster,$(GANTRY_MANAGER)),-incluster).xml \
	$(if $(strip $(E2E_LABELS)),--label-filter='$(E2E_LABELS)') $(GOTEST_FLAGS) ./test/e2e
test-e2e: $(BIN)/ginkgo $(KUEUE) $(HELM) $(PROMQL_METRICS) ## End-to-end tests on `make run`'s control plane (started and stopped); USE_EXISTING_CLUSTER=true uses $KUBECONFIG; E2E_LABELS=slurm runs one label; GANTRY_MANAGER=incluster runs the manager as the chart's Deployment on the real node.
	@mkdir -p $(CURDIR)/_artifacts
	@if [ "$${USE_EXISTING_CLUSTER:-false}" = "true" ]; then \
		: "$${KUBECONFIG:?USE_EXISTING_CLUSTER=true needs KUBECONFIG}"; \
		$(E2E_GINKGO); \
	else \
		hack/e2e-local.sh $(E2E_GINKGO); \
	fi

# For machines with Docker: a kind cluster, the image from `make image`
# loaded into it, the chart (with JobSet) installed with helm, and the e2e
# suite against the in-cluster manager. It cannot run on Docker-less CI.
.PHONY: kind-e2e
kind-e2e: ## End-to-end tests against Gantry installed in a kind cluster (needs Docker; KIND_KEEP=true keeps the cluster).
	@hack/kind-e2e.sh

.PHONY: test-assets
test-assets: ## Build kube-apiserver and etcd for envtest unless KUBEBUILDER_ASSETS is set.
	@if [ -z "$$KUBEBUILDER_ASSETS" ]; then $(MAKE) --no-print-directory $(KUBE_APISERVER) $(ETCD); fi

##@ Build
# The stand-in for Ray on the heads of kwok's simulated nodes (make run).
.PHONY: kwokray
kwokray:
	$(GO) build -o $(BIN)/kwokray ./hack/kwokray

.PHONY: manager
manager: ## Build the manager binary into bin/.
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '-X github.com/gantry-dev/gantry/pkg/version.Version=$(VERSION)' -o $(BIN)/manager ./cmd/manager

# The manager is built static and with -trimpath, as in the image, so both
# share the Go build cache.
# Container image. `make image` builds, without Docker and from Go modules
# only (hack/imagebuild), the image the Dockerfile describes, as a tarball for
# `docker load` and `kind load image-archive`. Several IMAGE_PLATFORMS
# (comma separated) give one tarball per platform.
VERSION ?= $(shell awk '/^appVersion:/ {gsub(/"/, "", $$2); print $$2}' charts/gantry/Chart.yaml)
IMAGE_REPO ?= ghcr.io/gantry-dev/gantry
IMAGE ?= $(IMAGE_REPO):$(VERSION)
IMAGE_PLATFORMS ?= linux/amd64
IMAGE_DIR := $(BIN)/image
IMAGE_LDFLAGS := -s -w -buildid= -X github.com/gantry-dev/gantry/pkg/version.Version=$(VERSION)

.PHONY: image
image: ## Build the container image tarball into bin/image/ without Docker (IMAGE, IMAGE_PLATFORMS) and print its digest.
	@mkdir -p $(IMAGE_DIR); set --; \
	for p in $$(echo '$(IMAGE_PLATFORMS)' | tr ',' ' '); do \
		IFS=/ read -r os arch variant <<< "$$p"; goarm=; goamd64=; \
		case $$arch in arm) goarm=$${variant#v};; amd64) goamd64=$$variant;; esac; \
		out=$(IMAGE_DIR)/manager-$$os-$$arch$${variant:+-$$variant}; \
		echo "building $$out (version $(VERSION))"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOARM=$$goarm GOAMD64=$$goamd64 \
			$(GO) build -trimpath -buildvcs=false -ldflags '$(IMAGE_LDFLAGS)' -o $$out ./cmd/manager; \
		set -- "$$@" --binary "$$p=$$out"; \
	done; \
	$(GO) run ./hack/imagebuild --tag '$(IMAGE)' --version '$(VERSION)' --output $(IMAGE_DIR)/gantry-$(VERSION).tar "$$@"

.PHONY: image-verify
image-verify: ## Build the image twice from scratch (binary too) and fail unless the digests are equal.
	@rm -rf $(IMAGE_DIR); first=$$($(MAKE) --no-print-directory image | grep '^digest:'); \
	rm -rf $(IMAGE_DIR); second=$$($(MAKE) --no-print-directory image | grep '^digest:'); \
	echo "first build:  $$first"; echo "second build: $$second"; \
	if [ -z "$$first" ] || [ "$$first" != "$$second" ]; then echo "image-verify: the two builds differ" >&2; exit 1; fi; \
	echo "image-verify: reproducible"; \
	hack/check-image.sh $(IMAGE_DIR)/gantry-$(VERSION).tar '$(IMAGE)' "$$(awk '{print $$2}' <<< "$$first")"

# One version names the chart, the image and the binary (docs/versioning.md):
# a VERSION other than Chart.yaml's version and appVersion fails before
# anything is built. Nothing is pushed; the push commands are printed.
.PHONY: release
release: $(HELM) ## Cut release VERSION (default: the chart's): check Chart.yaml and CHANGELOG.md agree, build the stamped binary and image, package the chart into bin/release/ with SHA256SUMS.
	@VERSION='$(VERSION)' IMAGE='$(IMAGE)' IMAGE_PLATFORMS='$(IMAGE_PLATFORMS)' HELM='$(HELM)' GO='$(GO)' MAKE='$(MAKE)' hack/release.sh

.PHONY: generate
generate: ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: manifests
manifests: ## Generate CRDs, RBAC and webhook configuration into config/ and the chart.
	rm -f config/crd/bases/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=gantry-manager-role webhook paths="./cmd/..." paths="./pkg/..." \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	# The same markers per workload family, so the chart grants only the
	# enabled controllers' rules (hack/sync-chart.sh checks every marker is
	# in one of these sets).
	$(CONTROLLER_GEN) rbac:roleName=gantry-common paths="./cmd/..." output:rbac:artifacts:config=config/rbac/common
	$(CONTROLLER_GEN) rbac:roleName=gantry-raycluster paths="./pkg/controller/ray/..." output:rbac:artifacts:config=config/rbac/raycluster
	$(CONTROLLER_GEN) rbac:roleName=gantry-trainjob paths="./pkg/controller/trainjob/..." output:rbac:artifacts:config=config/rbac/trainjob
	$(CONTROLLER_GEN) rbac:roleName=gantry-slurm paths="./pkg/controller/slurm/..." output:rbac:artifacts:config=config/rbac/slurm
	# The CRDs keep their descriptions, for `kubectl explain`. The ray and
	# trainer ones only down to 5 levels (e.g. spec.template.spec.
	# replicatedJobs[].name): in full, as KubeRay and Trainer ship them (1.4
	# and 2.4 MB, mostly the embedded Pod and JobSet templates), the chart's
	# Helm release would pass the API server's 1 MiB Secret limit.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true,allowDangerousTypes=true paths="./api/slinky/..." paths="./api/trainer/..." paths="./api/ray/..." \
		output:crd:artifacts:config=config/crd/bases
	$(GO) run ./hack/crddesc -depth 5 config/crd/bases/trainer.kubeflow.org_*.yaml
	# ray.io/v1alpha1 is served (deprecated, not stored) as in KubeRay's CRDs,
	# so a KubeRay CRD whose storedVersions list it can be replaced.
	$(GO) run ./hack/crddesc -depth 5 -serve-deprecated v1alpha1 config/crd/bases/ray.io_*.yaml
	hack/sync-chart.sh

.PHONY: verify
verify: generate manifests $(HELM) ## Check generated files are committed, gofmt, go vet, helm lint/template.
	@if [ -n "$$(git status --porcelain -- api config charts)" ]; then \
		echo "Generated files are stale or uncommitted; run 'make generate manifests' and commit:"; \
		git status --porcelain -- api config charts; git --no-pager diff --stat -- api config charts; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags 'e2e chaos benchcompare' ./test/...
	cd test/oracle/trainer && $(GO) vet ./... && $(GO) mod verify
	cd test/oracle/kuberay && $(GO) vet ./... && $(GO) mod verify
	cd test/oracle/slinky && $(GO) vet ./... && $(GO) mod verify
	cd test/oracle/slinky/slinkyrender && $(GO) vet ./... && $(GO) mod verify
	cd $(REALNODE_MOD) && $(GO) vet ./... && $(GO) mod verify
	cd $(PROMQL_MOD) && $(GO) vet ./... && $(GO) mod verify
	$(GO) mod verify
	$(HELM) lint charts/gantry
	hack/check-chart.sh $(HELM)

##@ Tools (built from pinned Go modules into bin/, each only when missing)
# Stamp the Kubernetes version the way release builds do: without it the
# API server reports v0.0.0-master and `helm install` refuses the chart's
# kubeVersion constraint.
KUBE_VERSION_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,-X $(p).gitVersion=v1.36.3 -X $(p).gitMajor=1 -X $(p).gitMinor=36)
$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KUBECTL) $(KUBELET) $(KUBE_PROXY):
	@echo "building $(@F) (first time only; a few minutes)"
	cd $(TOOLS_MOD) && $(GO) build -ldflags '$(KUBE_VERSION_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(@F)

$(CNI_PLUGINS):
	@echo "building the CNI plugin $(@F) (first time only)"
	cd $(REALNODE_MOD) && CGO_ENABLED=0 $(GO) build -o $@ github.com/containernetworking/plugins/plugins/$(call cni_dir,$(@F))/$(@F)

$(COREDNS): $(REALNODE_MOD)/coredns/main.go
	@echo "building CoreDNS (first time only)"
	cd $(REALNODE_MOD) && CGO_ENABLED=0 $(GO) build -o $@ ./coredns

.PHONY: realnode-tools
realnode-tools: $(REALNODE_TOOLS) ## Build what the real node runs (kubelet, kube-proxy, CNI plugins, CoreDNS).

.PHONY: test-images
test-images: ## Build the test images the real node imports (pause, the Debian test base with torch, Open MPI and the Ray stand-in, the Slurm daemons) into bin/images/
	@BIN=$(BIN) hack/test-images.sh

$(ETCD):
	@echo "building etcd (first time only)"
	cd $(TOOLS_MOD) && $(GO) build -o $@ go.etcd.io/etcd/server/v3

$(GOVULNCHECK):
	cd $(VULN_MOD) && $(GO) build -o $@ golang.org/x/vuln/cmd/govulncheck

$(KWOK) $(KWOKCTL):
	@echo "building $(@F) (first time only)"
	cd $(KWOK_MOD) && $(GO) build -o $@ sigs.k8s.io/kwok/cmd/$(@F)

# The real JobSet controller (its main package is the module root), run
# out of cluster beside the local control plane by hack/jobset-local.sh.
$(JOBSET):
	@echo "building jobset-controller (first time only)"
	cd $(JOBSET_MOD) && $(GO) build -ldflags "-X sigs.k8s.io/jobset/pkg/version.GitVersion=$$($(GO) list -m -f '{{.Version}}' sigs.k8s.io/jobset)" -o $@ sigs.k8s.io/jobset

# Kueue's manager, run out of cluster beside the local control plane by
# hack/kueue-local.sh for the e2e kueue specs.
$(KUEUE):
	@echo "building kueue (first time only)"
	cd $(KUEUE_MOD) && $(GO) build -o $@ sigs.k8s.io/kueue/cmd/kueue

$(KUBERAY): $(KUBERAY_MOD)/go.mod
	@echo "building KubeRay's ray-operator $$(cd $(KUBERAY_MOD) && $(GO) list -m -f '{{.Version}}' github.com/ray-project/kuberay/ray-operator) (first time, and when its go.mod changes)"
	cd $(KUBERAY_MOD) && $(GO) build -o $@ github.com/ray-project/kuberay/ray-operator

$(TRAINER): $(TRAINER_MOD)/go.mod
	@echo "building Kubeflow Trainer's controller manager $$(cd $(TRAINER_MOD) && $(GO) list -m -f '{{.Version}}' github.com/kubeflow/trainer/v2) (first time, and when its go.mod changes)"
	cd $(TRAINER_MOD) && $(GO) build -o $@ github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager

$(SLINKY): $(SLINKY_MOD)/go.mod
	@echo "building Slinky's slurm-operator $$(cd $(SLINKY_MOD) && $(GO) list -m -f '{{.Version}}' github.com/SlinkyProject/slurm-operator) (first time, and when its go.mod changes)"
	cd $(SLINKY_MOD) && $(GO) build -o $@ github.com/SlinkyProject/slurm-operator/cmd/manager

$(HELM):
	@echo "building helm $(HELM_VERSION) (first time only)"
	GOBIN=$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(PROMQL_METRICS): $(PROMQL_MOD)/go.mod $(PROMQL_MOD)/main.go
	cd $(PROMQL_MOD) && $(GO) build -o $@ .

# The ginkgo CLI for `make test-e2e`, built from the main module so that it
# is the version go.mod pins for the library (the CLI warns on a mismatch);
# rebuilt when go.mod changes.
$(BIN)/ginkgo: go.mod
	@echo "building ginkgo $$($(GO) list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)"
	$(GO) build -o $@ github.com/onsi/ginkgo/v2/ginkgo

.PHONY: tools
tools: $(KUBE_APISERVER) $(ETCD) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KUBECTL) $(KWOK) $(KWOKCTL) $(JOBSET) $(KUEUE) $(HELM) ## Build every tool.
