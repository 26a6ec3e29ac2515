"""``cscore train --arch nwsomp|cdsn``: the learned-decoder half of ``cscore train``."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ..problem import ProblemSpec

__all__ = ["add_arguments", "train_learned"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options only the learned decoders use (added to ``cscore train``).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The ``train`` parser, extended in place.
    """
    p.add_argument("--window", type=int, default=5, help="cdsn: convolution window (odd)")
    p.add_argument("--modules", type=int, default=3, help="cdsn: stacked modules")
    p.add_argument("--hidden", type=int, default=None,
                   help="nwsomp/cdsn: hidden units (default 512 / 64)")
    p.add_argument("--rbm-epochs", type=int, default=10, help="cdsn: CD-1 pretraining epochs")
    p.add_argument("--fista-iters", type=int, default=400, help="cdsn: FISTA iterations/module")


def train_learned(args: argparse.Namespace, S_tr: np.ndarray, S_va: np.ndarray, A: np.ndarray,
                  spec: ProblemSpec, k_range: tuple[int, int]) -> int:
    """Train an NWSOMP or CDSN-CS model from prepared ground truths and save it.

    Parameters
    ----------
    args : argparse.Namespace
        ``cscore train``'s options (``args.arch`` is "nwsomp" or "cdsn").
    S_tr, S_va : ndarray (P, N, L)
        Training and validation ground truths.
    A : ndarray (M, N)
        The sensing matrix.
    spec : ProblemSpec
        What the model is for.
    k_range : (int, int)
        Sparsities drawn for training problems.

    Returns
    -------
    int
        0 on success.
    """
    info: dict[str, Any] = {"command": f"cscore train --arch {args.arch}",
                            "sensing_matrix": f"paper_matrix({spec.M}, {spec.N}, "
                                              f"seed={args.matrix_seed})"}
    if args.arch == "nwsomp":
        from ..decoders.learned import NWSOMP
        from ..training.nwsomp import fit_nwsomp

        res = fit_nwsomp(S_tr, S_va, A, n_hidden=args.hidden or 512, n_steps=args.n_steps,
                         k_range=k_range, sigma=args.sigma,
                         problems_per_epoch=args.problems_per_epoch, epochs=args.epochs,
                         lr=args.lr or 1e-3, batch_size=args.batch_size,
                         patience=args.patience, seed=args.seed, n_threads=args.threads,
                         verbose=not args.quiet)
        info["training"] = {**res.settings, "best_epoch": res.best_epoch,
                            "seconds": round(res.seconds, 1), "history": res.history}
        w = res.weights
        NWSOMP(w["W1"], w["b1"], w["W2"], w["b2"], A, spec, info).save(args.out)
        print(f"wrote {args.out}: best epoch {res.best_epoch}, {res.seconds:.0f} s")
        return 0
    from ..decoders.learned import CDSNCS
    from ..training.cdsn import fit_cdsn

    if args.window < 1 or args.window % 2 == 0:
        raise ValueError(f"--window must be a positive odd int, got {args.window}")
    cres = fit_cdsn(S_tr, S_va, A, window=args.window, n_modules=args.modules,
                    n_hidden=args.hidden or 64, n_steps=args.n_steps, k_range=k_range,
                    sigma=args.sigma, n_problems=args.problems_per_epoch,
                    rbm_epochs=args.rbm_epochs, n_iter=args.fista_iters,
                    lr=args.lr or 200.0, seed=args.seed, verbose=not args.quiet)
    info["training"] = {**cres.settings, "seconds": round(cres.seconds, 1),
                        "history": cres.history[-args.modules:]}
    CDSNCS(cres.modules, cres.window, A, spec, info).save(args.out)
    print(f"wrote {args.out}: {cres.seconds:.0f} s")
    return 0
