"""``cscore demo sensor``: a real 14-channel EEG compressed on the sensor, decoded as a stream.

The set-up (docs/sensor.md) is Zhang et al.'s wireless telemonitoring: every
0.5 s window (N = 64 samples at 128 Hz) of each of the 14 channels is measured
by a sparse binary matrix ``Phi`` (M x 64, 2 ones per column); the receiver
decodes the DCT coefficients ``s = D x`` of the window from ``y = (Phi D^T) s``
with the 14 channels as the MMV channels (L = 14; EEG channels share their
low-frequency support), and returns ``x = D^T s``.

:func:`prepare_sensor` loads the recording (:func:`cscore.datasets.sensor.load_eeg14`)
and checks the settings; :func:`run_sensor` decodes the test part (the last 4 s,
never used to train or to choose a setting) with SOMP, T-MSBL and LSTM-CS (the
shipped models ``sensor-eeg14-dct-m<M>``, trained on the first 10 s by
``scripts/train_sensor.py``) for every M, each as a stream of windows through a
stream function (``cscore.pipelines.stream``, given by the caller: this layer
does not import the pipelines), and scores every channel in the time domain.
No torch is needed.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..datasets.sensor import (
    SensorRecording,
    binary_sensing_matrix,
    dct_matrix,
    load_eeg14,
    split_recording,
    windows,
)
from ..decoders import decoder
from ..models.registry import STORE
from .config import BenchConfigError
from .paths import check_figure_path

__all__ = [
    "SENSOR_DECODERS",
    "SENSOR_M",
    "SENSOR_N",
    "SensorResult",
    "SensorRun",
    "SensorSetup",
    "prepare_sensor",
    "run_sensor",
    "sensor_decoder",
    "sensor_model_name",
]

#: Window length (samples; 0.5 s at 128 Hz).
SENSOR_N = 64
#: Measurements per window of the demo (compression ratios 50 %, 62.5 %, 75 %).
SENSOR_M = (32, 24, 16)
#: Decoders of the demo, in order.
SENSOR_DECODERS = ("somp", "tmsbl", "lstm-cs")
#: Ones per column of the sensing matrix, and its seed.
SENSOR_D, SENSOR_SEED = 2, 0

#: A stream function: ``stream(dec, frames, batch=..., max_latency=...)`` -> decoded frames.
StreamFn = Callable[..., Any]


def sensor_model_name(M: int) -> str:
    """The name of the shipped LSTM-CS model for ``M`` measurements per window.

    Parameters
    ----------
    M : int

    Returns
    -------
    str
        ``"sensor-eeg14-dct-m<M>"``.
    """
    return f"sensor-eeg14-dct-m{M}"


@dataclass
class SensorSetup:
    """The checked demo: recording, sizes and decoders, ready for :func:`run_sensor`.

    Attributes
    ----------
    recording : SensorRecording
    Ms : tuple of int
        Measurements per window, one run of every decoder each.
    decoders : tuple of str
        Decoder names (of :data:`SENSOR_DECODERS`).
    scale : float
        The unit of the decoders: the standard deviation of the training part
        (microvolts); measurements are divided by it, decoded signals multiplied.
    test : ndarray (n, 14)
        The test part, in microvolts (a whole number of windows).
    plot : str or None
        Where the figure goes.
    batch : int
        Windows per decoder call of the stream.
    """

    recording: SensorRecording
    Ms: tuple[int, ...]
    decoders: tuple[str, ...]
    scale: float
    test: np.ndarray
    plot: str | None = None
    batch: int = 8

    @property
    def N(self) -> int:
        """Window length."""
        return SENSOR_N

    @property
    def test_seconds(self) -> float:
        """Seconds of signal decoded per run."""
        return self.test.shape[0] / self.recording.fs


@dataclass
class SensorRun:
    """One decoder at one M, on the whole test part.

    Attributes
    ----------
    decoder : str
    M : int
    settings : dict
        The decoder's settings.
    nmse : ndarray (n_channels,)
        ``||x - x_hat||^2 / ||x||^2`` per channel over the test part.
    seconds : float
        Wall time of the stream (every window in, every window out).
    signal_seconds : float
        Seconds of signal decoded.
    decoded : ndarray (n, n_channels)
        The decoded test part, in microvolts.
    warnings : list of str
        The distinct warnings the decoder raised (e.g. T-MSBL's ``max_iter``).
    """

    decoder: str
    M: int
    settings: dict[str, Any]
    nmse: np.ndarray
    seconds: float
    signal_seconds: float
    decoded: np.ndarray = field(repr=False)
    warnings: list[str] = field(default_factory=list)

    @property
    def compression_ratio(self) -> float:
        """``(N - M) / N`` in percent (Zhang et al.'s CR)."""
        return 100.0 * (SENSOR_N - self.M) / SENSOR_N

    @property
    def snr_db(self) -> np.ndarray:
        """Per-channel SNR in dB, ``-10 log10(NMSE)``."""
        return -10.0 * np.log10(np.maximum(self.nmse, 1e-300))

    @property
    def realtime_factor(self) -> float:
        """Seconds of signal decoded per second of wall time."""
        return self.signal_seconds / max(self.seconds, 1e-12)


@dataclass
class SensorResult:
    """The demo's runs, the skipped decoders and the figure.

    Attributes
    ----------
    runs : list of SensorRun
    skipped : list of str
        ``"lstm-cs M=..: reason"`` for runs that could not be made.
    figure : pathlib.Path or None
    """

    runs: list[SensorRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    figure: Path | None = None


def prepare_sensor(
    *,
    Ms: Iterable[int] = SENSOR_M,
    decoders: Iterable[str] = SENSOR_DECODERS,
    plot: str | None = None,
    batch: int = 8,
) -> SensorSetup:
    """Load the recording and check the settings.

    Parameters
    ----------
    Ms : iterable of int, default (32, 24, 16)
        Measurements per 64-sample window, each ``2 <= M <= 64``.
    decoders : iterable of str, default ("somp", "tmsbl", "lstm-cs")
        A subset of :data:`SENSOR_DECODERS`.
    plot : str, optional
        PNG file for original vs decoded traces (its folder must exist).
    batch : int, default 8
        Windows per decoder call of the stream.

    Returns
    -------
    SensorSetup

    Raises
    ------
    BenchConfigError
        A setting out of range or a missing figure folder.
    ImportError
        The ``sensor`` extra (spkit, which ships the recording) is not installed.
    """
    Ms = tuple(int(m) for m in Ms)
    if not Ms or any(not SENSOR_D <= m <= SENSOR_N for m in Ms):
        raise BenchConfigError("--M", f"every M must be between {SENSOR_D} and {SENSOR_N} "
                               f"(measurements per {SENSOR_N}-sample window), got {Ms}")
    names = tuple(decoders)
    bad = [d for d in names if d not in SENSOR_DECODERS]
    if not names or bad:
        raise BenchConfigError("--decoders", f"decoders must be among {SENSOR_DECODERS}, "
                               f"got {names}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise BenchConfigError("--batch", f"batch must be a positive int, got {batch!r}")
    check_figure_path("--plot", plot)
    rec = load_eeg14()
    parts = split_recording(rec)
    test = parts["test"][: (parts["test"].shape[0] // SENSOR_N) * SENSOR_N]
    return SensorSetup(recording=rec, Ms=Ms, decoders=names, scale=float(parts["train"].std()),
                       test=test, plot=plot, batch=batch)


def sensing_operator(M: int) -> tuple[np.ndarray, np.ndarray]:
    """The sensor's matrix and the decoders' matrix for ``M`` measurements.

    Parameters
    ----------
    M : int

    Returns
    -------
    Phi : ndarray (M, 64)
        :func:`~cscore.datasets.sensor.binary_sensing_matrix` ``(M, 64, d=2, seed=0)``.
    A : ndarray (M, 64)
        ``Phi @ D.T`` (``D`` the orthonormal DCT): measurements of DCT coefficients.
    """
    Phi = binary_sensing_matrix(M, SENSOR_N, SENSOR_D, SENSOR_SEED)
    return Phi, Phi @ dct_matrix(SENSOR_N).T


def sensor_decoder(name: str, M: int) -> tuple[Any, dict[str, Any]]:
    """The demo's decoder ``name`` for ``M`` measurements, with its settings.

    Settings chosen on the validation part (10-12 s; docs/sensor.md): SOMP with
    ``M // 4`` atoms, T-MSBL with the ``noise="mild"`` preset, LSTM-CS with
    ``M // 2`` atoms per channel.

    Parameters
    ----------
    name : {"somp", "tmsbl", "lstm-cs"}
    M : int

    Returns
    -------
    dec : cscore.Decoder
    settings : dict

    Raises
    ------
    ValueError
        ``lstm-cs`` and no model ``sensor-eeg14-dct-m<M>`` is installed.
    """
    _, A = sensing_operator(M)
    settings: dict[str, Any]
    if name == "somp":
        settings = {"n_nonzero": max(1, M // 4)}
        return decoder("somp", A, **settings), settings
    if name == "tmsbl":
        settings = {"noise": "mild"}
        return decoder("tmsbl", A, **settings), settings
    if name == "lstm-cs":
        settings = {"n_nonzero": max(1, M // 2)}
        model = sensor_model_name(M)
        STORE.path(model)  # a clear error when it is not installed
        return decoder("lstm-cs", model=model, **settings), settings
    raise ValueError(f"unknown sensor decoder {name!r}; choose from {SENSOR_DECODERS}")


def _frames(setup: SensorSetup, Phi: np.ndarray) -> Iterator[np.ndarray]:
    """What the sensor sends: ``Phi x`` of each test window, in the decoders' unit."""
    for W in windows(setup.test, SENSOR_N):
        yield (Phi @ W) / setup.scale


def decode_stream(setup: SensorSetup, name: str, M: int, stream_fn: StreamFn) -> SensorRun:
    """Decode the test part as a stream with one decoder at one M and score it.

    Parameters
    ----------
    setup : SensorSetup
    name : str
        Decoder name.
    M : int
    stream_fn : callable
        ``cscore.pipelines.stream`` (or one with its signature).

    Returns
    -------
    SensorRun
    """
    Phi, _ = sensing_operator(M)
    dec, settings = sensor_decoder(name, M)
    Dt = dct_matrix(SENSOR_N).T
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        out = [Dt @ s for s in stream_fn(dec, _frames(setup, Phi), batch=setup.batch,
                                          max_latency=0.0)]
        seconds = time.perf_counter() - t0
    decoded = np.concatenate(out) * setup.scale
    err = ((decoded - setup.test) ** 2).sum(axis=0) / (setup.test**2).sum(axis=0)
    return SensorRun(decoder=name, M=M, settings=settings, nmse=err, seconds=seconds,
                     signal_seconds=setup.test_seconds, decoded=decoded,
                     warnings=sorted({str(w.message) for w in caught}))


def run_sensor(
    setup: SensorSetup,
    stream_fn: StreamFn,
    *,
    on_run: Callable[[SensorRun], None] | None = None,
) -> SensorResult:
    """Decode the test part with every decoder at every M; draw the figure if asked.

    Parameters
    ----------
    setup : SensorSetup
        From :func:`prepare_sensor`.
    stream_fn : callable
        The stream function, ``cscore.pipelines.stream`` (``cscore.stream``).
    on_run : callable, optional
        Called with each :class:`SensorRun` as soon as it is done.

    Returns
    -------
    SensorResult
        An LSTM-CS run whose model is not installed is listed in ``skipped``.
    """
    result = SensorResult()
    for M in setup.Ms:
        for name in setup.decoders:
            if name == "lstm-cs" and sensor_model_name(M) not in STORE.files():
                result.skipped.append(f"lstm-cs M={M}: no model {sensor_model_name(M)}")
                continue
            run = decode_stream(setup, name, M, stream_fn)
            result.runs.append(run)
            if on_run is not None:
                on_run(run)
    if setup.plot and result.runs:
        result.figure = plot_sensor(setup, result.runs, setup.plot)
    return result


def plot_sensor(setup: SensorSetup, runs: list[SensorRun], path: str | Path,
                channels: tuple[str, ...] = ("AF3", "T7", "O1", "F8")) -> Path:
    """Original vs decoded traces of a few channels, at the middle M of the runs.

    Parameters
    ----------
    setup : SensorSetup
    runs : list of SensorRun
    path : path
        PNG file.
    channels : tuple of str
        Channels drawn, one panel each.

    Returns
    -------
    pathlib.Path
    """
    from .plots import pyplot

    plt = pyplot()
    Ms = sorted({r.M for r in runs})
    M = Ms[len(Ms) // 2]
    shown = [r for r in runs if r.M == M]
    names = list(setup.recording.channels)
    t = 12.0 + np.arange(setup.test.shape[0]) / setup.recording.fs
    fig, axes = plt.subplots(len(channels), 1, figsize=(11, 2.1 * len(channels)), sharex=True)
    for ax, ch in zip(np.atleast_1d(axes), channels):
        j = names.index(ch)
        ax.plot(t, setup.test[:, j], color="black", lw=1.6, label="original")
        for r in shown:
            ax.plot(t, r.decoded[:, j], lw=0.9,
                    label=f"{r.decoder} (SNR {r.snr_db[j]:.1f} dB)")
        ax.set_ylabel(f"{ch} (uV)")
        ax.legend(loc="upper right", fontsize=7, ncol=len(shown) + 1)
    np.atleast_1d(axes)[-1].set_xlabel("time (s): the test part of the recording")
    from .plots import save_figure

    return save_figure(fig, path, dpi=110, fontsize=10, title=(
        f"14-channel EEG (spkit EEG16SecData, 128 Hz), 4 of its channels: windows of "
        f"{SENSOR_N} samples, M = {M} (CR {100 * (SENSOR_N - M) / SENSOR_N:.1f} %),\n"
        "binary sensing (2 ones per column), DCT, decoded as a stream"))
