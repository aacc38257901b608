# Fedwarden's build. `make test` is the one test command (README, .ci/run).

SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
STATICCHECK := $(BIN)/staticcheck
# The browser the console's tests drive (test/fedtest/browser.go): Debian's
# chromium, or the one FEDWARDEN_CHROMIUM names.
CHROMIUM := $(or $(FEDWARDEN_CHROMIUM),/usr/bin/chromium)
# The platforms besides Linux that make verify vets the module for (vet
# type-checks every package and its tests, compiling what they import):
# users run the CLI from macOS and Windows laptops. darwin/amd64 builds too, but
# has no code of its own and would cost verify a third cold compile of every
# dependency (several minutes on 2 cores): add it here to check it.
CROSS_PLATFORMS ?= darwin/arm64 windows/amd64
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# make test and make test-race link their test binaries without DWARF
# (-ldflags=-w; nothing reads it, and linking some 70 test binaries is a
# share of the CPU of a 2-core run) and skip go test's own vet, a subset of
# the go vet ./... that make verify runs (docs/testing.md, "How long").
TEST_BUILD_FLAGS ?= -ldflags=-w -vet=off
# make test runs with GOGC=400, which every process under go test inherits
# (the compiler and linker too): the kube-apiservers, etcds and controllers
# of the test beds collect garbage four times less often, and their garbage
# collection is a share of the CPU that the first, CPU-bound half of the run
# spends. It cut 12 to 19% of the CPU of the integration packages measured,
# and costs memory: a kube-apiserver's peak RSS at start grew from about 280
# to 370 MB, the host's, with the CRDs, from 410 to 570 (bench/RESULTS.md,
# "Test run log").
TEST_GOGC ?= 400
# go test runs GOMAXPROCS tests of a package at once, except test/e2e, whose
# TestMain raises it to 8 (FEDWARDEN_E2E_PARALLEL sets another number;
# -parallel in GO_TEST_FLAGS wins everywhere): its tests mostly wait on
# controllers (docs/testing.md, "Many tests at once").

.PHONY: all build tools browser generate verify test test-unit test-race fuzz bench-smoke bench up fmt vet clean

all: build

## build: the fedwarden CLI into bin/fedwarden
build:
	go build -o $(BIN)/fedwarden ./cmd/fedwarden

## tools: build the pinned kube-apiserver, kube-controller-manager, kubectl, etcd, controller-gen, helm, kyverno (CLI, admission, background and reports controllers), KubeFed v0.10.0 (controller manager, kubefedctl and its CRDs, for bench/bulk), KWOK (its controller and default Stages) and staticcheck into bin/ (only when their pin changed), and install the browser
tools: browser
	hack/tools/build.sh

## browser: install Debian's chromium with apt-get (as root, else through sudo) unless $(CHROMIUM) is there already; the console's tests drive it headless, and make test fails without it
browser:
	@if [ -x "$(CHROMIUM)" ]; then echo "$(CHROMIUM) is installed"; exit 0; fi; \
	if [ -n "$(FEDWARDEN_CHROMIUM)" ]; then echo "FEDWARDEN_CHROMIUM=$(FEDWARDEN_CHROMIUM) is not an executable file" >&2; exit 1; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; \
	else echo "cannot install chromium: not root and no sudo; install Debian's chromium package (apt-get install chromium) or set FEDWARDEN_CHROMIUM to a Chromium binary" >&2; exit 1; fi; \
	echo "installing Debian's chromium (apt-get; about a minute), which the console's browser tests drive"; \
	$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null \
		|| { echo "cannot install chromium with apt-get (see above); install Debian's chromium package or set FEDWARDEN_CHROMIUM to a Chromium binary" >&2; exit 1; }; \
	[ -x "$(CHROMIUM)" ] || { echo "apt-get installed chromium, but $(CHROMIUM) is still missing" >&2; exit 1; }; \
	echo "installed $$($(CHROMIUM) --version 2>/dev/null)"

## generate: deepcopy code and CRDs from the types under api/ (controller-gen is rebuilt when its pin changes), and the Helm chart's copies of the CRDs and of the admission policies (config/admission/policies)
generate:
	hack/tools/build.sh controller-gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	rm -f config/crd/bases/*.yaml
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=config/crd/bases
	rm -f deploy/helm/fedwarden/crds/*.yaml
	cp config/crd/bases/*.yaml deploy/helm/fedwarden/crds/
	rm -f deploy/helm/fedwarden/policies/*.yaml
	cp config/admission/policies/*.yaml deploy/helm/fedwarden/policies/

## verify: generated files up to date, gofmt clean, go vet and staticcheck clean, the module (tests included) type-checks and vets for CROSS_PLATFORMS too (staticcheck is rebuilt when its pin changes), tests and benchmarks name only loopback addresses
verify: generate
	hack/verify-loopback.sh
	@git diff --exit-code -- api config/crd deploy/helm/fedwarden/crds deploy/helm/fedwarden/policies || { echo "generated files are out of date: run 'make generate' and commit the result" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- api config/crd deploy/helm/fedwarden/crds deploy/helm/fedwarden/policies)" || { echo "make generate created files that are not committed:" >&2; git status --porcelain -- api config/crd deploy/helm/fedwarden/crds deploy/helm/fedwarden/policies >&2; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt would change: $$out" >&2; exit 1; }
	go vet ./...
	hack/tools/build.sh staticcheck
	$(STATICCHECK) ./...
	@set -e; for p in $(CROSS_PLATFORMS); do \
		echo "GOOS=$${p%/*} GOARCH=$${p#*/} go vet ./..."; \
		GOOS=$${p%/*} GOARCH=$${p#*/} go vet ./...; \
	done

## test: unit, integration and end-to-end tests, against real kube-apiservers and etcd, and the console's in headless Chromium (FEDWARDEN_REQUIRE_BROWSER=1: a missing browser fails them rather than skipping them)
test: tools
	GOGC=$(TEST_GOGC) FEDWARDEN_REQUIRE_BROWSER=1 FEDWARDEN_BIN_DIR=$(BIN) go test $(TEST_BUILD_FLAGS) $(GO_TEST_FLAGS) $(TEST_PACKAGES)

# Every package, the longest first: go test runs GOMAXPROCS packages at
# once in the order given, so the Kyverno, end-to-end and chaos suites
# (minutes each) start first instead of last, then those of 7 s or more
# (as measured, docs/testing.md, "How long"), and the short packages fill
# whichever slot frees at the end. Kyverno's suite, which mostly waits on
# Kyverno's reports, runs beside the CPU-bound end-to-end tests; chaos
# takes its slot when it ends.
TEST_PACKAGES ?= ./test/kyverno ./test/e2e ./test/chaos ./internal/localfed ./internal/propagation ./internal/cli/plan \
	./test/plandiff/pull ./internal/cli/join ./internal/typeconfig ./internal/scheduler/capacitysource ./test/helm \
	./internal/cli/migrate ./internal/console ./internal/cli/rollout ./internal/federatedtype ./internal/cli/enable \
	./test/fedtest ./internal/cli/diff ./internal/cli/resync ./internal/cli/drift ./internal/cli/status ./internal/dependencies ./...

## test-race: the tests under internal/ with the race detector (those that run Fedwarden's code in-process against real kube-apiservers, and the unit tests), then the end-to-end tests RACE_E2E_TESTS against a fedwarden binary built with -race: a data race in its log fails the run
test-race: tools
	FEDWARDEN_BIN_DIR=$(BIN) go test -race $(TEST_BUILD_FLAGS) $(GO_TEST_FLAGS) $(RACE_PACKAGES)
	FEDWARDEN_RACE=1 FEDWARDEN_BIN_DIR=$(BIN) go test $(TEST_BUILD_FLAGS) $(GO_TEST_FLAGS) -run '$(RACE_E2E_TESTS)' ./test/e2e/

RACE_PACKAGES ?= ./internal/...
# The end-to-end paths a race-built controller-manager and agent go through
# in make test-race: push and pull propagation, versions, drift healed and
# reported, placement changes, deletion, scheduling, join, and a rollout
# in waves (held revisions synced in parallel with the latest), also with a
# Pull cluster held by its agent.
RACE_E2E_TESTS ?= ^(TestRolloutInWaves|TestRolloutInWavesHoldsAPullCluster|TestTemplateAndOverrideVersions|TestDriftEnforcedIsHealed|TestDriftAlertIsReportedThenResynced|TestPlacementDropRemovesCopy|TestDeletionDeletesCopies|TestPullMode|TestScheduling|TestKubeFedSample1|TestJoinMakesMembersReady|TestEveryWriterOfADesiredFieldIsSeenInPullMode)$$

## fuzz: each fuzz target for FUZZTIME (default 10000x: ten thousand inputs, about 5-20 s each on 2 cores) from its checked-in corpus, one go test per target (Go fuzzes one at a time), FUZZ_PARALLEL workers (default 1)
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t##*:} in $${t%%:*} for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$${t##*:}\$$" -fuzztime $(FUZZTIME) -parallel $(FUZZ_PARALLEL) ./$${t%%:*}; \
	done

# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can
# fail a target with "context deadline exceeded" and no failing input when
# the time runs out while a worker is busy (golang/go#75804, fixed in Go
# 1.27); seen once in this Makefile's run on a loaded machine.
FUZZTIME ?= 10000x
FUZZ_PARALLEL ?= 1
FUZZ_TARGETS := \
	internal/render:FuzzRender \
	internal/propagation:FuzzPlace \
	internal/render:FuzzVersions \
	internal/propagation:FuzzCPVStatus \
	internal/drift:FuzzDetect \
	internal/scheduler/plugins/replicadivision:FuzzAssign \
	internal/copyhealth:FuzzEvaluate

## bench-smoke: every benchmark under bench/ once at a small size (FEDWARDEN_BENCH_SMOKE=1: a handful to a few dozen objects each), failing on wrong counts (objects that did not arrive, member or host writes beyond one per copy or beyond bench/RESULTS.md, edits not healed or reported) and never on times, so that the benchmarks keep working; go test runs one package's benchmarks at a time
bench-smoke: tools
	FEDWARDEN_BENCH_SMOKE=1 FEDWARDEN_BIN_DIR=$(BIN) go test -count=1 -timeout 30m -run '^$$' -bench . -benchtime 1x ./bench/...

## bench: every benchmark under bench/ once at full size, with the same count checks (tens of minutes on 2 cores), among them bench/bulk's 1,000 x 3 with KubeFed and 1,000 x 20 on a bed of 20 lean members; bench/RESULTS.md and bench/bulk/RESULTS.md have each one's own command and its figures
bench: tools
	FEDWARDEN_BIN_DIR=$(BIN) go test -count=1 -timeout 90m -run '^$$' -bench . -benchtime 1x ./bench/...

## up: a local federation with samples (builds what is missing first); UP_FLAGS adds flags, e.g. UP_FLAGS='--members 2'
up: build
	hack/tools/build.sh etcd kube-apiserver kube-controller-manager
	FEDWARDEN_BIN_DIR=$(BIN) $(BIN)/fedwarden up --with-samples $(UP_FLAGS)

## test-unit: only the tests that need no API server
test-unit:
	go test $(GO_TEST_FLAGS) -short ./...

clean:
	rm -rf $(BIN)
