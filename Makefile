# Fedwarden's build. `make test` is the one test command (README, .ci/run).

SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GO_TEST_FLAGS ?= -count=1 -timeout 30m

.PHONY: all build tools generate verify test test-unit fmt vet clean

all: build

## build: the fedwarden CLI into bin/fedwarden
build:
	go build -o $(BIN)/fedwarden ./cmd/fedwarden

## tools: build the pinned kube-apiserver, kube-controller-manager, etcd and controller-gen into bin/ (only when their pin changed)
tools:
	hack/tools/build.sh

## generate: deepcopy code and CRDs from the types under api/ (controller-gen is rebuilt when its pin changes)
generate:
	hack/tools/build.sh controller-gen
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	rm -f config/crd/bases/*.yaml
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=config/crd/bases

## verify: generated files up to date, gofmt clean, go vet clean
verify: generate
	@git diff --exit-code -- api config/crd || { echo "generated files are out of date: run 'make generate' and commit the result" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- api config/crd)" || { echo "make generate created files that are not committed:" >&2; git status --porcelain -- api config/crd >&2; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt would change: $$out" >&2; exit 1; }
	go vet ./...

## test: unit, integration and end-to-end tests, against real kube-apiservers and etcd
test: tools
	FEDWARDEN_BIN_DIR=$(BIN) go test $(GO_TEST_FLAGS) ./...

## test-unit: only the tests that need no API server
test-unit:
	go test $(GO_TEST_FLAGS) -short ./...

clean:
	rm -rf $(BIN)
