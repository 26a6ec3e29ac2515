"""5-fold cross-validation of text-encoder settings on Cranfield (issue 9).

The 100 training + validation queries of ``split_queries`` are cut into 5 folds
of 20 (seed 7); each job trains on the other 80 queries' judged pairs plus the
weak title / sentence pairs, with no early stopping, and records the fold's
validation NDCG@10 after every epoch.  The test queries are never touched.

Usage::

    PYTHONPATH=python python benchmarks/text_cv.py JOBS.json OUT.jsonl SECONDS [WORKERS]

``JOBS.json`` is a list of ``{"name", "kind", "over": {TextTrainConfig fields},
"pairs": {training_pairs arguments}, "fold": 0-4}``; one process per job, one
thread each; jobs still running after SECONDS are dropped.  The results of the
runs in ``benchmarks/results/text.md`` are in ``benchmarks/results/text-cv.jsonl``
(per-epoch fold scores; summarize with ``--summary OUT.jsonl``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from multiprocessing import Pool

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402


def folds_of():  # type: ignore[no-untyped-def]
    """Collection, split and the 5 fold splits of the 100 pooled queries."""
    from cscore.text.data import fold_splits, load_cranfield, split_queries

    c = load_cranfield()
    sp = split_queries(c)
    return c, sp, fold_splits(sp, 5, seed=7)


def job(j: dict) -> dict:
    """Train one (settings, fold) job; returns it with the per-epoch scores."""
    import torch

    from cscore.text.cranfield import train_on_split
    from cscore.text.recipes import recipe

    torch.set_num_threads(1)
    c, _, folds = folds_of()
    s = folds[j["fold"]]
    budget = min(j.get("max_seconds", 500), j["deadline"] - time.time() - 20)
    cfg = recipe(j["kind"], **{"patience": 99, "progress": False, "max_seconds": budget,
                               **j["over"]})
    t = time.time()
    try:
        pk = {"sentences_per_doc": 1, **j.get("pairs", {})}
        res = train_on_split(c, s, cfg, pairs=pk, seed=int(pk.pop("seed", 0)))
        h: object = [round(x["val_score"], 4) for x in res.history]
    except Exception as e:  # recorded, not fatal to the sweep
        h = repr(e)
    return {**j, "hist": h, "sec": round(time.time() - t, 1)}


def summary(paths: list[str]) -> None:
    """Mean fold score per epoch of every complete setting.

    Also the mean over epochs 6 and later (the plateau; the best single epoch
    is biased upwards by the maximum over epochs), which chose the recipes.
    """
    import collections

    by: dict[str, dict[int, list[float]]] = collections.defaultdict(dict)
    for p in paths:
        with open(p) as fh:
            for line in fh:
                r = json.loads(line)
                if isinstance(r["hist"], list):
                    by[r["name"]][r["fold"]] = r["hist"]
    for name, d in sorted(by.items()):
        if len(d) == 5:
            n = min(len(h) for h in d.values())
            m = np.array([d[f][:n] for f in range(5)]).mean(0)
            tail = f"  epochs 6+: {m[6:].mean():.3f}" if n > 7 else ""
            print(f"{name:14s} " + " ".join(f"{x:.3f}" for x in m)
                  + f"  best epoch {m.argmax()}: {m.max():.3f}" + tail)


def main() -> None:
    if sys.argv[1] == "--summary":
        summary(sys.argv[2:])
        return
    with open(sys.argv[1]) as fh:
        jobs = json.load(fh)
    out, deadline = sys.argv[2], time.time() + float(sys.argv[3])
    nw = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
    for j in jobs:
        j["deadline"] = deadline
    with Pool(nw, maxtasksperchild=1) as p, open(out, "a") as fo:
        its = p.imap_unordered(job, jobs)
        while True:
            try:
                r = its.next(timeout=max(1.0, deadline - time.time()))
            except StopIteration:
                break
            except Exception as e:
                print("stopped:", repr(e), flush=True)
                p.terminate()
                break
            r.pop("deadline", None)
            fo.write(json.dumps(r) + "\n")
            fo.flush()
            print(r["name"], r["fold"], r["hist"], r["sec"], flush=True)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        raise SystemExit(0)
    main()
