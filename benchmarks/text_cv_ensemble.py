"""Cross-validated comparison of seed ensembles of the text encoders (issue 9).

For every kind (LSTM, RNN, DSSM), fold ``f`` of the 5 folds of the 100
training + validation queries (``fold_splits``, seed 7) and seed ``s`` in
0..2, one model is trained on the other 80 queries with the shipped member
recipe (the kind's recipe, 8 epochs, no early stopping); its cosine scores of
the fold's 20 queries are cached.  The summary compares, over the 100 queries,
the single models (mean over seeds) and the 3-seed ensembles (mean of the
three cosines) of each kind: mean NDCG@10 and paired differences.  The test
queries are never touched.

Usage::

    PYTHONPATH=python python benchmarks/text_cv_ensemble.py CACHE_DIR [WORKERS] \
        [--reuse-shipped] [--variant NAME:KIND:key=value,...] [--seeds 0,1,2]

``--reuse-shipped`` takes the (fold i, seed i) models, i < 3, from the shipped
ensembles (member i is exactly that model) instead of training them again.
``--variant`` (repeatable) adds a model, KIND's recipe with the given
``TextTrainConfig`` overrides (e.g. ``lstm-lr3:lstm:lr=3e-4``), to the
comparison.  ``--seeds 0`` trains and compares only the listed seeds (a
quicker screen of a variant: single models; the "ensemble" column then
averages the listed seeds).  Jobs already in ``CACHE_DIR`` are not run again.
"""

from __future__ import annotations

import os
import sys
from multiprocessing import Pool
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402

KINDS = ("lstm", "rnn", "dssm")
SEEDS = (0, 1, 2)


def _setup():  # type: ignore[no-untyped-def]
    from cscore.text.data import fold_splits, load_cranfield, split_queries

    c = load_cranfield()
    return c, fold_splits(split_queries(c), 5, seed=7)


def _path(cache: Path, name: str, fold: int, seed: int) -> Path:
    return cache / f"{name}-f{fold}-s{seed}.npy"


def parse_variant(spec: str) -> tuple[str, str, dict[str, object]]:
    """``NAME:KIND:key=value,...`` -> (name, kind, overrides); numbers or strings."""
    name, kind, kv = spec.split(":", 2)
    over: dict[str, object] = {}
    for item in filter(None, kv.split(",")):
        k, v = item.split("=", 1)
        try:
            over[k] = int(v) if v.lstrip("-").isdigit() else float(v)
        except ValueError:
            over[k] = v
    return name, kind, over


def job(a: tuple[str, str, str, dict, int, int] | tuple[str, str, str, dict, int, int,
                                                          tuple[int, ...] | None]) -> str:
    """Train (model, fold, seed) and cache its held-out cosine scores.

    An optional seventh element replaces the fold's training queries (None:
    the fold's own).
    """
    import torch

    from cscore.text.cranfield import model_scores, train_on_split
    from cscore.text.data import QuerySplit
    from cscore.text.recipes import MEMBER_EPOCHS, PAIRS, recipe

    cache, name, kind, over, fold, seed = Path(a[0]), a[1], a[2], a[3], a[4], a[5]
    train = a[6] if len(a) > 6 else None
    torch.set_num_threads(1)
    c, folds = _setup()
    s = folds[fold]
    if train is not None:
        s = QuerySplit(tuple(train), s.val, s.test)
    cfg = recipe(kind, **{"seed": seed, "progress": False, "max_epochs": MEMBER_EPOCHS,
                          "patience": None, **over})
    res = train_on_split(c, s, cfg, pairs=dict(PAIRS), seed=seed)
    np.save(_path(cache, name, fold, seed), model_scores(res.model, c, list(s.val)))
    return f"{name} fold {fold} seed {seed}: {res.seconds:.0f} s"


def reuse_shipped(cache: Path) -> None:
    """Cache (fold i, seed i), i < 3, from the shipped ensembles' members."""
    from cscore import text
    from cscore.text.cranfield import model_scores

    c, folds = _setup()
    for kind in KINDS:
        ens = text.pretrained(f"cranfield-{kind}")
        for i, m in enumerate(getattr(ens, "members", [])[:3]):
            assert m.info["split"]["val"] == list(folds[i].val)
            np.save(_path(cache, kind, i, i), model_scores(m, c, list(folds[i].val)))


def summary(cache: Path, names: tuple[str, ...] = KINDS,
            seeds: tuple[int, ...] = SEEDS) -> None:
    from cscore.text.metrics import paired_difference, per_query_ndcg

    c, folds = _setup()
    qs = [q for f in folds for q in f.val]
    single, ens = {}, {}
    for kind in names:
        per_seed, per_ens = [], []  # per fold: (seeds, queries) and (queries,) NDCG@10
        for k, f in enumerate(folds):
            S = [np.load(_path(cache, kind, k, s)) for s in seeds]
            q = list(f.val)
            per_seed.append([per_query_ndcg(X, c.qrels, q, (10,))[10] for X in S])
            per_ens.append(per_query_ndcg(np.mean(S, axis=0), c.qrels, q, (10,))[10])
        single[kind] = np.concatenate([np.mean(p, axis=0) for p in per_seed])
        ens[kind] = np.concatenate(per_ens)
        by_seed = [np.concatenate([p[i] for p in per_seed]).mean() for i in range(len(seeds))]
        line = f"{kind}: single models {single[kind].mean():.3f} (seeds " + ", ".join(
            f"{s}: {v:.3f}" for s, v in zip(seeds, by_seed)) + ")"
        if len(seeds) > 1:
            line += f", {len(seeds)}-seed ensemble {ens[kind].mean():.3f}"
        print(line)
    print(f"\n{len(qs)} queries; paired differences of NDCG@10 (mean +- s.e., wins/losses)\n")
    if len(seeds) > 1:
        print(f"| comparison | single models | {len(seeds)}-seed ensembles |\n|---|---|---|")
    else:
        print(f"| comparison | seed {seeds[0]} |\n|---|---|")
    pairs = [("lstm", "rnn"), ("lstm", "dssm"), ("rnn", "dssm")]
    pairs += [(n, k) for n in names[len(KINDS):] for k in KINDS]
    for a, b in pairs:
        cells = []
        for x, y in ((single[a], single[b]), (ens[a], ens[b]))[: 1 + (len(seeds) > 1)]:
            d, se, wins, losses = paired_difference(x, y)
            cells.append(f"{d:+.3f} +- {se:.3f} ({wins}/{losses})")
        print(f"| {a.upper()} vs {b.upper()} | " + " | ".join(cells) + " |")


def main() -> None:
    args = [a for i, a in enumerate(sys.argv[1:], 1)
            if not a.startswith("--") and sys.argv[i - 1] not in ("--variant", "--seeds")]
    seeds = SEEDS
    if "--seeds" in sys.argv:
        seeds = tuple(int(s) for s in sys.argv[sys.argv.index("--seeds") + 1].split(","))
    cache = Path(args[0])
    cache.mkdir(parents=True, exist_ok=True)
    workers = int(args[1]) if len(args) > 1 else (os.cpu_count() or 1)
    if "--reuse-shipped" in sys.argv:
        reuse_shipped(cache)
    models = [(k, k, {}) for k in KINDS]
    models += [parse_variant(sys.argv[i + 1]) for i, a in enumerate(sys.argv)
               if a == "--variant"]
    todo = [(str(cache), n, k, o, f, s) for n, k, o in models for f in range(5) for s in seeds
            if not _path(cache, n, f, s).exists()]
    with Pool(workers, maxtasksperchild=1) as p:
        for line in p.imap_unordered(job, todo):
            print(line, flush=True)
    summary(cache, tuple(n for n, _, _ in models), seeds)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        raise SystemExit(0)
    main()
