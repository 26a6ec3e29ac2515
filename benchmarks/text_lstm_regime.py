"""How the text encoders use word order and their nonlinearity (issue 9).

Prints, for the shipped Cranfield ensembles (every member):

* order: the mean cosine between a document's embedding and the embedding of
  the same words read in reverse order, and of its second half alone;
* LSTM cells: the median ``|c_T|`` (cell state after the last word) over the
  documents and over the queries, and the share above 1, where the cell's
  ``tanh`` starts to bend;
* LSTM gates: the mean input and output gate activations and their spread
  over the words (per cell, averaged over cells), the smallest forget gate;
* the LSA start (before any update) of each kind at several ``input_gain``
  values: NDCG@10 on the 100 training + validation queries.

Usage::

    PYTHONPATH=python python benchmarks/text_lstm_regime.py
"""

from __future__ import annotations

import os
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402

GAINS = {"lstm": (1.0, 3.0, 10.0, 30.0), "rnn": (1.0, 3.0, 10.0), "dssm": (1.0, 3.0, 10.0)}


def order_and_cells() -> list[dict[str, list[dict[str, np.ndarray]]]]:
    """Print the order and cell table; return each LSTM member's per-text traces."""
    from cscore import text

    c = text.load_cranfield()
    lstm_traces = []
    print("| model, member | cos(doc, reversed doc) | cos(doc, second half) "
          "| median abs c_T: documents / queries | share abs c_T > 1: documents |")
    print("|---|---|---|---|---|")
    for kind in ("lstm", "rnn", "dssm"):
        for i, m in enumerate(text.pretrained(f"cranfield-{kind}").members):
            docs = [d for d in c.documents if m.words(d)]  # 2 have no known trigram
            A = m.encode(docs, "document", normalize=True)
            words = [m.words(d) for d in docs]
            R = m.encode([" ".join(w[::-1]) for w in words], "document", normalize=True)
            H = m.encode([" ".join(w[len(w) // 2:]) for w in words], "document",
                         normalize=True)
            cells = "| |"
            if kind == "lstm":
                tr = {side: [m.trace(t, side=side)[1] for t in texts if m.words(t)]
                      for side, texts in (("document", docs), ("query", c.queries))}
                lstm_traces.append(tr)
                cd, cq = (np.concatenate([t["cell"][-1:] for t in tr[side]])
                          for side in ("document", "query"))
                cells = (f"| {np.median(np.abs(cd)):.3f} / {np.median(np.abs(cq)):.3f} "
                         f"| {np.mean(np.abs(cd) > 1):.3f} |")
            print(f"| {kind.upper()} {i} | {np.mean(np.sum(A * R, 1)):.3f} "
                  f"| {np.mean(np.sum(A * H, 1)):.3f} {cells}")
    return lstm_traces


def gates(lstm_traces: list[dict[str, list[dict[str, np.ndarray]]]]) -> None:
    """Print the gate table from the LSTM members' traces."""
    print("\n| LSTM member, side | input gate: mean, std over words | forget gate: min "
          "| output gate: mean, std over words |")
    print("|---|---|---|---|")
    for i, traces in enumerate(lstm_traces):
        for side, tr in traces.items():
            g = {k: np.concatenate([t[k] for t in tr])
                 for k in ("input_gate", "forget_gate", "output_gate")}
            print(f"| {i}, {side} | {g['input_gate'].mean():.3f}, "
                  f"{g['input_gate'].std(0).mean():.3f} | {g['forget_gate'].min():.4f} | "
                  f"{g['output_gate'].mean():.3f}, {g['output_gate'].std(0).mean():.3f} |")


def lsa_starts() -> None:
    from cscore.text.cranfield import train_on_split
    from cscore.text.data import QuerySplit, load_cranfield, split_queries
    from cscore.text.recipes import PAIRS, recipe

    c = load_cranfield()
    s = split_queries(c)
    probe = QuerySplit(train=s.train, val=s.train + s.val, test=s.test)
    print("\n| kind | input_gain | NDCG@10 of the LSA start, 100 train + val queries |")
    print("|---|---|---|")
    for kind, gains in GAINS.items():
        for g in gains:
            # max_seconds ~ 0: no update is made, history[0] is the start's score
            cfg = recipe(kind, input_gain=g, max_seconds=1e-9, patience=None,
                         progress=False)
            res = train_on_split(c, probe, cfg, pairs=dict(PAIRS))
            print(f"| {kind.upper()} | {g:g} | {res.history[0]['val_score']:.3f} |",
                  flush=True)


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        raise SystemExit(0)
    gates(order_and_cells())
    lsa_starts()
