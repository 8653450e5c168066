#!/usr/bin/env python3
"""First recall after a restart, builds in turns: each round spawns every BIN in turn (rotating
who goes first) on a fresh copy of KEPT's pristine store, sends `initialize`, then one
`toolAfter` of the large skill with an intent, and times it from the spawn.
    python3 bench/first_recall.py KEPT ROUNDS BIN...

KEPT is a `bench recall --keep` setting's folder. Each server runs with
`SKILLMEM_LOG=skillmem_store=debug,skillmem_engine=debug` (its stderr read for the catalog's
load and the engine's open). Prints, per BIN, the medians and ranges of: spawn to the answer of
`initialize`, spawn to the first recall's answer, the engine's open, the catalog's load.
"""
import os, re, shutil, statistics, sys, tempfile, time

from sidecar import Sidecar

kept, rounds, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
skill = 'bench-skill-000'
skdir = None
for root, ds, fs in os.walk(kept + '/ws'):
    if root.endswith('/' + skill) and 'SKILL.md' in fs:
        skdir = root


def ms(text, pattern):
    m = re.search(pattern + r' ([\d.]+)(µs|ms|s)\b', text)
    if not m:
        return None
    return float(m.group(1)) * {'µs': 0.001, 'ms': 1, 's': 1000}[m.group(2)]


def once(b):
    data = tempfile.mkdtemp(prefix='skillmem-first-')
    shutil.rmtree(data)
    shutil.copytree(kept + '/data.pristine', data)
    # The copy's pages written back now, not during the start it would slow.
    os.sync()
    env = dict(os.environ, SKILLMEM_HOME=data, HOME=kept + '/home',
               SKILLMEM_LOG='skillmem_store=debug,skillmem_engine=debug')
    err = tempfile.TemporaryFile()
    t0 = time.time()
    sc = Sidecar(b, env, stderr=err)
    sc.initialize(kept + '/ws')
    t1 = time.time()
    r = sc.call(2, 'skillmem/toolAfter', {'sessionId': 's', 'callId': 'c', 'tool': 'skill',
                                          'args': {'name': skill, 'intent': 'pecle neri riso'},
                                          'output': 'Base directory for this skill: %s\n' % skdir})
    t2 = time.time()
    sc.stop(3)
    err.seek(0)
    log = err.read().decode('utf-8', 'replace')
    shutil.rmtree(data)
    mode = r.get('result', {}).get('mode')
    return {'init': (t1 - t0) * 1e3, 'first recall': (t2 - t0) * 1e3,
            'engine open': ms(log, r'engine open: database [\d.]+\S+, embedder [\d.]+\S+ \(side by side\), both')
            or sum(filter(None, [ms(log, 'engine open: database'), ms(log, 'embedder')])),
            'catalog': ms(log, r'notes loaded in'), 'mode': mode}


runs = {b: [] for b in bins}
for n in range(rounds):
    for b in bins[n % len(bins):] + bins[:n % len(bins)]:
        runs[b].append(once(b))
for b in bins:
    rs = runs[b]
    parts = []
    for k in ('init', 'first recall', 'engine open', 'catalog'):
        v = [r[k] for r in rs if r[k] is not None]
        if v:
            parts.append('%s %.0f ms (%.0f–%.0f)' % (k, statistics.median(v), min(v), max(v)))
    modes = sorted(set(str(r['mode']) for r in rs))
    print('%s: %s; modes %s' % (b, ', '.join(parts), modes))
