#!/usr/bin/env bash
# build.sh builds the real components that tests and `fedwarden up` start,
# from the modules pinned under hack/tools/<name>/go.mod, into bin/.
# A binary is rebuilt only when its module's go.mod or go.sum changed since it
# was built (the stamp bin/.<name>.sum records them).
#
# Usage: hack/tools/build.sh [name...]   (default: every tool)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
mkdir -p "$bin"

# pkg_of prints the package to build for a tool directory.
pkg_of() {
	case "$1" in
	kube-apiserver) echo k8s.io/kubernetes/cmd/kube-apiserver ;;
	etcd) echo . ;;
	controller-gen) echo sigs.k8s.io/controller-tools/cmd/controller-gen ;;
	*) echo "unknown tool $1" >&2; return 1 ;;
	esac
}

build() {
	local name=$1 dir="$root/hack/tools/$1" stamp="$bin/.$1.sum" want
	want=$(cat "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -d' ' -f1)
	if [[ -x "$bin/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		echo "bin/$name is up to date"
		return
	fi
	echo "building bin/$name"; [[ $name == kube-apiserver ]] && echo "(a cold build of kube-apiserver takes 10-17 minutes on 2 cores)"
	local start=$SECONDS
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin/$name.tmp" "$(pkg_of "$name")")
	mv "$bin/$name.tmp" "$bin/$name"
	echo "$want" >"$stamp"
	echo "built bin/$name in $((SECONDS - start))s"
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(controller-gen etcd kube-apiserver)
for t in "${tools[@]}"; do build "$t"; done
