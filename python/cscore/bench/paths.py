"""Where a ``cscore bench`` run reads and writes: its folders, checked before anything is written.

:func:`check_paths` checks the data folders a run reads (MNIST files, a folder
of pictures, the model cache) and its output folder (:func:`check_output_dir`:
a folder holding a run's results is only replaced with ``overwrite``);
:func:`check_figure_path` checks the folder of a figure file (``cscore demo
--plot``).  They raise :class:`~cscore.bench.config.BenchConfigError` naming
the option and create nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from .config import BenchConfig, BenchConfigError

__all__ = ["RESULT_FILES", "check_figure_path", "check_output_dir", "check_paths"]

#: Files that mark a folder as holding a run's results (not replaced without ``overwrite``).
RESULT_FILES = ("results.csv", "report.md")


def _check_folder(option: str, path: str | None, need: str) -> Path:
    if not path:
        raise BenchConfigError(option, need)
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise BenchConfigError(option, f"{option} {path}: no such folder")
    return folder


def check_paths(config: BenchConfig) -> None:
    """Check every input folder of the run; create nothing.

    Parameters
    ----------
    config : BenchConfig

    Raises
    ------
    BenchConfigError
        A data folder is missing, does not exist or holds no data; the model
        cache is not a folder; the output folder is unusable or holds results
        (see :func:`check_output_dir`).
    """
    if config.data == "mnist":
        folder = _check_folder("--data-dir", config.data_dir, "--data mnist needs --data-dir")
        if not any(folder.glob("*images-idx3-ubyte*")) or \
                not any(folder.glob("*labels-idx1-ubyte*")):
            raise BenchConfigError("--data-dir", f"--data-dir {config.data_dir}: no MNIST IDX "
                                   f"files (*images-idx3-ubyte*, *labels-idx1-ubyte*) in it")
    elif config.data == "images" and "images" in config.spec.data:
        from ..datasets.images import IMAGE_SUFFIXES

        folder = _check_folder("--images-dir", config.images_dir,
                               "--data images needs --images-dir (a folder of pictures)")
        if not any(p.suffix.lower() in IMAGE_SUFFIXES for p in folder.iterdir()):
            raise BenchConfigError("--images-dir", f"--images-dir {config.images_dir}: no "
                                   f"pictures ({', '.join(IMAGE_SUFFIXES)}) in it")
    if config.model_cache and Path(config.model_cache).expanduser().exists() and \
            not Path(config.model_cache).expanduser().is_dir():
        raise BenchConfigError("--model-cache", f"--model-cache {config.model_cache} is not "
                               f"a folder")
    check_output_dir(config.output_dir(), overwrite=config.overwrite)


def check_output_dir(path: str | Path, *, overwrite: bool = False) -> None:
    """Check that a run may write its results into the folder ``path``.

    A folder that holds a run's results (any of :data:`RESULT_FILES`) is only
    reused with ``overwrite``; a missing folder must be creatable.

    Parameters
    ----------
    path : path
        The output folder.
    overwrite : bool, default False
        Allow replacing the results of an earlier run.

    Raises
    ------
    BenchConfigError
        ``path`` is a file, holds results and ``overwrite`` is False, or
        cannot be created.
    """
    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise BenchConfigError("--out", f"--out {path} is a file, not a folder")
    if out.is_dir():
        held = [f for f in RESULT_FILES if (out / f).exists()]
        if held and not overwrite:
            raise BenchConfigError(
                "--out",
                f"{path} already holds the results of a run ({', '.join(held)}); pass "
                f"--overwrite to replace them, or --out to write elsewhere",
            )
        return
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise BenchConfigError("--out", f"cannot create the output folder {path}: {parent} "
                               f"is not a writable folder")


def check_figure_path(option: str, path: str | Path | None) -> None:
    """Check that a figure can be written to ``path`` (its folder exists).

    Parameters
    ----------
    option : str
        The option that named the file (for the message).
    path : path or None
        The figure's file; None passes.

    Raises
    ------
    BenchConfigError
        The folder does not exist.
    """
    if path is None:
        return
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise BenchConfigError(
            option, f"cannot write the figure {path}: folder {parent} does not exist"
        )
