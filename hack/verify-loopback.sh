#!/usr/bin/env bash
# verify-loopback.sh fails when a file under test/ or bench/ names a network
# address outside 127.0.0.0/8: a URL whose host is not 127.x.x.x, localhost or
# [::1], or an IPv4 address outside 127.0.0.0/8. Tests, benchmarks and their
# fixtures may reach only this machine, including in objects that admission
# rejects (see docs/testing.md). A line that must name such an address
# without anything dialing it (the test of the guard that refuses it) ends
# with the comment `loopback-check: not dialed`. A scheme with no host after
# it ("https://" + addr) is left alone: the host comes from a variable.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed_host='^(127\.[0-9]+\.[0-9]+\.[0-9]+|localhost|\[::1\])(:([0-9]+|%d|%s|%v))?(%s|%v)?$'
status=0
while IFS= read -r file; do
	while IFS= read -r hit; do
		line=${hit%%:*}
		text=$(sed -n "${line}p" "$file")
		[[ $text == *'loopback-check: not dialed'* ]] && continue
		host=${hit#*://}
		[[ -z $host || $host =~ $allowed_host ]] && continue
		echo "$file:$line: ${hit#*:} is not a loopback address" >&2
		status=1
	done < <(grep -noE '[a-zA-Z][a-zA-Z0-9+.-]*://[^]/ "'"'"'`)<>,;]*\]?[^/ "'"'"'`)<>,;]*' "$file" || true)
	while IFS= read -r hit; do
		line=${hit%%:*}
		text=$(sed -n "${line}p" "$file")
		[[ $text == *'loopback-check: not dialed'* ]] && continue
		ip=${hit#*:}
		[[ $ip == 127.* ]] && continue
		echo "$file:$line: $ip is not a loopback address" >&2
		status=1
	done < <(grep -noE '(^|[^0-9.])([0-9]{1,3}\.){3}[0-9]{1,3}([^0-9.]|$)' "$file" | sed -E 's/^([0-9]+):[^0-9]*(([0-9]{1,3}\.){3}[0-9]{1,3}).*/\1:\2/' || true)
done < <(git ls-files test bench)
if ((status)); then
	echo "tests and benchmarks may name only loopback addresses (127.0.0.0/8): use a closed port on 127.0.0.1, or a dry-run (admission-only) object" >&2
fi
exit $status
