"""Learning curves of the text encoders over the number of judged queries (issue 9).

Does one kind gain more than another from more query supervision?  For every
kind (LSTM, RNN, DSSM), fold ``f`` of the 5 folds of the 100 training +
validation queries (``fold_splits``, seed 7), seed ``s`` and ``n`` judged
training queries, one model is trained with the shipped member recipe (the
kind's recipe, 8 epochs, no early stopping) on ``n`` of the fold's 80
training queries (a subset fixed per fold: the first ``n`` of a permutation
drawn with seed ``11 + f``, so a smaller set is inside every larger one) plus
the collection's own weak pairs, which do not change with ``n``.  Each model
scores its fold's 20 held-out queries.  ``n = 80`` is exactly the job of
``text_cv_ensemble.py`` and shares its cache files.  The test queries are never
touched.

Printed: mean NDCG@10 over the 100 held-out queries per kind and ``n`` (the
mean over seeds per query), each kind's gain from the smallest to the largest
``n``, and the difference of those gains between kinds, all paired over the
100 queries (mean +- standard error).

Usage::

    PYTHONPATH=python python benchmarks/text_learning_curve.py CACHE_DIR [WORKERS] \
        [--n 40,60,80] [--seeds 0] [--figure learning-curve.png]
"""

from __future__ import annotations

import os
import sys
from multiprocessing import Pool
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import text_cv_ensemble as cvens  # noqa: E402

KINDS = cvens.KINDS
FULL = 80  # training queries of a fold


def _name(kind: str, n: int) -> str:
    return kind if n == FULL else f"{kind}-n{n}"


def subset(train: tuple[int, ...], n: int, fold: int) -> tuple[int, ...]:
    """The fold's first ``n`` training queries in a fixed seeded order (sorted)."""
    if not 1 <= n <= len(train):
        raise ValueError(f"n must be in [1, {len(train)}], got {n}")
    perm = np.random.default_rng(11 + fold).permutation(len(train))
    return tuple(train[i] for i in sorted(perm[:n]))


def summary(cache: Path, ns: tuple[int, ...], seeds: tuple[int, ...],
            figure: str | None = None) -> None:
    from cscore.text.metrics import paired_difference, per_query_ndcg

    c, folds = cvens._setup()
    R: dict[tuple[str, int], np.ndarray] = {}
    for kind in KINDS:
        for n in ns:
            per_fold = []
            for k, f in enumerate(folds):
                S = [per_query_ndcg(np.load(cvens._path(cache, _name(kind, n), k, s)),
                                    c.qrels, list(f.val), (10,))[10] for s in seeds]
                per_fold.append(np.mean(S, axis=0))
            R[kind, n] = np.concatenate(per_fold)
    nq = len(R[KINDS[0], ns[0]])
    print(f"NDCG@10 on the {nq} held-out fold queries (seeds {', '.join(map(str, seeds))};"
          " single models)\n")
    print("| kind | " + " | ".join(f"n = {n}" for n in ns)
          + f" | gain {ns[0]} -> {ns[-1]} |\n|---|" + "---|" * (len(ns) + 1))
    for kind in KINDS:
        d, se, _, _ = paired_difference(R[kind, ns[-1]], R[kind, ns[0]])
        print(f"| {kind.upper()} | " + " | ".join(f"{R[kind, n].mean():.3f}" for n in ns)
              + f" | {d:+.3f} +- {se:.3f} |")
    print("\n| comparison | " + " | ".join(f"difference at n = {n}" for n in ns)
          + " | difference of gains |\n|---|" + "---|" * (len(ns) + 1))
    for a, b in (("lstm", "rnn"), ("lstm", "dssm"), ("rnn", "dssm")):
        cells = []
        for n in ns:
            d, se, _, _ = paired_difference(R[a, n], R[b, n])
            cells.append(f"{d:+.3f} +- {se:.3f}")
        ga = R[a, ns[-1]] - R[a, ns[0]]
        gb = R[b, ns[-1]] - R[b, ns[0]]
        d, se, _, _ = paired_difference(ga, gb)
        print(f"| {a.upper()} vs {b.upper()} | " + " | ".join(cells) + f" | {d:+.3f} +- {se:.3f} |")
    if figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        for kind in KINDS:
            ax.plot(ns, [R[kind, n].mean() for n in ns], marker="o", label=kind.upper())
        ax.set_xlabel("judged training queries")
        ax.set_ylabel(f"NDCG@10, {nq} held-out queries")
        ax.set_title("Cranfield, 5-fold CV (paired differences: see the table)",
                     fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(figure, dpi=120)
        print(f"\nwrote {figure}")


def main() -> None:
    flags = ("--n", "--seeds", "--figure")
    args = [a for i, a in enumerate(sys.argv[1:], 1)
            if not a.startswith("--") and sys.argv[i - 1] not in flags]

    def opt(flag: str, default: str | None) -> str | None:
        return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default

    ns = tuple(sorted(int(x) for x in str(opt("--n", "40,80")).split(",")))
    if not ns or ns[0] < 1 or ns[-1] > FULL:
        sys.exit(f"--n: numbers of training queries in [1, {FULL}], got {ns}")
    seeds = tuple(int(x) for x in str(opt("--seeds", "0")).split(","))
    cache = Path(args[0])
    cache.mkdir(parents=True, exist_ok=True)
    workers = int(args[1]) if len(args) > 1 else (os.cpu_count() or 1)
    _, folds = cvens._setup()
    todo = [(str(cache), _name(k, n), k, {}, f, s,
             None if n == FULL else subset(folds[f].train, n, f))
            for k in KINDS for n in ns for s in seeds for f in range(5)
            if not cvens._path(cache, _name(k, n), f, s).exists()]
    with Pool(workers, maxtasksperchild=1) as p:
        for line in p.imap_unordered(cvens.job, todo):
            print(line, flush=True)
    summary(cache, ns, seeds, opt("--figure", None))


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        raise SystemExit(0)
    main()
