"""The Japanese Vowels data set (shipped) and a reader for UEA/UCR ``.ts`` files."""

from __future__ import annotations

import lzma
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SequenceData", "load_japanese_vowels", "read_ts"]

_DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class SequenceData:
    """Variable-length sequences with one class label per sequence.

    Attributes
    ----------
    X : list of ndarray
        One (T_i, D) float64 array per sequence.
    labels : ndarray
        (n_sequences,) int64 class labels, 0-based.
    classes : tuple of str
        The original class names in the file (``labels[i]`` indexes it).
    """

    X: list[np.ndarray]
    labels: np.ndarray
    classes: tuple[str, ...]

    def frame_labels(self) -> list[np.ndarray]:
        """Every frame labelled with its sequence's class: a list of (T_i,) int arrays."""
        return [np.full(x.shape[0], int(c), dtype=np.int64) for x, c in zip(self.X, self.labels)]

    def __len__(self) -> int:
        return len(self.X)


def read_ts(path: str | Path) -> SequenceData:
    """Read a multivariate UEA/UCR ``.ts`` file (plain or ``.xz``-compressed).

    Parameters
    ----------
    path : str or Path
        The file.  Each line after ``@data`` holds ``D`` comma-separated series
        separated by ``:``, then ``:label``.

    Returns
    -------
    SequenceData
        Sequences as (T_i, D) arrays, 0-based labels in the order of the
        ``@classLabel`` header (or sorted order when the header is absent).

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When the file is not a readable ``.ts`` file (message names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file: {path}")
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        lines = fh.read().splitlines()
    header_classes: list[str] | None = None
    data_start = None
    for i, line in enumerate(lines):
        s = line.strip()
        low = s.lower()
        if low.startswith("@classlabel"):
            parts = s.split()
            if len(parts) >= 3 and parts[1].lower() == "true":
                header_classes = parts[2:]
        elif low.startswith("@data"):
            data_start = i + 1
            break
    if data_start is None:
        raise ValueError(f"path: {path} has no @data line; not a .ts file")
    X: list[np.ndarray] = []
    raw_labels: list[str] = []
    for lineno, line in enumerate(lines[data_start:], start=data_start + 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        fields = s.split(":")
        if len(fields) < 2:
            raise ValueError(f"path: {path} line {lineno}: expected 'series:...:label'")
        try:
            series = [np.array([float(v) for v in f.split(",")]) for f in fields[:-1]]
        except ValueError as exc:
            raise ValueError(f"path: {path} line {lineno}: {exc}") from None
        lengths = {len(a) for a in series}
        if len(lengths) != 1:
            raise ValueError(f"path: {path} line {lineno}: dimensions of unequal length")
        X.append(np.ascontiguousarray(np.stack(series, axis=1)))
        raw_labels.append(fields[-1].strip())
    if not X:
        raise ValueError(f"path: {path} holds no sequences")
    dims = {x.shape[1] for x in X}
    if len(dims) != 1:
        raise ValueError(f"path: {path}: sequences have different numbers of dimensions {dims}")
    classes = tuple(header_classes) if header_classes else tuple(sorted(set(raw_labels)))
    index = {c: i for i, c in enumerate(classes)}
    try:
        labels = np.array([index[c] for c in raw_labels], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"path: {path}: label {exc} not in @classLabel {classes}") from None
    return SequenceData(X=X, labels=labels, classes=classes)


def load_japanese_vowels(
    split: str = "train", path: str | Path | None = None
) -> SequenceData:
    """Load the Japanese Vowels speaker-identification data (Kudo et al. 1999).

    Nine speakers; each utterance is 7-29 frames of 12 LPC cepstral
    coefficients.  A copy ships with cscore (270 training utterances, 185 test
    utterances; UCI, CC BY 4.0).

    Parameters
    ----------
    split : {"train", "test"}, default "train"
        Which file to read.
    path : str or Path, optional
        A folder holding ``JapaneseVowels_TRAIN.ts`` / ``JapaneseVowels_TEST.ts``
        (plain or ``.xz``), or a ``.ts`` file itself.  Default: the shipped copy.

    Returns
    -------
    SequenceData
        ``X`` (list of (T_i, 12) arrays), ``labels`` (0..8), ``classes``
        ("1".."9"); ``frame_labels()`` gives the per-frame targets.

    Examples
    --------
    >>> from cscore.seq import load_japanese_vowels
    >>> train = load_japanese_vowels("train")
    >>> len(train), train.X[0].shape[1]
    (270, 12)
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    name = f"JapaneseVowels_{split.upper()}.ts"
    folder = _DATA_DIR if path is None else Path(path)
    if folder.is_file():
        return read_ts(folder)
    for candidate in (folder / name, folder / (name + ".xz")):
        if candidate.is_file():
            return read_ts(candidate)
    raise FileNotFoundError(f"path: neither {name} nor {name}.xz found in {folder}")
