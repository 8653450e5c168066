#!/usr/bin/env python3
"""The learned judge that was tried and not landed: its leave-one-set-out figures.

The judge would have been a final gate after the rules of crates/historian/src/filter.rs: a line the
rules pass promoted only when a gradient-boosted tree ensemble over the features of
xtask/measure/src/study/features.rs scores it at least a threshold. docs/historian.md, "Tried: a
learned judge", gives the figures this prints and why it was not landed.

    cargo xtask study historian-features --out /tmp/features.jsonl bench/historian/*.jsonl
    python3 -m venv /tmp/v && /tmp/v/bin/pip install numpy scikit-learn
    /tmp/v/bin/python bench/historian/judge.py /tmp/features.jsonl [PROBE_FEATURES.jsonl]

prints the table (each set judged by a model, a share and a threshold chosen without it;
some minutes, a few hundred fits) and, given a second dump, the scores a judge trained on
every set gives its lines. scikit-learn 1.9 and numpy 2.4 were used.

The protocol, every choice made on training sets only:
- the model is fitted on every line of the training sets (label: promote or not);
- the threshold keeps a share k of the lessons the rules pass, on each training set, taken
  from out-of-fold scores (leave one training set out);
- k (0.93 .. 0.99) is the one whose inner leave-one-set-out runs give the best mean precision
  with recall >= 0.88 on every inner test set.
"""

import json
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

SHARES = [0.93, 0.95, 0.97, 0.98, 0.99]
MIN_RECALL = 0.88


def load(path):
    rows = [json.loads(l) for l in open(path)]
    names = list(rows[0]["features"].keys())
    # The features as Rust computes them (f32), widened exactly.
    X = np.array([[np.float32(r["features"][k]) for k in names] for r in rows], dtype=np.float64)
    y = np.array([r["label"] == "promote" for r in rows])
    passed = np.array([r["rule"] == "pass" for r in rows])
    sets = np.array([r["set"] for r in rows])
    cat = np.array([r["category"] for r in rows])
    return names, X, y, passed, sets, cat


def model():
    return HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15, random_state=0)


class Study:
    def __init__(self, X, y, passed, sets):
        self.X, self.y, self.passed, self.sets = X, y, passed, sets
        self.cache = {}

    def scores(self, train, test):
        """Scores of the lines of sets `test` by a model fitted on sets `train`."""
        key = (tuple(sorted(train)), tuple(sorted(test)))
        if key not in self.cache:
            tr = np.isin(self.sets, train)
            m = model().fit(self.X[tr], self.y[tr])
            s = np.full(len(self.y), np.nan)
            te = np.isin(self.sets, test)
            s[te] = m.predict_proba(self.X[te])[:, 1]
            self.cache[key] = s
        return self.cache[key]

    def oof(self, pool):
        o = np.full(len(self.y), np.nan)
        for v in pool:
            s = self.scores([p for p in pool if p != v], [v])
            o[self.sets == v] = s[self.sets == v]
        return o

    def threshold(self, oof, pool, k):
        """The highest threshold keeping a share k of the rules' lessons on each set of pool."""
        lessons = [(self.sets == p) & self.passed & self.y for p in pool]
        best = 0.0
        for t in np.unique(oof[np.isin(self.sets, pool) & self.passed & self.y]):
            if all((oof[g] >= t).sum() >= k * g.sum() for g in lessons):
                best = t
            else:
                break
        return float(best)

    def figures(self, promoted, s):
        idx = self.sets == s
        p, yy = promoted[idx], self.y[idx]
        right = (p & yy).sum()
        return (right / p.sum() if p.sum() else 1.0), right / yy.sum()

    def choose(self, pool):
        """k and the threshold, from pool only."""
        per = {k: [] for k in SHARES}
        for v in pool:
            inner = [p for p in pool if p != v]
            o, s = self.oof(inner), self.scores(inner, [v])
            for k in SHARES:
                t = self.threshold(o, inner, k)
                per[k].append(self.figures(self.passed & (s >= t), v))
        ok = [k for k in SHARES if min(r for _, r in per[k]) >= MIN_RECALL] or [max(SHARES)]
        k = max(ok, key=lambda k: np.mean([p for p, _ in per[k]]))
        return k, self.threshold(self.oof(pool), pool, k)


def loso(st, sets, passed):
    all_sets = sorted(set(sets))
    print("| test set | rules alone | rules + judge | k | threshold |")
    print("|---|---|---|---|---|")
    blind = []
    for s in all_sets:
        pool = [p for p in all_sets if p != s]
        k, t = st.choose(pool)
        sc = st.scores(pool, [s])
        r, g = st.figures(passed, s), st.figures(passed & (sc >= t), s)
        if s in ("held-out-4", "held-out-5", "held-out-6"):
            blind.append((r, g))
        print(f"| {s} | {r[0]:.3f} / {r[1]:.3f} | {g[0]:.3f} / {g[1]:.3f} | {k} | {t:.3f} |", flush=True)
    dp = np.mean([g[0] - r[0] for r, g in blind])
    print(f"blind sets 4-6: precision {dp:+.3f} on the mean, lowest recall {min(g[1] for _, g in blind):.3f}")


def probe(st, X, y, sets, path):
    """The scores of a judge trained on every set, and its threshold, for the lines of `path`."""
    k, t = st.choose(sorted(set(sets)))
    m = model().fit(X, y)
    _, P, _, passed, _, _ = load(path)
    print(f"judge trained on every set: k={k}, threshold {t:.4f}")
    rows = [json.loads(l) for l in open(path)]
    for r, s, ok in zip(rows, m.predict_proba(P)[:, 1], passed):
        verdict = "refused by the rules" if not ok else ("promoted" if s >= t else "refused by the judge")
        print(f"{s:.3f} {verdict:21s} {r['skill']}: {r['lesson']}")


if __name__ == "__main__":
    names, X, y, passed, sets, cat = load(sys.argv[1])
    st = Study(X, y, passed, sets)
    loso(st, sets, passed)
    if len(sys.argv) > 2:
        probe(st, X, y, sets, sys.argv[2])
