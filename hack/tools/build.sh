#!/usr/bin/env bash
# build.sh builds the real components that tests and `fedwarden up` start,
# and the generators and linters the build needs, from the modules pinned under
# hack/tools/<module>/go.mod, into bin/.
# A binary is rebuilt only when its module's go.mod or go.sum changed since it
# was built, or its build flags did (the stamp bin/.<tool>.sum records them).
#
# Usage: hack/tools/build.sh [tool...]   (default: every tool)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
mkdir -p "$bin"

# Each tool: its module directory under hack/tools and the package to build.
# kubefed-crds and kwok-stages are not binaries: they copy the
# CustomResourceDefinitions from the source of the pinned KubeFed module to
# bin/kubefed-crds.yaml, and KWOK's default Stages from the source of the
# pinned KWOK module to bin/kwok-stages.yaml.
declare -A module=(
	[controller-gen]=controller-gen
	[etcd]=etcd
	[helm]=helm
	[kube-apiserver]=kubernetes
	[kube-controller-manager]=kubernetes
	[kubectl]=kubectl
	[kubefed-controller-manager]=kubefed
	[kubefed-crds]=kubefed
	[kubefedctl]=kubefed
	[kwok]=kwok
	[kwok-stages]=kwok
	[kyverno]=kyverno
	[kyverno-admission]=kyverno
	[kyverno-background]=kyverno
	[kyverno-reports]=kyverno
	[staticcheck]=staticcheck
)
declare -A package=(
	[controller-gen]=sigs.k8s.io/controller-tools/cmd/controller-gen
	[etcd]=.
	[helm]=helm.sh/helm/v3/cmd/helm
	[kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
	[kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
	[kubectl]=k8s.io/kubernetes/cmd/kubectl
	[kubefed-controller-manager]=sigs.k8s.io/kubefed/cmd/controller-manager
	[kubefed-crds]=sigs.k8s.io/kubefed
	[kubefedctl]=sigs.k8s.io/kubefed/cmd/kubefedctl
	[kwok]=sigs.k8s.io/kwok/cmd/kwok
	[kwok-stages]=sigs.k8s.io/kwok
	[kyverno]=github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno
	[kyverno-admission]=github.com/kyverno/kyverno/cmd/kyverno
	[kyverno-background]=github.com/kyverno/kyverno/cmd/background-controller
	[kyverno-reports]=github.com/kyverno/kyverno/cmd/reports-controller
	[staticcheck]=honnef.co/go/tools/cmd/staticcheck
)

# ldflags_of prints the linker flags of a tool. Kubernetes binaries and helm
# get their version stamped, as a release build does, so that /version and
# `helm version` report it; helm also gets the Kubernetes version of its
# client-go, as helm's own Makefile does, which `helm template` and
# `helm lint` assume of the cluster (unstamped, they assume v1.20).
ldflags_of() {
	local flags='-s -w' dir="$root/hack/tools/${module[$1]}" v
	if [[ ${module[$1]} == kubernetes || ${module[$1]} == kubectl ]]; then
		v=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$dir/go.mod")
		[[ $v =~ ^v([0-9]+)\.([0-9]+)\. ]] || { echo "cannot read the k8s.io/kubernetes version from $dir/go.mod" >&2; return 1; }
		local pkg=k8s.io/component-base/version
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=${BASH_REMATCH[1]} -X $pkg.gitMinor=${BASH_REMATCH[2]} -X $pkg.gitTreeState=clean"
	fi
	if [[ ${module[$1]} == helm ]]; then
		v=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" {print $3}' "$dir/go.mod")
		[[ -n $v ]] || { echo "cannot read the helm.sh/helm/v3 version from $dir/go.mod" >&2; return 1; }
		flags+=" -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
		v=$(awk '$1 == "k8s.io/client-go" {print $2}' "$dir/go.mod")
		[[ $v =~ ^v0\.([0-9]+)\. ]] || { echo "cannot read the k8s.io/client-go version from $dir/go.mod" >&2; return 1; }
		local pkg
		for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
			flags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=${BASH_REMATCH[1]}"
		done
	fi
	if [[ ${module[$1]} == kyverno ]]; then
		v=$(awk '$1 == "require" && $2 == "github.com/kyverno/kyverno" {print $3}' "$dir/go.mod")
		[[ -n $v ]] || { echo "cannot read the github.com/kyverno/kyverno version from $dir/go.mod" >&2; return 1; }
		flags+=" -X github.com/kyverno/kyverno/pkg/version.BuildVersion=$v"
	fi
	echo "$flags"
}

# copy_kubefed_crds writes the CRDs of the KubeFed module pinned in $1 to $2.
# KubeFed v0.10.0 keeps them in its controllermanager subchart.
copy_kubefed_crds() {
	local src
	src=$(cd "$1" && go mod download sigs.k8s.io/kubefed && go list -m -f '{{.Dir}}' sigs.k8s.io/kubefed)
	src="$src/charts/kubefed/charts/controllermanager/crds/crds.yaml"
	[[ -f $src ]] || { echo "no KubeFed CRDs at $src" >&2; return 1; }
	cp "$src" "$2.tmp"
	chmod 0644 "$2.tmp"
	mv "$2.tmp" "$2"
}

# copy_kwok_stages writes to $2, as one multi-document YAML file (a kwok
# --config), the Stages that kwokctl gives a KWOK controller that has none
# configured, from the source of the KWOK module pinned in $1: its "fast"
# Node and Pod stages, with the Lease heartbeat. The kwok binary alone starts
# with none.
copy_kwok_stages() {
	local src f stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)
	src=$(cd "$1" && go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
	: >"$2.tmp"
	for f in "${stages[@]}"; do
		[[ -f $src/kustomize/stage/$f ]] || { echo "no KWOK stage at $src/kustomize/stage/$f" >&2; return 1; }
		{ echo "---"; cat "$src/kustomize/stage/$f"; } >>"$2.tmp"
	done
	chmod 0644 "$2.tmp"
	mv "$2.tmp" "$2"
}

# copies names the tools that are copied files rather than binaries, and the
# function that copies each (a change of the function copies again).
declare -A copies=(
	[kubefed-crds]=copy_kubefed_crds
	[kwok-stages]=copy_kwok_stages
)

build() {
	local name=$1
	[[ -n "${module[$name]:-}" ]] || { echo "unknown tool $name (known: ${!module[*]})" >&2; return 1; }
	local dir="$root/hack/tools/${module[$name]}" stamp="$bin/.$name.sum" want flags
	local out="$bin/$name" copy=${copies[$name]:-}
	flags=$(ldflags_of "$name")
	want=$( (cat "$dir/go.mod" "$dir/go.sum"; echo "$flags ${package[$name]}"; [[ -z $copy ]] || declare -f "$copy") | sha256sum | cut -d' ' -f1)
	[[ -z $copy ]] || out="$bin/$name.yaml"
	if [[ -e "$out" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && [[ -n $copy || -x "$out" ]]; then
		echo "bin/${out##*/} is up to date"
		return
	fi
	echo "building bin/$name"
	if [[ ${module[$name]} == kubernetes ]]; then
		echo "(a cold build of kube-apiserver takes about 15 minutes on 2 cores, kube-controller-manager 6 more)"
	fi
	if [[ $name == kubefed-controller-manager ]]; then
		echo "(a cold build of the KubeFed controller manager takes about 3 minutes on 2 cores, 7 on a busy machine; kubefedctl then takes seconds)"
	fi
	if [[ $name == kyverno ]]; then
		echo "(a cold build of the kyverno CLI takes about 8 minutes on 2 cores, its three controllers 5 more)"
	fi
	local start=$SECONDS
	if [[ -n $copy ]]; then
		"$copy" "$dir" "$out"
		echo "$want" >"$stamp"
		echo "copied bin/$name.yaml"
		return
	fi
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="$flags" -o "$bin/$name.tmp" "${package[$name]}")
	mv "$bin/$name.tmp" "$bin/$name"
	echo "$want" >"$stamp"
	echo "built bin/$name in $((SECONDS - start))s"
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(controller-gen etcd helm kube-apiserver kube-controller-manager kubectl kubefed-controller-manager kubefedctl kubefed-crds kwok kwok-stages kyverno kyverno-admission kyverno-background kyverno-reports staticcheck)
for t in "${tools[@]}"; do build "$t"; done
