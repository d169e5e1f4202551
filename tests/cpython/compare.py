#!/usr/bin/python3
"""Compares two runs of CPython's regression tests (`python3 -m test`), test by test.

Usage: compare.py PLAIN_DIR PRELOAD_DIR [--flaky FILE] [--modules test_a,test_b,...]

Each DIR holds `regrtest.log` (the output of `python3 -m test`) and `junit.xml` (its --junit-xml).
Two levels are compared:
  - modules: the outcome regrtest prints for each test module ("[ 3/17] test_io passed", "... failed
    (2 errors)", "... crashed", "... timed out", ...). A module whose worker crashed has no test cases
    in the XML, so this level catches crashes, hangs and missing modules.
  - test cases: pass / skip / failure / error for every unittest test case in the JUnit XML.
Names matching a pattern in the flaky file (fnmatch, one a line, '#' comments) are left out of the
comparison and listed as ignored. Exit status: 0 same outcomes, 1 differences, 2 unusable input.
"""
import argparse
import collections
import fnmatch
import os
import re
import sys
import xml.etree.ElementTree as ET

# "0:01:33 load avg: 4.58 [12/17] test_resource passed"
# "[ 4/17/1] test_subprocess failed (1 failure) (57.5 sec) -- running: test_io (31.2 sec)"
PROGRESS = re.compile(r'\[\s*\d+/\d+(?:/\d+)?\] (test_\w+) (.*)$')
OUTCOMES = [  # prefix of regrtest's text -> category, most specific first
    ('failed (env changed)', 'env-changed'),
    ('failed', 'failed'),
    ('passed', 'passed'),
    ('skipped (resource denied)', 'skipped'),
    ('skipped', 'skipped'),
    ('crashed', 'crashed'),
    ('timed out', 'timed-out'),
    ('ran no tests', 'no-tests'),
    ('interrupted', 'interrupted'),
    ('finished', 'finished'),
]


def module_outcomes(log_path):
    out = {}
    with open(log_path, errors='replace') as f:
        for line in f:
            m = PROGRESS.search(line.rstrip('\n'))
            if not m:
                continue
            name, text = m.group(1), m.group(2)
            for prefix, cat in OUTCOMES:
                if text.startswith(prefix):
                    out[name] = cat  # a re-run (-w) would overwrite; we do not use -w
                    break
    return out


def case_outcomes(xml_path):
    out = {}
    if not os.path.exists(xml_path) or os.path.getsize(xml_path) == 0:
        return out
    root = ET.parse(xml_path).getroot()
    for tc in root.iter('testcase'):
        name = tc.get('name', '?')
        outcome = 'pass'
        for child in tc:
            if child.tag in ('failure', 'error'):
                outcome = child.tag
                break
            if child.tag == 'skipped':
                outcome = 'skip'
        if name in out and out[name] != outcome:
            # The same name twice (subtests or a class run twice): keep the worst.
            rank = {'pass': 0, 'skip': 1, 'failure': 2, 'error': 3}
            outcome = max(out[name], outcome, key=rank.__getitem__)
        out[name] = outcome
    return out


def load_patterns(path):
    pats = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.split('#', 1)[0].strip()
                if line:
                    pats.append(line)
    return pats


def matches(name, pats):
    return any(fnmatch.fnmatchcase(name, p) for p in pats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('plain')
    ap.add_argument('preload')
    ap.add_argument('--flaky')
    ap.add_argument('--modules', default='')
    args = ap.parse_args()
    pats = load_patterns(args.flaky)
    wanted = [m for m in args.modules.split(',') if m]

    runs = {}
    for label, d in (('plain', args.plain), ('preload', args.preload)):
        log = os.path.join(d, 'regrtest.log')
        if not os.path.exists(log):
            print(f'compare: {label}: no {log}', file=sys.stderr)
            return 2
        runs[label] = (module_outcomes(log), case_outcomes(os.path.join(d, 'junit.xml')))

    (pm, pc), (lm, lc) = runs['plain'], runs['preload']
    diffs, ignored = [], []

    modules = sorted(set(pm) | set(lm) | set(wanted))
    for m in modules:
        a, b = pm.get(m, 'missing'), lm.get(m, 'missing')
        if a == b:
            continue
        if matches(m, pats):
            ignored.append(f'module {m}: plain={a} preload={b}')
            continue
        # A module that fails in both runs but with a different count is compared at the case level.
        diffs.append(f'module {m}: plain={a} preload={b}')

    cases = sorted(set(pc) | set(lc))
    for c in cases:
        a, b = pc.get(c, 'absent'), lc.get(c, 'absent')
        if a == b:
            continue
        mod = c.split('.')[1] if c.startswith('test.') and c.count('.') >= 1 else ''
        if matches(c, pats) or (mod and matches(mod, pats)):
            ignored.append(f'case {c}: plain={a} preload={b}')
            continue
        # Cases absent from a run whose module crashed or timed out are already reported above.
        if 'absent' in (a, b) and mod and (pm.get(mod) != lm.get(mod)):
            continue
        diffs.append(f'case {c}: plain={a} preload={b}')

    for label, (mods, cs) in runs.items():
        mc = collections.Counter(mods.values())
        cc = collections.Counter(cs.values())
        print(f'compare: {label:7s} modules: ' + ', '.join(f'{k}={v}' for k, v in sorted(mc.items())) +
              '; cases: ' + ', '.join(f'{k}={v}' for k, v in sorted(cc.items())))
    bad_plain = sorted(m for m, o in pm.items() if o not in ('passed', 'skipped'))
    if bad_plain:
        print('compare: modules not passing without the library (compared as they are): ' + ' '.join(
            f'{m}={pm[m]}' for m in bad_plain))
    for line in ignored:
        print(f'compare: ignored (flaky list): {line}')
    for line in diffs:
        print(f'compare: DIFFERENT {line}')
    if not pc or not lc:
        print('compare: no test cases in a JUnit file', file=sys.stderr)
        return 2
    if diffs:
        print(f'compare: {len(diffs)} difference(s)')
        return 1
    print(f'compare: same outcomes ({len(modules)} modules, {len(cases)} test cases)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
