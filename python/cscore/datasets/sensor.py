"""A real multichannel sensor recording and the telemonitoring sensing set-up.

The recording is the 14-channel EEG sample that the ``spkit`` package ships
inside its wheel (``spkit/data/files/EEG16SecData.pkl``, MIT licence): 16 s of
an Emotiv EPOC recording from the PhyAAt data set (Bajaj et al.), 128 Hz,
2048 samples x 14 channels, in microvolts, already band-limited (its power is
below ~45 Hz; the per-channel means are close to 0).  ``pip install
"cscore-decoders[sensor]"`` installs ``spkit``; nothing is downloaded at run time.  The
file is located with :func:`importlib.util.find_spec` (``spkit`` itself is
never imported: its import pulls in pandas, scikit-learn and more) and read
with an unpickler that accepts nothing but NumPy arrays and Python lists.

The sensing set-up is the wireless-telemonitoring one of Zhang et al. (T-MSBL,
BSBL): each window of ``N`` samples of every channel is compressed on the
sensor by a sparse binary matrix (:func:`binary_sensing_matrix`, ``d`` ones
per column, so the sensor only adds samples), and the receiver decodes
``y = Phi x = (Phi D^T) s`` for the DCT coefficients ``s = D x`` of the window
(:func:`dct_matrix`).  The channels of a window are the MMV channels: one
problem is ``Y`` (M, C) for ``X`` (N, C).
"""

from __future__ import annotations

import importlib
import importlib.util
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .. import _optional

__all__ = [
    "EEG14",
    "SPLIT_SECONDS",
    "SensorRecording",
    "binary_sensing_matrix",
    "dct_matrix",
    "load_eeg14",
    "split_recording",
    "windows",
]

@dataclass(frozen=True)
class _RecordingInfo:
    """Where a bundled recording lives and what it is."""

    package: str
    file: str
    fs: float
    n_samples: int
    channels: tuple[str, ...]
    description: str


#: The 14-channel EEG sample of ``spkit`` (PhyAAt data set, Emotiv EPOC, 10-20 positions).
EEG14 = _RecordingInfo(
    package="spkit",
    file="data/files/EEG16SecData.pkl",
    fs=128.0,
    n_samples=2048,
    channels=("AF3", "F7", "F3", "FC5", "T7", "P7", "O1", "O2", "P8", "T8", "FC6", "F4",
              "F8", "AF4"),
    description="spkit EEG16SecData.pkl: 14-channel EEG (Emotiv EPOC, PhyAAt data set), "
                "128 Hz, 16 s",
)

#: Time split of the recording, in seconds: training, validation and test parts.
SPLIT_SECONDS = {"train": (0.0, 10.0), "val": (10.0, 12.0), "test": (12.0, 16.0)}


@dataclass(frozen=True)
class SensorRecording:
    """A multichannel recording.

    Attributes
    ----------
    signal : ndarray float64 (n_samples, n_channels)
        The samples (microvolts for the EEG).
    fs : float
        Sampling rate in Hz.
    channels : tuple of str
        Channel names, in column order.
    source : str
        Where it came from (package, file).
    """

    signal: np.ndarray
    fs: float
    channels: tuple[str, ...]
    source: str

    @property
    def seconds(self) -> float:
        """Duration in seconds."""
        return self.signal.shape[0] / self.fs


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that builds NumPy arrays and nothing else (no code runs)."""

    _ALLOWED: ClassVar[dict[tuple[str, str], tuple[str, str]]] = {
        ("numpy.core.multiarray", "_reconstruct"): ("multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"): ("multiarray", "_reconstruct"),
        ("numpy", "ndarray"): ("numpy", "ndarray"),
        ("numpy", "dtype"): ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str) -> Any:
        where = self._ALLOWED.get((module, name))
        if where is None:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file")
        if where[0] == "numpy":
            return getattr(np, where[1])
        try:  # NumPy 2 (numpy.core is a deprecated alias there)
            mod = importlib.import_module("numpy._core.multiarray")
        except ImportError:  # NumPy 1
            mod = importlib.import_module("numpy.core.multiarray")
        return getattr(mod, where[1])


def _package_file(package: str, relative: str, purpose: str) -> Path:
    """The path of a data file inside an installed package, without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        _optional.require(package, purpose)  # raises the install hint
        raise ImportError(f"{purpose} needs {package}", name=package)  # pragma: no cover
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise FileNotFoundError(
            f"{package} is installed but has no {relative}: {purpose} needs a version of "
            f"{package} whose wheel ships it (pip install -U {package})"
        )
    return path


def load_eeg14() -> SensorRecording:
    """The 14-channel, 16-second EEG recording bundled in the ``spkit`` wheel.

    Returns
    -------
    SensorRecording
        ``signal`` (2048, 14) float64 in microvolts, ``fs`` 128.0, the 14 channel
        names of :data:`EEG14`.

    Raises
    ------
    ImportError
        ``spkit`` is not installed (the message says ``pip install "cscore-decoders[sensor]"``).
    ValueError
        The file does not hold a (2048, 14) array.

    Examples
    --------
    >>> rec = load_eeg14()  # doctest: +SKIP
    >>> rec.signal.shape, rec.fs
    ((2048, 14), 128.0)
    """
    info = EEG14
    path = _package_file(info.package, info.file, "the sensor recording")
    with open(path, "rb") as f:
        obj = _ArrayUnpickler(f).load()
    X = np.asarray(obj[0] if isinstance(obj, (list, tuple)) else obj, dtype=np.float64)
    if X.shape != (info.n_samples, len(info.channels)) or not np.isfinite(X).all():
        raise ValueError(f"{path}: expected a finite ({info.n_samples}, {len(info.channels)}) "
                         f"array, got shape {X.shape}")
    return SensorRecording(signal=X, fs=info.fs, channels=info.channels,
                           source=f"{info.package}/{info.file}")


def split_recording(rec: SensorRecording) -> dict[str, np.ndarray]:
    """The training, validation and test parts of a recording (:data:`SPLIT_SECONDS`).

    Parameters
    ----------
    rec : SensorRecording

    Returns
    -------
    dict of str to ndarray (n, n_channels)
        ``"train"``, ``"val"`` and ``"test"``, consecutive in time, not overlapping.
    """
    out = {}
    for part, (t0, t1) in SPLIT_SECONDS.items():
        out[part] = rec.signal[round(t0 * rec.fs):round(t1 * rec.fs)]
    return out


def windows(X: np.ndarray, N: int, stride: int | None = None) -> np.ndarray:
    """Windows of ``N`` samples of every channel.

    Parameters
    ----------
    X : ndarray (n_samples, n_channels)
    N : int
        Window length.
    stride : int, optional
        Samples between window starts (default ``N``: consecutive windows).
        A tail shorter than ``N`` is dropped.

    Returns
    -------
    ndarray (n_windows, N, n_channels)
    """
    X = np.asarray(X, dtype=np.float64)
    step = N if stride is None else int(stride)
    if N < 1 or step < 1:
        raise ValueError(f"N and stride must be positive, got {N} and {stride}")
    starts = range(0, X.shape[0] - N + 1, step)
    return np.stack([X[s:s + N] for s in starts]) if len(starts) else \
        np.empty((0, N, X.shape[1]))


def binary_sensing_matrix(M: int, N: int, d: int = 2, seed: int | None = 0) -> np.ndarray:
    """A sparse binary sensing matrix: every column has ``d`` ones in random rows.

    Zhang et al.'s telemonitoring matrix: the sensor computes each measurement
    as a sum of a few samples (no multiplications).

    Parameters
    ----------
    M, N : int
        Measurements and window length, ``1 <= d <= M <= N``.
    d : int, default 2
        Ones per column.
    seed : int or None, default 0

    Returns
    -------
    ndarray float64 (M, N)
        Entries 0 or 1; every column sums to ``d``.
    """
    for name, v in (("M", M), ("N", N), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not d <= M <= N:
        raise ValueError(f"need d <= M <= N, got d={d}, M={M}, N={N}")
    rng = np.random.default_rng(seed)
    Phi = np.zeros((M, N))
    for j in range(N):
        Phi[rng.choice(M, size=d, replace=False), j] = 1.0
    return Phi


def dct_matrix(N: int) -> np.ndarray:
    """The orthonormal DCT-II matrix ``D``: ``s = D x``, ``x = D.T s``.

    Parameters
    ----------
    N : int

    Returns
    -------
    ndarray float64 (N, N)
        Equal to ``scipy.fft.dct(np.eye(N), norm="ortho", axis=0)``.
    """
    n = np.arange(N)
    D = np.cos(np.pi * (2 * n[None, :] + 1) * n[:, None] / (2 * N)) * np.sqrt(2.0 / N)
    D[0] /= np.sqrt(2.0)
    return D
