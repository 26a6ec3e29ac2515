"""``cscore train``: train a learned decoder and write a model file.

Examples::

    cscore train --data mnist --mnist-dir ../shared/data/mnist -M 72 --out m72.npz
    cscore train --data folder --images-dir photos/ --transform dct -M 32 --out img.npz
    cscore train --data demo --cells 256 --out demo.npz
    cscore train --data demo --arch blstm --cells 128 --out demo-blstm.npz
    cscore train --data demo --arch nwsomp --hidden 512 --out demo-nw.npz
    cscore train --data demo --arch cdsn -L 8 --window 5 --out demo-cdsn.npz

Argument parsing and printing only: the data sources are
:mod:`cscore.training.data`, the training :mod:`cscore.training.recipes`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``cscore train``.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser, extended in place.
    """
    p.add_argument("--out", type=Path, required=True,
                   help="model file to write (.npz) (required)")
    p.add_argument("--data", choices=("mnist", "folder", "demo"), default="mnist",
                   help="training signals (default mnist)")
    p.add_argument("--mnist-dir", type=Path, default=None,
                   help="folder with images-idx3-ubyte(.gz) and labels-idx1-ubyte(.gz) "
                        "(required with --data mnist; default: none)")
    p.add_argument("--n-train", type=int, default=None,
                   help="MNIST: first images used (training + validation); default 75%%")
    p.add_argument("--images-dir", type=Path, default=None,
                   help="folder of natural images (required with --data folder; "
                        "default: none)")
    p.add_argument("--image-size", type=int, default=64,
                   help="natural images: resized side (default 64)")
    p.add_argument("--transform", choices=("dct", "haar"), default="dct",
                   help="natural images: block transform (default dct; haar: 3 levels)")
    p.add_argument("-M", type=int, default=None, help="measurements (default N/2)")
    p.add_argument("-L", type=int, default=4, help="channels per problem (default 4)")
    p.add_argument("--matrix-seed", type=int, default=0,
                   help="seed of the sensing matrix (default 0)")
    p.add_argument("--k-min", type=int, default=None,
                   help="smallest training sparsity (default: mnist 5, "
                        "images 2)")
    p.add_argument("--k-max", type=int, default=None,
                   help="largest training sparsity (default: mnist 32, "
                        "images 20)")
    p.add_argument("--n-steps", type=int, default=None,
                   help="greedy steps per problem (default M/4, the "
                        "paper's)")
    p.add_argument("--sigma", type=float, default=0.005, help="noise std (default 0.005)")
    p.add_argument("--arch", choices=("lstm", "blstm", "nwsomp", "cdsn"), default="lstm",
                   help="lstm: LSTM-CS (default); blstm: bidirectional LSTM-CS; nwsomp: "
                        "NWSOMP; cdsn: CDSN-CS (numpy, no torch)")
    p.add_argument("--cells", type=int, default=512,
                   help="LSTM cells, per direction for blstm (default 512)")
    p.add_argument("--cell", choices=("paper", "lstm"), default="paper",
                   help="lstm/blstm: paper = the paper's cell without forget gate (default); "
                        "lstm = standard cell with forget gate")
    p.add_argument("--optimizer", choices=("adam", "nesterov"), default="adam",
                   help="lstm/blstm: adam (default, step halved when validation stalls) or "
                        "nesterov (the paper's recipe: summed gradients, momentum schedule)")
    p.add_argument("--lr", type=float, default=None,
                   help="step size (default: lstm/blstm 1e-3 with adam, 3e-4 with nesterov; "
                        "nwsomp 1e-3; cdsn 200)")
    p.add_argument("--batch-size", type=int, default=128,
                   help="lstm/blstm/nwsomp: sequences per minibatch (default 128)")
    p.add_argument("--epochs", type=int, default=10, help="maximum epochs (default 10)")
    p.add_argument("--patience", type=int, default=2,
                   help="lstm/blstm/nwsomp: epochs without validation improvement before "
                        "stopping (default 2)")
    p.add_argument("--problems-per-epoch", type=int, default=None,
                   help="random training problems per epoch (default: all); cdsn: problems "
                        "drawn once")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of training: initial weights, minibatch order, sparsities, "
                        "noise (and MNIST pairings); default 0")
    p.add_argument("--threads", type=int, default=None,
                   help="lstm/blstm/nwsomp: torch CPU threads (default: torch's choice)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or training log")
    p.add_argument("--window", type=int, default=5,
                   help="cdsn: convolution window, odd (default 5)")
    p.add_argument("--modules", type=int, default=3, help="cdsn: stacked modules (default 3)")
    p.add_argument("--hidden", type=int, default=None,
                   help="nwsomp/cdsn: hidden units (default 512 / 64)")
    p.add_argument("--rbm-epochs", type=int, default=10,
                   help="cdsn: CD-1 pretraining epochs (default 10)")
    p.add_argument("--fista-iters", type=int, default=400,
                   help="cdsn: FISTA iterations per module (default 400)")


def _check_args(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` naming the option for arguments that cannot work."""
    from ..training.data import TRAINING_SOURCES

    for opt, v in (("-L", args.L), ("--cells", args.cells), ("--batch-size", args.batch_size),
                   ("--epochs", args.epochs), ("--image-size", args.image_size)):
        if v < 1:
            raise ValueError(f"{opt} must be >= 1, got {v}")
    for opt, v in (("-M", args.M), ("--k-min", args.k_min), ("--k-max", args.k_max),
                   ("--n-steps", args.n_steps), ("--n-train", args.n_train),
                   ("--problems-per-epoch", args.problems_per_epoch),
                   ("--threads", args.threads)):
        if v is not None and v < 1:
            raise ValueError(f"{opt} must be >= 1, got {v}")
    if args.patience < 0:
        raise ValueError(f"--patience must be >= 0, got {args.patience}")
    if not np.isfinite(args.sigma) or args.sigma < 0:
        raise ValueError(f"--sigma must be finite and >= 0, got {args.sigma:g}")
    if args.lr is not None and (not np.isfinite(args.lr) or args.lr <= 0):
        raise ValueError(f"--lr must be > 0, got {args.lr:g}")
    if args.k_min is not None and args.k_max is not None and args.k_min > args.k_max:
        raise ValueError(f"--k-min ({args.k_min}) must not exceed --k-max ({args.k_max})")
    N = TRAINING_SOURCES[args.data].N
    if args.M is not None and args.M > N:
        raise ValueError(f"-M ({args.M}) must not exceed N = {N} (atoms per block)")
    if args.data == "mnist" and args.mnist_dir is None:
        raise ValueError("--data mnist needs --mnist-dir")
    if args.data == "folder" and args.images_dir is None:
        raise ValueError("--data folder needs --images-dir")
    if args.arch == "cdsn":
        _check_cdsn_args(args)
    parent = Path(args.out).expanduser().resolve().parent
    if not parent.is_dir():
        raise FileNotFoundError(f"cannot write {args.out}: folder {parent} does not exist")


def _check_cdsn_args(args: argparse.Namespace) -> None:
    """The options only ``--arch cdsn`` uses."""
    if args.window < 1 or args.window % 2 == 0:
        raise ValueError(f"--window must be a positive odd int, got {args.window}")
    for opt, v in (("--modules", args.modules), ("--hidden", args.hidden),
                   ("--fista-iters", args.fista_iters)):
        if v is not None and v < 1:
            raise ValueError(f"{opt} must be >= 1, got {v}")
    if args.rbm_epochs < 0:
        raise ValueError(f"--rbm-epochs must be >= 0, got {args.rbm_epochs}")


def _load_data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, Any]:
    """``(S_train, S_val, spec)`` of the ``--data`` source."""
    from ..training import data

    if args.data == "mnist":
        if args.mnist_dir is None:
            raise ValueError("--data mnist needs --mnist-dir")
        return data.mnist_training_data(args.mnist_dir, args.M, L=args.L,
                                        n_images=args.n_train, seed=args.seed)
    if args.data == "folder":
        if args.images_dir is None:
            raise ValueError("--data folder needs --images-dir")
        return data.folder_training_data(args.images_dir, args.M, L=args.L,
                                         image_size=args.image_size, transform=args.transform)
    return data.demo_training_data(args.M, L=args.L)


def _train(args: argparse.Namespace, S_tr: np.ndarray, S_va: np.ndarray, A: np.ndarray,
           spec: Any, k_range: tuple[int, int], info: dict[str, Any]) -> tuple[Any, str]:
    """Train the ``--arch`` model; return it and the summary printed after "wrote FILE: "."""
    from ..training import recipes

    common = {"n_steps": args.n_steps, "k_range": k_range, "sigma": args.sigma}
    if args.arch == "nwsomp":
        nwsomp, nres = recipes.train_nwsomp_model(
            S_tr, S_va, A, spec, info=info, n_hidden=args.hidden or 512,
            problems_per_epoch=args.problems_per_epoch, epochs=args.epochs,
            lr=args.lr or 1e-3, batch_size=args.batch_size, patience=args.patience,
            seed=args.seed, n_threads=args.threads, verbose=not args.quiet, **common)
        return nwsomp, f"best epoch {nres.best_epoch}, {nres.seconds:.0f} s"
    if args.arch == "cdsn":
        cdsn, cres = recipes.train_cdsn_model(
            S_tr, S_va, A, spec, info=info, history_entries=args.modules, window=args.window,
            n_modules=args.modules, n_hidden=args.hidden or 64,
            n_problems=args.problems_per_epoch, rbm_epochs=args.rbm_epochs,
            n_iter=args.fista_iters, lr=args.lr or 200.0, seed=args.seed,
            verbose=not args.quiet, **common)
        return cdsn, f"{cres.seconds:.0f} s"
    from ..training.lstm import TrainConfig

    cfg = TrainConfig(n_cells=args.cells, arch=args.arch, cell=args.cell,
                      optimizer=args.optimizer, lr=args.lr,
                      batch_size=args.batch_size, max_epochs=args.epochs,
                      patience=args.patience, seed=args.seed, n_threads=args.threads,
                      progress=not args.quiet)
    model, res = recipes.train_lstm_model(S_tr, S_va, A, spec, config=cfg, info=info,
                                          problems_per_epoch=args.problems_per_epoch, **common)
    best = res.history[res.best_epoch - 1] if res.best_epoch else {}
    return model, (f"best epoch {res.best_epoch} "
                   f"(val loss {best.get('val_loss', float('nan')):.4f}, "
                   f"val accuracy {best.get('val_acc', float('nan')):.3f}), {res.seconds:.0f} s")


def _interrupted(args: argparse.Namespace, model: Any, best_epoch: int) -> int:
    """Ctrl-C during training: save the best model so far (if any), say so in one line."""
    if model is None:
        print("cscore train: interrupted before an epoch improved on the start; "
              f"nothing written to {args.out}", file=sys.stderr)
    else:
        model.save(args.out)
        print(f"cscore train: interrupted; wrote the best model so far (epoch {best_epoch}) "
              f"to {args.out}", file=sys.stderr)
    return 130


def run(args: argparse.Namespace) -> int:
    """Run ``cscore train``.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options (see :func:`add_arguments`).

    Returns
    -------
    int
        0 on success; 130 when interrupted (Ctrl-C), after saving the best
        model validated so far to ``--out``.

    Raises
    ------
    ImportError
        PyTorch is not installed (checked after the options; ``--arch cdsn``
        needs none).
    ValueError, FileNotFoundError
        Unusable options or data (``cscore`` reports them with exit status 2).
    """
    from .._torch import import_torch
    from ..training.interrupt import TrainingInterrupted

    _check_args(args)  # option errors first: they need no PyTorch
    if args.arch != "cdsn":
        import_torch()  # a clear ImportError before any work when PyTorch is missing

    from ..datasets import paper_matrix
    from ..training.data import TRAINING_SOURCES

    S_tr, S_va, spec = _load_data(args)
    A = paper_matrix(spec.M, spec.N, seed=args.matrix_seed)
    k_default = TRAINING_SOURCES[args.data].k_range
    k_range = (args.k_min or k_default[0], args.k_max or k_default[1])
    command = "cscore train"  # the LSTM kinds' files say only that
    if args.arch in ("nwsomp", "cdsn"):
        command += f" --arch {args.arch}"
    info = {"command": command,
            "sensing_matrix": f"paper_matrix({spec.M}, {spec.N}, seed={args.matrix_seed})"}
    try:
        model, summary = _train(args, S_tr, S_va, A, spec, k_range, info)
    except TrainingInterrupted as stop:
        return _interrupted(args, stop.model, stop.best_epoch)
    model.save(args.out)
    print(f"wrote {args.out}: {summary}")
    return 0


HELP = "train a learned decoder: LSTM-CS, BLSTM-CS (need PyTorch), NWSOMP or CDSN-CS"
