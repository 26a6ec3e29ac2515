"""The MSRC v2 split behind the ``msrc-buildings-*`` pretrained models.

The images are the grayscale PNGs of ``../shared/data/msrc-v2`` (one folder per
class, files ``01.png``, ``02.png``, ...).  The split is fixed and recorded in
every model trained on it:

* test (never used for training or model selection): 5 images each of
  ``buildings``, ``cows`` and ``flowers``, chosen by
  ``sorted(default_rng(seed).choice(n_files, 5, replace=False))`` with seed 1,
  2, 3 for the three classes (:data:`HELD_OUT`);
* validation (early stopping): the last remaining image (name order) of every
  class;
* training: everything else, all 20 classes.

Images are read as 64x64 grayscale in [0, 1] (:func:`load_image_folder`), the
conventions of :func:`~cscore.datasets.image_mmv_problems`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .images import load_image_folder

__all__ = ["HELD_OUT", "held_out_names", "load_msrc_split"]

#: class -> seed of its held-out draw
HELD_OUT: dict[str, int] = {"buildings": 1, "cows": 2, "flowers": 3}
N_HELD_OUT = 5


def held_out_names(cls: str, names: list[str]) -> list[str]:
    """The held-out files of class ``cls`` among its sorted file ``names``.

    Parameters
    ----------
    cls : str
        A class of :data:`HELD_OUT` (others hold nothing out).
    names : list of str
        The class folder's image file names in sorted order.

    Returns
    -------
    list of str
        The held-out names, in name order.
    """
    if cls not in HELD_OUT:
        return []
    rng = np.random.default_rng(HELD_OUT[cls])
    pick = np.sort(rng.choice(len(names), N_HELD_OUT, replace=False))
    return [names[int(i)] for i in pick]


def load_msrc_split(
    root: str | Path, size: int = 64
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], dict[str, list[str]]]:
    """Load the training, validation and held-out test images of the split.

    Parameters
    ----------
    root : path
        The ``msrc-v2`` folder (class subfolders).
    size : int, default 64
        Side of the (resized, grayscale) images.

    Returns
    -------
    train : ndarray (n_train, size, size)
    val : ndarray (n_val, size, size)
    test : dict class -> ndarray (5, size, size)
        The held-out images of ``buildings``, ``cows`` and ``flowers``.
    names : dict
        ``"train"``, ``"val"`` and ``"test"`` -> list of ``"class/file"``.
    """
    root = Path(root)
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not classes:
        raise FileNotFoundError(f"no class folders under {root}")
    train, val = [], []
    test: dict[str, np.ndarray] = {}
    names: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    for cls in classes:
        imgs, files = load_image_folder(root / cls, size)
        out = set(held_out_names(cls, files))
        rest = [i for i, f in enumerate(files) if f not in out]
        if cls in HELD_OUT:
            idx = [i for i, f in enumerate(files) if f in out]
            test[cls] = imgs[idx]
            names["test"] += [f"{cls}/{files[i]}" for i in idx]
        val.append(imgs[rest[-1:]])
        names["val"] += [f"{cls}/{files[i]}" for i in rest[-1:]]
        train.append(imgs[rest[:-1]])
        names["train"] += [f"{cls}/{files[i]}" for i in rest[:-1]]
    return np.concatenate(train), np.concatenate(val), test, names
