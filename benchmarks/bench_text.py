"""Cranfield retrieval with the shipped text models (thesis chapter 3).

Usage::

    PYTHONPATH=python python benchmarks/bench_text.py [--out-dir benchmarks/figures]

Prints the NDCG table on the 50 test queries (all 1400 documents, and BM25's
top 100 reranked), per-query paired differences of NDCG@10 (mean +- standard
error, wins/losses), every ensemble member's own NDCG@10 on the test queries
and on its held-out fold, the baselines on all 150 queries, and the time to
encode the 1400 documents with each model (wall and process CPU time).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from cscore import text
from cscore.text.cranfield import (
    bm25_scores,
    evaluate_methods,
    format_table,
    model_scores,
    selection_scores,
    tfidf_scores,
)
from cscore.text.metrics import mean_ndcg, paired_difference, per_query_ndcg
from cscore.text.recipes import plot_table


def paired(a: np.ndarray, b: np.ndarray) -> str:
    """``mean +- s.e. | wins/losses`` of the per-query differences a - b."""
    d, se, wins, losses = paired_difference(a, b)
    return f"{d:+.3f} +- {se:.3f} | {wins}/{losses}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out-dir", default=None, help="write text-ndcg.png there")
    args = ap.parse_args()
    c = text.load_cranfield()
    split = text.split_queries(c)
    models = {name.upper(): text.pretrained(f"cranfield-{name}")
              for name in ("lstm", "rnn", "dssm")}
    rows = evaluate_methods(c, split, models, interpolate_with="LSTM")
    print(f"## Test queries ({len(split.test)}), NDCG over all 1400 documents "
          f"and reranking BM25's top 100\n")
    print(format_table(rows))
    test = list(split.test)
    nd = {r.name: r.per_query[10] for r in rows}
    print("\n## Paired differences of NDCG@10 on the test queries\n")
    print("| comparison | difference | wins/losses |\n|---|---|---|")
    for a, b in (("BM25 + LSTM", "BM25"), ("LSTM", "TF-IDF cosine"), ("LSTM", "BM25"),
                 ("LSTM", "RNN"), ("LSTM", "DSSM"), ("RNN", "DSSM")):
        print(f"| {a} vs {b} | {paired(nd[a], nd[b])} |")
    print("\n## Ensemble members alone (NDCG@10, test queries)\n")
    for name, m in models.items():
        mem = getattr(m, "members", None)
        if mem:
            vals = [mean_ndcg(model_scores(x, c, test), c.qrels, test, (10,))[10] for x in mem]
            print(f"- {name}: ensemble {nd[name].mean():.3f}; members "
                  + ", ".join(f"{v:.3f}" for v in vals) + f" (mean {np.mean(vals):.3f})")
    held = {name: selection_scores(m, c, split) for name, m in models.items()}
    qs = {tuple(q) for q, _, how in held.values() if how.startswith("out-of-fold")}
    if len(qs) == 1:  # the same held-out queries for every kind: compare the members there
        oq = list(qs.pop())
        oof = {name: per_query_ndcg(S, c.qrels, oq, (10,))[10]
               for name, (_, S, _) in held.items()}
        print(f"\n## Members on their held-out folds ({len(oq)} queries no member scoring "
              "them trained on; NDCG@10)\n")
        print(", ".join(f"{name} {v.mean():.3f}" for name, v in oof.items()) + "\n")
        print("| comparison | difference | wins/losses |\n|---|---|---|")
        for a, b in (("LSTM", "RNN"), ("LSTM", "DSSM"), ("RNN", "DSSM")):
            print(f"| {a} vs {b} | {paired(oof[a], oof[b])} |")
    allq = list(range(len(c.queries)))
    print("\n## Baselines on all 150 queries (NDCG@10)\n")
    for name, S in (("BM25", bm25_scores(c, allq)), ("TF-IDF cosine", tfidf_scores(c, allq))):
        print(f"- {name}: {mean_ndcg(S, c.qrels, allq, (10,))[10]:.3f}")
    print("\n## Encoding the 1400 documents\n")
    for name, m in models.items():
        w0, p0 = time.perf_counter(), time.process_time()
        D = m.encode_documents(c.documents)
        w1, p1 = time.perf_counter(), time.process_time()
        assert D.dtype == np.float32
        size = m.info.get("file_bytes", 0)
        print(f"- {name}: {w1 - w0:.2f} s wall, {p1 - p0:.2f} s CPU, dim {m.dim}"
              + (f", {size} bytes" if size else ""))
    for name, m in models.items():
        tr = m.info.get("training", {})
        print(f"- {name} training: {tr.get('seconds')} s, best epoch {tr.get('best_epoch')}, "
              f"validation NDCG@10 {tr.get('best_val_score')}")
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        print(f"\nfigure: {plot_table(rows, out / 'text-ndcg.png')}")


if __name__ == "__main__":
    main()
