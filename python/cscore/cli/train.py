"""``cscore train``: train an LSTM-CS model and write a model file.

Examples::

    cscore train --data mnist --mnist-dir ../shared/data/mnist -M 72 --out m72.npz
    cscore train --data folder --images-dir photos/ --transform dct -M 32 --out img.npz
    cscore train --data demo --cells 256 --out demo.npz
    cscore train --data demo --arch blstm --cells 128 --out demo-blstm.npz
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``cscore train``.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The subcommand's parser, extended in place.
    """
    p.add_argument("--out", type=Path, required=True, help="model file to write (.npz)")
    p.add_argument("--data", choices=("mnist", "folder", "demo"), default="mnist",
                   help="training signals (default mnist)")
    p.add_argument("--mnist-dir", type=Path, default=None,
                   help="folder with images-idx3-ubyte(.gz) and labels-idx1-ubyte(.gz)")
    p.add_argument("--n-train", type=int, default=None,
                   help="MNIST: first images used (training + validation); default 75%%")
    p.add_argument("--images-dir", type=Path, default=None, help="folder of natural images")
    p.add_argument("--image-size", type=int, default=64, help="natural images: resized side")
    p.add_argument("--transform", choices=("dct", "haar"), default="dct")
    p.add_argument("-M", type=int, default=None, help="measurements (default N/2)")
    p.add_argument("-L", type=int, default=4, help="channels per problem (default 4)")
    p.add_argument("--matrix-seed", type=int, default=0, help="seed of the sensing matrix")
    p.add_argument("--k-min", type=int, default=None, help="smallest training sparsity")
    p.add_argument("--k-max", type=int, default=None, help="largest training sparsity")
    p.add_argument("--n-steps", type=int, default=None, help="greedy steps per problem")
    p.add_argument("--sigma", type=float, default=0.005, help="noise std (default 0.005)")
    p.add_argument("--arch", choices=("lstm", "blstm", "nwsomp", "cdsn"), default="lstm",
                   help="lstm: LSTM-CS (default); blstm: bidirectional LSTM-CS; nwsomp: "
                        "NWSOMP; cdsn: CDSN-CS (numpy, no torch)")
    p.add_argument("--cells", type=int, default=512,
                   help="LSTM cells, per direction for blstm (default 512)")
    p.add_argument("--cell", choices=("paper", "lstm"), default="paper")
    p.add_argument("--optimizer", choices=("adam", "nesterov"), default="adam")
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=10, help="maximum epochs (default 10)")
    p.add_argument("--patience", type=int, default=2)
    p.add_argument("--problems-per-epoch", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    from .train_learned import add_arguments as add_learned_arguments

    add_learned_arguments(p)


def _mnist(args: argparse.Namespace):
    from ..datasets import load_mnist, mnist_mmv_problems, mnist_tuples

    if args.mnist_dir is None:
        raise ValueError("--data mnist needs --mnist-dir")
    d = args.mnist_dir

    def find(stem: str) -> Path:
        for name in (f"{stem}.gz", stem):
            if (d / name).exists():
                return d / name
        raise FileNotFoundError(f"no {stem}(.gz) in {d}")

    images, labels = load_mnist(find("images-idx3-ubyte"), find("labels-idx1-ubyte"))
    assert labels is not None
    n = args.n_train or int(0.75 * images.shape[0])
    n_val = max(1, n // 10)
    digits = tuple(range(args.L))
    tr = mnist_tuples(labels, np.arange(0, n - n_val), digits, n_tuples=2500, seed=args.seed)
    va = mnist_tuples(labels, np.arange(n - n_val, n), digits)
    from ..problem import ProblemSpec

    spec = {"N": 144, "block_size": 12, "transform": "none", "image_size": 24,
            "dataset": f"mnist (first {n} images; last {n_val} of them for validation)"}
    return (mnist_mmv_problems(images, tr, None), mnist_mmv_problems(images, va, None), spec,
            ProblemSpec, (5, 32))


def _images(args: argparse.Namespace):
    from ..datasets import image_mmv_problems, load_image_folder

    if args.images_dir is None:
        raise ValueError("--data folder needs --images-dir")
    imgs, names = load_image_folder(args.images_dir, args.image_size)
    n_val = max(1, len(names) // 10)
    if len(names) - n_val < 1:
        raise ValueError("need at least 2 images (training and validation)")
    kw = {"block_size": 8, "transform": args.transform, "k": None, "L": args.L}
    from ..problem import ProblemSpec

    spec = {"N": 64, "block_size": 8, "transform": args.transform,
            "levels": 3 if args.transform == "haar" else 0, "image_size": args.image_size,
            "dataset": f"{args.images_dir} ({len(names)} images, last {n_val} validation)"}
    return (image_mmv_problems(imgs[:-n_val], **kw), image_mmv_problems(imgs[-n_val:], **kw),
            spec, ProblemSpec, (2, 20))


def _demo(args: argparse.Namespace):
    from ..datasets import image_mmv_problems
    from ..datasets.demo import DEMO_IMAGES, demo_images
    from ..problem import ProblemSpec

    imgs = demo_images(256)
    train = np.stack([imgs[n] for n, s in DEMO_IMAGES if s == "train"])
    S = image_mmv_problems(train, block_size=8, transform="dct", k=None, L=args.L)
    n_val = round(0.1 * S.shape[0])
    spec = {"N": 64, "block_size": 8, "transform": "dct", "image_size": 256,
            "dataset": "pywt.data camera + ascent (demo set)"}
    return S[:-n_val], S[-n_val:], spec, ProblemSpec, (2, 20)


def _check_args(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` naming the option for arguments that cannot work."""
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
    parent = Path(args.out).expanduser().resolve().parent
    if not parent.is_dir():
        raise FileNotFoundError(f"cannot write {args.out}: folder {parent} does not exist")


def run(args: argparse.Namespace) -> int:
    """Run ``cscore train``.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options (see :func:`add_arguments`).

    Returns
    -------
    int
        0 on success.

    Raises
    ------
    ImportError
        PyTorch is not installed (checked first).
    ValueError, FileNotFoundError
        Unusable options or data (``cscore`` reports them with exit status 2).
    """
    from .._torch import import_torch

    if args.arch != "cdsn":
        import_torch()  # a clear ImportError before any work when PyTorch is missing
    _check_args(args)

    from ..datasets import paper_matrix
    from ..decoders.learned.weights import save_model_file
    from ..training.lstm import TrainConfig, fit_lstm_cs, training_info

    S_tr, S_va, spec_kw, ProblemSpec, k_default = {"mnist": _mnist, "folder": _images,
                                                   "demo": _demo}[args.data](args)
    N = spec_kw.pop("N")
    M = args.M or N // 2
    if M > N:
        raise ValueError(f"-M ({M}) must not exceed N = {N} (atoms per block)")
    A = paper_matrix(M, N, seed=args.matrix_seed)
    k_range = (args.k_min or k_default[0], args.k_max or k_default[1])
    if args.arch in ("nwsomp", "cdsn"):
        from .train_learned import train_learned

        return train_learned(args, S_tr, S_va, A, ProblemSpec(M=M, N=N, L=args.L, **spec_kw),
                             k_range)
    cfg = TrainConfig(n_cells=args.cells, arch=args.arch, cell=args.cell,
                      optimizer=args.optimizer, lr=args.lr,
                      batch_size=args.batch_size, max_epochs=args.epochs,
                      patience=args.patience, seed=args.seed, n_threads=args.threads,
                      progress=not args.quiet)
    res = fit_lstm_cs(S_tr, S_va, A, n_steps=args.n_steps, k_range=k_range, sigma=args.sigma,
                      problems_per_epoch=args.problems_per_epoch, config=cfg)
    spec = ProblemSpec(M=M, N=N, L=args.L, **spec_kw)
    info = {"sensing_matrix": f"paper_matrix({M}, {N}, seed={args.matrix_seed})",
            "command": "cscore train"}
    save_model_file(args.out, res.weights, A, spec, training_info(res, info))
    best = res.history[res.best_epoch - 1] if res.best_epoch else {}
    print(f"wrote {args.out}: best epoch {res.best_epoch} "
          f"(val loss {best.get('val_loss', float('nan')):.4f}, "
          f"val accuracy {best.get('val_acc', float('nan')):.3f}), {res.seconds:.0f} s")
    return 0


HELP = "train an LSTM-CS model (needs PyTorch)"
