"""The paper's Fig. 4.8: phase transition on MNIST, LSTM-CS included.

For each ``m / n`` (n = 144 pixels of a 12 x 12 block) and each sparsity k,
decode the held-out digit problems; a point ``(m/n, k/m)`` is a success when at
least 90% of the problems have NMSE <= 0.6 (the thesis' criterion).  LSTM-CS
needs a model for every M: :func:`small_mnist_model` trains a small one on the
fly (PyTorch) and caches it, so a second run reuses it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from ..metrics import nmse_per_item
from .decoders import decoder_names, needs_model, run_decoder, uses_stopping_rule
from .problems import heldout_mnist
from .tally import WarningTally

__all__ = [
    "FIG48_RATIOS",
    "check_mnist_phase_data",
    "default_cache_dir",
    "mnist_phase",
    "small_mnist_model",
    "small_model_decoder",
]

#: The thesis' m/n values (eq. 4.18).
FIG48_RATIOS = (0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50)


def default_cache_dir() -> Path:
    """Where trained bench models are cached: ``$CSCORE_CACHE`` or ``~/.cache/cscore``.

    Returns
    -------
    pathlib.Path
        ``<cache>/bench-models``.
    """
    root = os.environ.get("CSCORE_CACHE") or os.environ.get("XDG_CACHE_HOME")
    base = Path(root) if root else Path.home() / ".cache"
    if not os.environ.get("CSCORE_CACHE"):
        base = base / "cscore"
    return base / "bench-models"


def _mnist_files(data_dir: Path) -> tuple[Path, Path]:
    imgs = sorted(data_dir.glob("*images-idx3-ubyte*"))
    labs = sorted(data_dir.glob("*labels-idx1-ubyte*"))
    if not imgs or not labs:
        raise FileNotFoundError(f"no MNIST IDX files (*images-idx3-ubyte*) in {data_dir}")
    return imgs[0], labs[0]


def _n_val(end: int) -> int:
    """Validation digits of :func:`small_mnist_model` among the ``end`` before the test ones."""
    return max(4, end // 10)


def check_mnist_phase_data(
    data_dir: str | Path, *, first_index: int = 6000, train_models: bool = False
) -> int:
    """Check an MNIST folder for :func:`mnist_phase` before anything is written.

    Parameters
    ----------
    data_dir : path
        Folder with the MNIST IDX files.
    first_index : int, default 6000
        The test digits start here.
    train_models : bool, default False
        Also check that the digits before ``first_index`` suffice to train
        :func:`small_mnist_model`.

    Returns
    -------
    int
        The number of digits in the folder.

    Raises
    ------
    FileNotFoundError
        No folder, or no IDX files in it.
    ValueError
        Unreadable files, ``first_index`` past the last digit, or too few
        training digits.
    """
    from ..datasets import load_mnist

    path = Path(data_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"no MNIST folder at {path}")
    _, labels = load_mnist(*_mnist_files(path))
    assert labels is not None
    n = int(labels.shape[0])
    if not 0 <= first_index < n:
        raise ValueError(
            f"first_index={first_index} leaves no image: {path} holds {n} digits (use "
            f"--first-index 0 for digit files the shipped models never saw)"
        )
    end = min(first_index, n)
    if train_models and end - _n_val(end) < 40:
        raise ValueError(f"training needs more digits before index {first_index}; got {end}")
    return n


def small_model_decoder() -> str:
    """The registered decoder that runs the models :func:`small_mnist_model` trains.

    Returns
    -------
    str
        The decoder registered for :class:`cscore.LSTMCS` models.
    """
    from ..decoders import decoder_specs
    from ..decoders.learned import LSTMCS

    names = [s.name for s in decoder_specs() if s.kind == "model" and s.model_type is LSTMCS]
    if not names:  # pragma: no cover - the package registers one
        raise ValueError("no decoder is registered for LSTMCS models")
    return names[0]


def small_mnist_model(
    M: int,
    data_dir: str | Path,
    *,
    train_end: int = 6000,
    n_tuples: int = 200,
    n_cells: int = 64,
    epochs: int = 8,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> Any:
    """A small LSTM-CS model for MNIST blocks with M measurements (trained once, cached).

    The thesis' Fig. 4.8 uses "a simple LSTM-CS solver ... and just 200
    training images".  Training uses image tuples drawn from the digits before
    ``train_end`` (the last tenth of them for validation), ``paper_matrix(M,
    144, seed)`` as the sensing matrix, training sparsities 5..32 pixels per block
    (as the shipped models), and takes about 10-20 s per model on one CPU core.

    Parameters
    ----------
    M : int
        Measurements per block.
    data_dir : path
        Folder with the MNIST IDX files.
    train_end : int, default 6000
        Train on images before this index (test problems start there).
    n_tuples : int, default 200
        Training image tuples (one digit per channel).
    n_cells, epochs, seed : int
        LSTM cells, maximum epochs, seed (matrix and training).
    cache_dir : path, optional
        Default :func:`default_cache_dir`.
    progress : bool, default False
        Show training progress.

    Returns
    -------
    LSTMCS
    """
    from .._torch import import_torch
    from ..datasets import load_mnist, mnist_mmv_problems, mnist_tuples, paper_matrix
    from ..decoders.learned import LSTMCS
    from ..problem import ProblemSpec
    from ..training.lstm_config import TrainConfig
    from ..training.recipes import train_lstm_cs

    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    # Training sparsities as for the shipped MNIST models (scaling them down with
    # M measured worse: k/m 0.00-0.10 instead of 0.05-0.25 at m/n = 0.25-0.35).
    k_range = (5, 32)
    name = f"mnist-m{M}-t{n_tuples}-c{n_cells}-e{epochs}-end{train_end}-s{seed}.npz"
    path = cache / name
    if path.exists():
        return LSTMCS.load(path)
    import_torch()
    cache.mkdir(parents=True, exist_ok=True)
    images, labels = load_mnist(*_mnist_files(Path(data_dir)))
    assert labels is not None
    end = min(train_end, labels.shape[0])
    n_val = _n_val(end)
    if end - n_val < 40:
        raise ValueError(f"training needs more digits before index {train_end}; got {end}")
    digits = (0, 1, 2, 3)
    tr = mnist_tuples(labels, np.arange(0, end - n_val), digits, n_tuples=n_tuples, seed=seed)
    va = mnist_tuples(labels, np.arange(end - n_val, end), digits, n_tuples=50, seed=seed)
    S_tr = mnist_mmv_problems(images, tr, None)
    S_va = mnist_mmv_problems(images, va, None)
    A = paper_matrix(M, 144, seed=seed)
    spec = ProblemSpec(M=M, N=144, L=4, block_size=12, transform="none", image_size=24,
                       dataset=f"mnist ({n_tuples} tuples before {train_end})")  # fmt: skip
    cfg = TrainConfig(n_cells=n_cells, max_epochs=epochs, patience=2, seed=seed,
                      batch_size=128, n_threads=1, progress=progress)  # fmt: skip
    model = train_lstm_cs(
        S_tr, S_va, A, spec, path=path, config=cfg, k_range=k_range,
        info={"description": f"small MNIST model for `cscore bench phase` (M={M})"},
    )  # fmt: skip
    return model


def mnist_phase(
    data_dir: str | Path,
    decoders: Sequence[str],
    *,
    ratios: Sequence[float] = FIG48_RATIOS,
    rhos: Sequence[float] | None = None,
    models: dict[int, Any] | None = None,
    sigma: float = 0.005,
    n_tuples: int = 50,
    first_index: int = 6000,
    stop: str = "tol",
    nmse_ok: float = 0.6,
    fraction: float = 0.9,
    seed: int = 0,
    progress: bool = True,
    tally: WarningTally | None = None,
) -> dict[str, Any]:
    """Success maps and transition curves on MNIST (the thesis' Fig. 4.8).

    Parameters
    ----------
    data_dir : path
        Folder with the MNIST IDX files.
    decoders : sequence of str
        Names from :func:`cscore.decoder_names`; a model decoder (LSTM-CS)
        needs ``models``.
    ratios : sequence of float
        ``m / n`` values (n = 144).
    rhos : sequence of float, optional
        ``k / m`` grid (default 0.05 .. 1.0 in steps of 0.05).
    models : dict, optional
        M -> LSTMCS (its ``A`` is used for every decoder at that M).
    sigma, n_tuples, first_index, seed
        As in :func:`cscore.bench.mnist_problems`.
    stop : {"tol", "auto", "k"}, default "tol"
        Stopping rule of the greedy decoders.
    nmse_ok, fraction : float
        A point succeeds when at least ``fraction`` of the problems have NMSE
        ``<= nmse_ok`` (0.6 and 0.9 in the thesis).
    seed : int
    progress : bool
    tally : WarningTally, optional
        Catch the decoders' warnings and count them here per decoder.

    Returns
    -------
    dict
        ``ratios``, ``rhos``, ``rate`` (decoder -> (len(rhos), len(ratios))
        fractions of problems with NMSE <= nmse_ok), ``curve`` (decoder ->
        the largest successful k/m per ratio, 0 if none), ``rows``.
    """
    from tqdm.auto import tqdm

    from ..datasets import paper_matrix

    if rhos is None:
        rhos = [round(0.05 * i, 2) for i in range(1, 21)]
    for name in decoders:
        if name not in decoder_names():
            raise ValueError(f"unknown decoder {name!r}; known: {', '.join(decoder_names())}")
    for name in decoders:
        if needs_model(name) and not models:
            raise ValueError(f"{name} in the MNIST phase transition needs models "
                             f"(--train-models)")
    rate = {n: np.full((len(rhos), len(ratios)), np.nan) for n in decoders}
    rows: list[dict[str, Any]] = []
    held = heldout_mnist(data_dir, first_index=first_index, n_tuples=n_tuples, seed=seed)
    bar = tqdm(total=len(ratios) * len(rhos), disable=not progress, desc="MNIST phase")
    for di, ratio in enumerate(ratios):
        M = max(1, round(ratio * 144))
        model = (models or {}).get(M)
        A = model.A if model is not None else paper_matrix(M, 144, seed=seed)
        for ri, rho in enumerate(rhos):
            k = min(M, max(1, round(rho * M)))
            ps = held.problems(A, k, sigma=sigma, seed=seed + 1)
            for name in decoders:
                if needs_model(name) and model is None:
                    continue
                uses_stop = uses_stopping_rule(name)
                kk = ps.k if uses_stop and stop == "k" else None
                rules: dict[str, float | str] = {"tol": ps.tol, "auto": "auto"}
                tol = rules.get(stop) if uses_stop else None
                with tally.catch(name) if tally is not None else nullcontext():
                    t0 = time.perf_counter()
                    S_hat = run_decoder(name, A, ps.Y, k=kk, tol=tol, model=model)
                    dt = (time.perf_counter() - t0) / ps.S.shape[0]
                err = nmse_per_item(np.asarray(S_hat, dtype=np.float64), ps.S)
                rate[name][ri, di] = float(np.mean(err <= nmse_ok))
                rows += [
                    {"decoder": name, "stop": stop if uses_stop else "own", "k": k, "m": M,
                     "sigma": sigma, "problem": i, "nmse": float(e), "seconds": dt, "n": 144,
                     "m_over_n": ratio, "rho": rho}
                    for i, e in enumerate(err)
                ]  # fmt: skip
            bar.update()
    bar.close()
    curve = {}
    for name, r in rate.items():
        c = []
        for di in range(len(ratios)):
            ok = np.nan_to_num(r[:, di], nan=0.0) >= fraction
            # the transition: the last rho before the first failure
            first_fail = int(np.argmin(ok)) if not ok.all() else len(rhos)
            c.append(float(rhos[first_fail - 1]) if first_fail > 0 else 0.0)
        curve[name] = c
    return {
        "N": 144,
        "ratios": list(ratios),
        "rhos": list(rhos),
        "nmse_ok": nmse_ok,
        "fraction": fraction,
        "rate": {k: v.tolist() for k, v in rate.items()},
        "curve": curve,
        "rows": rows,
    }
