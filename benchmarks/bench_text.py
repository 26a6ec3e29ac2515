"""Cranfield retrieval with the shipped text models (thesis chapter 3).

Usage::

    PYTHONPATH=python python benchmarks/bench_text.py [--out-dir benchmarks/figures]

Prints the NDCG table on the 50 test queries (all 1400 documents, and BM25's
top 100 reranked), the same on all 150 queries for the baselines, and the time
to encode the 1400 documents with each model (wall and process CPU time).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from cscore import text
from cscore.text.cli import plot_table
from cscore.text.cranfield import (
    bm25_scores,
    evaluate_methods,
    format_table,
    tfidf_scores,
)
from cscore.text.metrics import mean_ndcg


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
