#!/usr/bin/env bash
# hack/test.sh runs make test's packages in two go test streams at once
# (docs/testing.md, "How long"):
#
#   - TEST_PACKAGES, the long suites (end-to-end, chaos, Kyverno), two at a
#     time (go test's -p default, GOMAXPROCS on 2 cores), longest first:
#     Kyverno's starts when chaos's ends, as it did when they were all in
#     one stream;
#   - every other package, one at a time, the longest first
#     (TEST_MORE_PACKAGES, then the rest in import-path order). They mostly
#     wait on API servers of their own: beside the long suites they use
#     CPU a single stream left idle once the suites were waiting too.
#
# The first stream prints as it goes; the second's output follows when it
# ends, so that the two never interleave. It fails when either fails.
# Environment: GO_TEST_FLAGS and TEST_BUILD_FLAGS (go test flags),
# TEST_PACKAGES and TEST_MORE_PACKAGES (package patterns).
set -uo pipefail

# shellcheck disable=SC2086 # the flags and patterns are word lists
long=$(go list $TEST_PACKAGES) || exit 2
more=$(go list $TEST_MORE_PACKAGES ./... | awk '!seen[$0]++' | grep -vxF "$long") || exit 2

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2086
go test -p 1 $TEST_BUILD_FLAGS $GO_TEST_FLAGS $more >"$out" 2>&1 &
other=$!
# shellcheck disable=SC2086
go test $TEST_BUILD_FLAGS $GO_TEST_FLAGS $long
first=$?
wait "$other"
second=$?
cat "$out"
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ]; then
	exit 1
fi
