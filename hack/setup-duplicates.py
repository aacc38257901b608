#!/usr/bin/env python3
"""Sorts the pairs `duplicates` lists into repeated set-up code and the rest.

    duplicates --repo test --most 200 --seconds 120 | hack/setup-duplicates.py test

prints imports=N setup=N other=N, counting the rows of duplicates' output
(at most 200: --most). A pair is
  imports  when one side lies within its file's import block (not code);
  setup    when one side starts or stops a bed, a process or a client, joins,
           enables, or waits (the SETUP words below);
  other    otherwise.
With -v it lists the set-up pairs. ROOT is the --repo given to duplicates.
docs/testing.md ("Test bed") gives the figures before and after fedtest.Bed."""
import os
import re
import sys

SETUP = re.compile(
    r'localfed\.Start|startLocalFed|StartBed|startBed|StartControllerManager|startControllerManager|'
    r'StartAgent|startAgent|StartKWOK|RunKWOK|\.Stop\(\)|\.stop\(\)|t\.Cleanup|dumpLog|LogTail|'
    r'eventually\(|Eventually\(|joinArgs|JoinArgs|"join"|"enable"|EnableDeployments|enableDeployments|'
    r'AddToScheme|client\.New\(|newClient|NewClient|MustClient|inprocess\.Start|fedtest\.Build|buildFedwarden|'
    r'WriteAgentMemberKubeconfig|"starting a test bed|ControllerStatusRunning|StartSlot|startSlot')
ROW = re.compile(r'D\d+ (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)')


def main():
    root = sys.argv[1]
    cache = {}

    def lines(f):
        if f not in cache:
            with open(os.path.join(root, f)) as fh:
                cache[f] = fh.read().split('\n')
        return cache[f]

    def in_imports(f, a, b):
        start = end = 0
        for i, line in enumerate(lines(f), 1):
            if line.startswith('import ('):
                start = i
            elif start and line == ')':
                end = i
                break
        return start <= a and b <= end + 1

    counts = {'imports': 0, 'setup': 0, 'other': 0}
    setup = []
    for row in sys.stdin:
        m = ROW.match(row)
        if not m:
            continue
        sides = [(m[1], int(m[2]), int(m[3])), (m[4], int(m[5]), int(m[6]))]
        if any(in_imports(f, a, b) for f, a, b in sides):
            kind = 'imports'
        elif any(SETUP.search('\n'.join(lines(f)[a - 1:b])) for f, a, b in sides):
            kind = 'setup'
            setup.append(row.strip())
        else:
            kind = 'other'
        counts[kind] += 1
    print(' '.join('%s=%d' % kv for kv in counts.items()))
    if '-v' in sys.argv:
        print('\n'.join(setup))


if __name__ == '__main__':
    main()
