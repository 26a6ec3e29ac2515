"""``cscore text``: train, evaluate, search and analyze sentence-embedding models.

* ``cscore text train --kind lstm --out model.npz``
* ``cscore text eval --out-dir results/`` (a markdown table and a figure)
* ``cscore text search "query text"`` (top documents with scores)
* ``cscore text analyze "query text" --out-dir analysis/`` (the chapter's pictures)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "sentence embeddings for retrieval (LSTM-DSSM, thesis chapter 3): train, eval, search"

__all__ = ["HELP", "add_arguments", "run"]


#: The ``--data`` help of every action.
DATA_HELP = ("Cranfield directory (cran.all.1400, cran.qry, cranqrel); default: the copy "
             "shipped with cscore")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``text`` sub-subcommands to ``parser``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``cscore text`` parser, extended in place.
    """
    sub = parser.add_subparsers(dest="text_command", metavar="ACTION")
    _add_train(sub.add_parser("train", help="train a model on Cranfield (needs torch)",
                              description="train a sentence-embedding model on Cranfield "
                              "(needs torch); options left out take the shipped models' "
                              "recipe for --kind (cscore.text.recipes.recipe)"))

    p = sub.add_parser("eval", help="NDCG table and figure on the Cranfield test queries")
    p.add_argument("--model", action="append", default=None, metavar="NAME=MODEL",
                   help="display name and pretrained name or file (repeatable); default: "
                        "LSTM, RNN and DSSM shipped models")
    p.add_argument("--data", default=None, help=DATA_HELP)
    p.add_argument("--out-dir", default="text-eval",
                   help="where table and figure go (default text-eval)")

    p = sub.add_parser("search", help="rank the Cranfield documents for a query")
    p.add_argument("query", help="the query text (quote it)")
    p.add_argument("--model", default="cranfield-lstm",
                   help="pretrained name or model file (default cranfield-lstm)")
    p.add_argument("--top", type=int, default=10, help="documents shown (default 10)")
    p.add_argument("--data", default=None, help=DATA_HELP)

    p = sub.add_parser("analyze", help="input gates, cell activations, keywords, topic cells")
    p.add_argument("text", help="query (or, with --document, document) text")
    p.add_argument("--model", default="cranfield-lstm",
                   help="pretrained name or model file (default cranfield-lstm)")
    p.add_argument("--document", action="store_true", help="analyze with the document tower")
    p.add_argument("--out-dir", default="text-analysis",
                   help="where the pictures and tables go (default text-analysis)")
    p.add_argument("--topic-queries", type=int, default=20,
                   help="Cranfield queries added to the topic-cell table (default 20)")
    p.add_argument("--member", type=int, default=0,
                   help="for an ensemble: which member to analyze (default 0: the first)")


def _add_train(p: argparse.ArgumentParser) -> None:
    """Options of ``cscore text train`` (None: the recipe's value for ``--kind``)."""
    recipe = "default: the recipe's"
    p.add_argument("--kind", default="lstm", choices=["lstm", "rnn", "bilstm", "dssm"],
                   help="encoder: LSTM (the chapter's), plain RNN, bidirectional LSTM or the "
                        "bag-of-trigrams DSSM (default lstm)")
    p.add_argument("--out", required=True, help="model file to write (.npz) (required)")
    p.add_argument("--data", default=None, help=DATA_HELP)
    p.add_argument("--epochs", type=int, default=None,
                   help=f"maximum epochs ({recipe}: 12, rnn 10)")
    p.add_argument("--optimizer", choices=["nesterov", "adam"], default=None,
                   help=f"adam, or nesterov (the chapter's momentum schedule) ({recipe}: adam)")
    p.add_argument("--lr", type=float, default=None,
                   help=f"step size of the towers ({recipe}: 1e-4, dssm 2e-3)")
    p.add_argument("--embed-lr", type=float, default=None,
                   help=f"step size of the trigram embedding ({recipe}: 2e-3, rnn 1e-3, "
                        "dssm as --lr)")
    p.add_argument("--gate-lr", type=float, default=None,
                   help="LSTM: step size of the gates' weights (default: as --lr)")
    p.add_argument("--avg-eta", type=int, default=None,
                   help=f"polynomial-decay weight averaging, 0: off ({recipe}: 8)")
    p.add_argument("--n-cells", type=int, default=None,
                   help=f"cells of each tower, split over directions for bilstm; dssm: output "
                        f"size ({recipe}: 112, rnn 256)")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="wall-clock budget per member (default: none)")
    p.add_argument("--init", choices=["lsa", "lsa-rotated", "random"], default=None,
                   help=f"start of the embedding: latent semantic analysis of the training "
                        f"text, the same rotated, or random ({recipe}: lsa)")
    p.add_argument("--input-gain", type=float, default=None,
                   help="LSA start: multiplier of the towers' input weights (larger values "
                        "start the LSTM's cells in the saturating range of tanh) "
                        f"({recipe}: 1)")
    p.add_argument("--dropout", type=float, default=None,
                   help=f"word-vector dropout, in [0, 1) ({recipe}: 0)")
    p.add_argument("--pool", choices=["last", "mean", "last+bag"], default=None,
                   help="LSTM embedding: last output (the chapter's), mean output, or last "
                        f"output plus the mean word vector ({recipe}: last)")
    p.add_argument("--max-trigrams", type=int, default=None,
                   help=f"trigram vocabulary size ({recipe}: 6000, all of Cranfield's)")
    p.add_argument("--sentences-per-doc", type=int, default=None,
                   help="abstract sentence -> rest-of-document pairs per document and epoch "
                        f"({recipe}: 2)")
    p.add_argument("--hard-negatives", type=int, default=None,
                   help="add a hard negative to every pair, drawn from BM25's top N "
                        f"({recipe}: 0, none)")
    p.add_argument("--members", type=int, default=3,
                   help="ensemble members, each trained on 80 of the 100 training + "
                        "validation queries (a different fold held out) for a fixed number "
                        "of epochs (default 3: the shipped models); 1: one model on the "
                        "fixed 80 / 20 split with early stopping")
    p.add_argument("--jobs", type=int, default=None,
                   help="members trained at the same time, one process each (default: "
                        "as many as there are CPU cores); the result does not depend on it")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the initial weights, pairs and batches (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _train(args: argparse.Namespace) -> int:
    from ..text.recipes import train_cranfield

    if args.members < 1:
        raise ValueError(f"--members must be >= 1, got {args.members}")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    overrides = {k: getattr(args, k) for k in (
        "optimizer", "lr", "embed_lr", "gate_lr", "avg_eta", "n_cells", "max_seconds", "init",
        "input_gain", "dropout", "pool", "max_trigrams") if getattr(args, k) is not None}
    if args.epochs is not None:
        overrides["max_epochs"] = args.epochs
    pair_overrides = {k: getattr(args, k) for k in ("sentences_per_doc", "hard_negatives")
                      if getattr(args, k) is not None}
    done = train_cranfield(args.kind, args.out, data=args.data, n_members=args.members,
                           n_jobs=args.jobs, seed=args.seed, progress=not args.quiet,
                           overrides=overrides, pair_overrides=pair_overrides)
    if args.members == 1:
        res = done.results[0]
        print(f"wrote {args.out}: best epoch {res.best_epoch}, validation NDCG@10 "
              f"{res.model.info['training']['best_val_score']:.3f}, {res.seconds:.0f} s")
        return 0
    for i, r in enumerate(done.results):
        print(f"member {i}: epoch {r.best_epoch}, NDCG@10 on its held-out fold "
              f"{r.model.info['training']['best_val_score']:.3f}, {r.seconds:.0f} s")
    print(f"wrote {args.out}: {args.members} members, "
          f"{done.model.info['training']['seconds']:.0f} s "
          f"of training in all ({done.n_jobs} at a time)")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from ..text.recipes import evaluate_cranfield

    models = None
    if args.model:
        models = {}
        for s in args.model:
            name, _, m = s.partition("=")
            if not m:
                name, m = Path(s).stem, s
            models[name] = m
    done = evaluate_cranfield(models, args.out_dir, data=args.data)
    print(done.table)
    if done.figure is not None:
        print(f"wrote {done.table_path} and {done.figure}")
    else:
        print(f"wrote {done.table_path} (no figure: {done.figure_error})")
    return 0


def _search(args: argparse.Namespace) -> int:
    from ..text.cranfield import search
    from ..text.data import load_cranfield
    from ..text.pretrained import resolve_model

    if args.top < 1:
        raise ValueError(f"--top must be >= 1, got {args.top}")
    model = resolve_model(args.model)
    hits = search(model, args.query, top_k=args.top, collection=load_cranfield(args.data))
    if not model.words(args.query):
        print("note: no word of the query is known to the model; all scores are 0")
    for h in hits:
        print(f"{h.rank:3d}  {h.score:+.3f}  doc {h.doc_id:4d}  {h.title[:90]}")
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from ..text.analysis import write_cranfield_analysis
    from ..text.pretrained import resolve_model

    model = resolve_model(args.model)
    members = getattr(model, "members", None)
    if members is not None:
        if not 0 <= args.member < len(members):
            raise ValueError(f"--member must be in [0, {len(members)}), got {args.member}")
        print(f"analyzing member {args.member} of the {len(members)}-member ensemble")
    paths = write_cranfield_analysis(
        model, args.text, args.out_dir, side="document" if args.document else "query",
        member=args.member, n_topic_queries=args.topic_queries)
    for name, p in paths.items():
        print(f"{name}: {p}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Dispatch ``cscore text <action>``; return the exit status."""
    actions = {"train": _train, "eval": _eval, "search": _search, "analyze": _analyze}
    action = getattr(args, "text_command", None)
    if action not in actions:
        print("cscore text: error: name an action: cscore text {train,eval,search,analyze} "
              "...  (cscore text -h)", file=sys.stderr)
        return 2
    return actions[action](args)
