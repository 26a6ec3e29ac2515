"""``cscore bench scaling``: time and peak memory against the problem size.

For every library that is importable (cscore always; scikit-learn, SPAMS and
PyLops when installed: none of them is a dependency), every matrix kind (a dense
i.i.d. Gaussian matrix, a partial DCT operator), every ``N`` (with ``M = delta N``
and ``k = rho M``) and batch size, one batch of Bernoulli-Gaussian problems
(``k`` nonzeros, 40 dB) is decoded ``repeats`` times; the best wall time, its
CPU time, the peak of the Python/NumPy allocations during one decode
(:mod:`tracemalloc`, after a warm-up decode; scratch of compiled code outside
NumPy, such as the cscore core's work buffers or a BLAS's, is not counted) and
the NMSE are recorded per (library, method, stopping rule, setting): one row of
a tidy ``results.csv``.  Everything runs on one thread (cscore's ``n_threads=1``,
the BLAS limited to one thread), so the figures compare the libraries per core.

Methods and stopping rules (the figure draws one colour per library and one line
style per stopping rule):

* cscore ``amp`` (EM-BG; stops on its own convergence test, rule ``conv``) on
  dense matrices (compiled kernel) and on operators (the NumPy operator path);
* cscore ``omp`` with the true sparsity (rule ``k``) or the noise-aware
  residual threshold ``sigma sqrt(M)`` (rule ``tol``), dense and operators;
* scikit-learn ``orthogonal_mp`` (rules ``k`` and ``tol``; dense only);
* SPAMS ``omp`` (rules ``k`` and ``tol``, ``eps`` the squared threshold; dense);
* PyLops ``omp`` (rule ``k`` via ``niter_outer``; its operator for the DCT,
  ``MatrixMult`` for dense).

A decode slower than ``max_seconds`` (per batch) drops that method from the larger
sizes of the same grid, so a long grid cannot stall on one slow method.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .config import BenchConfig, BenchConfigError, parse_ints
from .plots import plot_scaling
from .registry import ExperimentOption, register_experiment
from .report import cpu_model
from .runner import BenchOutcome, BenchPlan
from .tally import WarningTally

__all__ = [
    "MATRICES",
    "ScalingConfig",
    "available_libraries",
    "partial_dct_operator",
    "plot_scaling",
    "run_scaling",
]

#: Matrix kinds.
MATRICES = ("dense", "dct")
#: Libraries the experiment knows; those not importable are skipped.
LIBRARIES = ("cscore", "sklearn", "spams", "pylops")
_IMPORT = {"cscore": "cscore", "sklearn": "sklearn", "spams": "spams", "pylops": "pylops"}

Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class ScalingConfig:
    """The grid of a scaling run.

    Parameters
    ----------
    sizes : tuple of int
        ``N`` values.
    delta : float
        ``M / N``.
    rho : float
        ``k / M`` (the number of nonzeros of each problem).
    batches : tuple of int
        Problems per decode call.
    matrices : tuple of str
        From :data:`MATRICES`.
    libraries : tuple of str, optional
        From :data:`LIBRARIES` (default: all that are importable).
    repeats : int
        Timed decodes per point (the best is kept).
    max_seconds : float
        A method whose decode took longer is not run at larger ``N``.
    snr_db : float
        Measurement SNR.
    seed : int
        Seed of the matrices, problems and noise.
    out : str, optional
        Output folder (default ``bench-out/scaling``).
    plot : bool
        Draw the figure.
    argv : tuple of str, optional
        The command line for the report.
    """

    sizes: tuple[int, ...] = (256, 512, 1024, 2048)
    delta: float = 0.5
    rho: float = 0.2
    batches: tuple[int, ...] = (16,)
    matrices: tuple[str, ...] = MATRICES
    libraries: tuple[str, ...] | None = None
    repeats: int = 2
    max_seconds: float = 5.0
    snr_db: float = 40.0
    seed: int = 0
    out: str | None = None
    plot: bool = True
    argv: tuple[str, ...] | None = None

    def check(self) -> None:
        """Raise ``ValueError`` for a grid that cannot run."""
        if not self.sizes or any(int(n) < 8 for n in self.sizes):
            raise ValueError(f"--sizes must be integers >= 8, got {self.sizes}")
        if not 0.0 < self.delta <= 1.0:
            raise ValueError(f"--delta must be in (0, 1], got {self.delta}")
        if not 0.0 < self.rho < 1.0:
            raise ValueError(f"--rho must be in (0, 1), got {self.rho}")
        if not self.batches or any(int(b) < 1 for b in self.batches):
            raise ValueError(f"--batches must be integers >= 1, got {self.batches}")
        bad = [m for m in self.matrices if m not in MATRICES]
        if bad or not self.matrices:
            raise ValueError(f"--matrices must be from {', '.join(MATRICES)}, got {bad}")
        libs = self.libraries or ()
        bad = [name for name in libs if name not in LIBRARIES]
        if bad:
            raise ValueError(f"--libraries must be from {', '.join(LIBRARIES)}, got {bad}")
        if self.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {self.repeats}")


def available_libraries(wanted: Sequence[str] | None = None) -> list[str]:
    """The libraries of ``wanted`` (default: all known) that can be imported.

    Parameters
    ----------
    wanted : sequence of str, optional

    Returns
    -------
    list of str
    """
    import importlib.util

    out = []
    for name in wanted or LIBRARIES:
        if name == "cscore" or importlib.util.find_spec(_IMPORT[name]) is not None:
            out.append(name)
    return out


def partial_dct_operator(M: int, N: int, seed: int = 0) -> Any:
    """``M`` random rows of the orthonormal DCT-II of size ``N``, as a LinearOperator.

    ``A x = (C x)[rows]`` and ``A^T y = C^T z`` with ``z`` zero but at ``rows``;
    each costs one fast transform, ``O(N log N)`` time and ``O(N)`` memory per
    vector; ``A`` is never formed.  Rows orthonormal, so ``||A||_F^2 = M``.

    Parameters
    ----------
    M, N : int
        Shape.
    seed : int
        Seed of the row choice.

    Returns
    -------
    scipy.sparse.linalg.LinearOperator
    """
    from scipy.fft import dct, idct
    from scipy.sparse.linalg import LinearOperator

    rows = np.sort(np.random.default_rng(seed).choice(N, size=M, replace=False))

    def mat(X: np.ndarray) -> np.ndarray:
        X2 = np.asarray(X, dtype=np.float64).reshape(N, -1)
        return np.asarray(dct(X2, type=2, norm="ortho", axis=0)[rows])

    def rmat(Y: np.ndarray) -> np.ndarray:
        Y2 = np.asarray(Y, dtype=np.float64).reshape(M, -1)
        Z = np.zeros((N, Y2.shape[1]))
        Z[rows] = Y2
        return np.asarray(idct(Z, type=2, norm="ortho", axis=0))

    return LinearOperator(
        (M, N), matvec=lambda x: mat(x)[:, 0], rmatvec=lambda y: rmat(y)[:, 0],
        matmat=mat, rmatmat=rmat, dtype=np.float64,
    )  # fmt: skip


def _problems(kind: str, N: int, M: int, k: int, B: int, snr_db: float,
              rng: np.random.Generator) -> tuple[Any, np.ndarray, np.ndarray, float]:
    """(A, X (N, B), Y (M, B), sigma): k-sparse Gaussian columns at ``snr_db``."""
    if kind == "dense":
        A: Any = rng.standard_normal((M, N)) / math.sqrt(M)
    else:
        A = partial_dct_operator(M, N, seed=int(rng.integers(2**31)))
    X = np.zeros((N, B))
    for b in range(B):
        X[rng.choice(N, size=k, replace=False), b] = rng.standard_normal(k)
    AX = A @ X if kind == "dense" else A.matmat(X)
    sigma = float(np.sqrt(np.mean(AX**2) / 10 ** (snr_db / 10)))
    return A, X, AX + sigma * rng.standard_normal(AX.shape), sigma


def _methods(lib: str, kind: str, A: Any, k: int, tol: float
             ) -> list[tuple[str, str, Callable[[np.ndarray], np.ndarray]]]:
    """(method, stop, decode(Y (M, B)) -> X (N, B)) of ``lib`` for this matrix."""
    out: list[tuple[str, str, Callable[[np.ndarray], np.ndarray]]] = []
    if lib == "cscore":
        from ..decoders.amp import amp
        from ..decoders.greedy import omp

        def amp_run(Y: np.ndarray) -> np.ndarray:
            return np.asarray(amp(A, Y.T[:, :, None], n_threads=1))[:, :, 0].T

        out.append(("amp", "conv", amp_run))
        out.append(("omp", "k", lambda Y: np.asarray(omp(A, Y, n_nonzero=k, n_threads=1))))
        out.append(("omp", "tol", lambda Y: np.asarray(omp(A, Y, tol=tol, n_threads=1))))
    elif lib == "sklearn" and kind == "dense":
        from sklearn.linear_model import orthogonal_mp

        out.append(("omp", "k", lambda Y: np.asarray(orthogonal_mp(A, Y, n_nonzero_coefs=k))))
        out.append(("omp", "tol", lambda Y: np.asarray(orthogonal_mp(A, Y, tol=tol**2))))
    elif lib == "spams" and kind == "dense":
        import spams  # type: ignore[import-not-found]

        scale = np.linalg.norm(A, axis=0)
        D = np.asfortranarray(A / scale)

        def sp_omp(Y: np.ndarray, **kw: Any) -> np.ndarray:
            Z = spams.omp(np.asfortranarray(Y), D, numThreads=1, **kw).toarray()
            return np.asarray(Z / scale[:, None])

        out.append(("omp", "k", lambda Y: sp_omp(Y, L=k)))
        out.append(("omp", "tol", lambda Y: sp_omp(Y, eps=tol**2)))
    elif lib == "pylops":
        import pylops  # type: ignore[import-not-found]
        from pylops.optimization.sparsity import omp as pl_omp  # type: ignore[import-not-found]

        op = pylops.MatrixMult(A) if kind == "dense" else pylops.LinearOperator(A)

        def pl(Y: np.ndarray) -> np.ndarray:
            return np.stack([np.asarray(pl_omp(op, y, niter_outer=k, sigma=0.0)[0])
                             for y in Y.T], axis=1)

        out.append(("omp", "k", pl))
    return out


def _measure(fn: Callable[[np.ndarray], np.ndarray], Y: np.ndarray, repeats: int
             ) -> tuple[np.ndarray, float, float, float]:
    """(X, best wall s, its CPU s, peak MiB of Python/NumPy allocations).

    One untimed warm-up decode first (imports, caches), then one traced for the
    memory peak, then ``repeats`` timed ones.
    """
    fn(Y)
    tracemalloc.start()
    try:
        X = fn(Y)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    best, cpu = math.inf, math.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        X = fn(Y)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if dt < best:
            best, cpu = dt, dc
    return X, best, cpu, peak


def run_scaling(config: ScalingConfig, *, log: Log | None = None) -> dict[str, Any]:
    """Run the grid; write ``results.csv``, ``report.md`` and ``scaling.png``.

    Parameters
    ----------
    config : ScalingConfig
    log : callable, optional
        Progress lines.

    Returns
    -------
    dict
        ``rows`` (list of dict), ``out`` (folder), ``csv``, ``report`` and
        ``figure`` (path or None).
    """
    from .._blas import single_threaded_blas
    from .report import write_csv, write_report

    config.check()
    say = log or (lambda _m: None)
    out = Path(config.out or "bench-out/scaling")
    out.mkdir(parents=True, exist_ok=True)
    libs = available_libraries(config.libraries)
    rng = np.random.default_rng(config.seed)
    rows: list[dict[str, Any]] = []
    slow: set[tuple[str, str, str, str]] = set()
    t_start = time.perf_counter()
    for kind in config.matrices:
        for N in sorted(int(n) for n in config.sizes):
            M = max(2, round(config.delta * N))
            k = max(1, round(config.rho * M))
            for B in config.batches:
                A, X, Y, sigma = _problems(kind, N, M, k, int(B), config.snr_db, rng)
                tol = sigma * math.sqrt(M)
                for lib in libs:
                    for method, stop, fn in _methods(lib, kind, A, k, tol):
                        key = (lib, method, stop, kind)
                        if key in slow:
                            continue
                        with single_threaded_blas():  # one core per library
                            X_hat, wall, cpu, peak = _measure(fn, Y, config.repeats)
                        nmse = float(10 * np.log10(np.sum((X_hat - X) ** 2) / np.sum(X**2)))
                        rows.append({
                            "library": lib, "method": method, "stop": stop, "matrix": kind,
                            "N": N, "M": M, "k": k, "batch": int(B),
                            "seconds_per_vector": wall / B, "cpu_seconds_per_vector": cpu / B,
                            "peak_mib": peak, "nmse_db": nmse, "repeats": config.repeats,
                        })  # fmt: skip
                        say(f"{kind} N={N} M={M} k={k} B={B} {lib} {method}/{stop}: "
                            f"{1e3 * wall / B:.3f} ms/vector, {peak:.1f} MiB, {nmse:.1f} dB")
                        if wall > config.max_seconds:
                            slow.add(key)
    csv_path = write_csv(rows, out / "results.csv") if rows else out / "results.csv"
    fig = plot_scaling(rows, out / "scaling.png") if config.plot and rows else None
    from .._config import instruction_set

    note = (f"CPU {cpu_model()}, kernels {instruction_set()}, one thread per library "
            "(cscore n_threads=1, the BLAS limited to one thread), "
            f"load average {os.getloadavg()[0]:.1f} at the end; libraries run: "
            f"{', '.join(libs)} (not installed: "
            f"{', '.join(sorted(set(config.libraries or LIBRARIES) - set(libs))) or 'none'}). "
            "Times are the best of the repeats per batch, divided by the batch size; "
            "peak_mib counts Python/NumPy allocations during one decode (tracemalloc), "
            "not compiled scratch.")
    report = write_report(
        out, title="Scaling: time and memory against N", seed=config.seed,
        sections=[("Setting", note), ("Results", _table(rows))],
        figures=[fig] if fig is not None else [], argv=config.argv,
        seconds=time.perf_counter() - t_start,
    )  # fmt: skip
    return {"rows": rows, "out": out, "csv": csv_path, "report": report, "figure": fig}




def _table(rows: Sequence[dict[str, Any]]) -> str:
    head = ("| library | method | stop | matrix | N | M | k | batch | ms / vector | CPU ms / "
            "vector | peak MiB | NMSE dB |\n|" + "---|" * 12)
    body = [
        f"| {r['library']} | {r['method']} | {r['stop']} | {r['matrix']} | {r['N']} | "
        f"{r['M']} | {r['k']} | {r['batch']} | {1e3 * r['seconds_per_vector']:.3f} | "
        f"{1e3 * r['cpu_seconds_per_vector']:.3f} | {r['peak_mib']:.2f} | {r['nmse_db']:.1f} |"
        for r in rows
    ]
    return "\n".join([head, *body])


def _names(text: str | None) -> tuple[str, ...] | None:
    if text is None or not text.strip():
        return None
    return tuple(t.strip() for t in text.split(",") if t.strip())


def scaling_config(config: BenchConfig, out: str | Path | None = None) -> ScalingConfig:
    """The :class:`ScalingConfig` of a ``cscore bench scaling`` run, checked.

    Parameters
    ----------
    config : BenchConfig
        Its ``options`` hold the experiment's own settings (``sizes``,
        ``delta``, ...); ``quick`` means sizes 128, 256, 512 and one repeat.
    out : path, optional
        Output folder (default ``config.output_dir()``).

    Returns
    -------
    ScalingConfig

    Raises
    ------
    BenchConfigError
        A setting out of range (the message names the option).
    """
    sizes = config.option("sizes") or ("128,256,512" if config.quick else "256,512,1024,2048")
    sc = ScalingConfig(
        sizes=parse_ints("--sizes", sizes), delta=config.option("delta"),
        rho=config.option("rho"), batches=parse_ints("--batches", config.option("batches")),
        matrices=_names(config.option("matrices")) or (),
        libraries=_names(config.option("libraries")),
        repeats=1 if config.quick else config.option("repeats"),
        max_seconds=config.option("max_seconds"), seed=config.seed,
        out=str(out if out is not None else config.output_dir()), plot=config.plot,
        argv=config.argv,
    )  # fmt: skip
    try:
        sc.check()
    except ValueError as exc:
        raise BenchConfigError(str(exc).split(" ", 1)[0], str(exc)) from None
    return sc


def _check(config: BenchConfig, model: Any) -> None:
    scaling_config(config)


def _run(plan: BenchPlan, log: Log) -> BenchOutcome:
    c = plan.config
    res = run_scaling(scaling_config(c, plan.out), log=log if c.progress else None)
    figs = [res["figure"]] if res["figure"] is not None else []
    return BenchOutcome(out=res["out"], json_path=None, csv_path=res["csv"],
                        report_path=res["report"], n_rows=len(res["rows"]), figures=figs,
                        tables=[], warnings=WarningTally(), result=res)


register_experiment(
    "scaling", _run, help="time and memory vs N for cscore and installed peers",
    check=_check,
    data=("synthetic",), decoders=(), data_label=lambda config: "",
    options=(
        ExperimentOption("sizes", None, "N values, '256,512' or '256:2048:256' (default "
                         "256,512,1024,2048; --quick 128,256,512)"),
        ExperimentOption("delta", 0.5, "M/N (default 0.5)", float),
        ExperimentOption("rho", 0.2, "k/M (default 0.2)", float),
        ExperimentOption("batches", "16", "problems per decode call, a list (default 16)"),
        ExperimentOption("matrices", "dense,dct", "dense (i.i.d. Gaussian) and/or dct "
                         "(partial DCT operator); default dense,dct"),
        ExperimentOption("libraries", None, "from cscore, sklearn, spams, pylops (default: "
                         "all that are installed)"),
        ExperimentOption("repeats", 2, "timed decodes per point, best kept (default 2)", int),
        ExperimentOption("max_seconds", 5.0, "a method slower than this per batch skips the "
                         "larger N (default 5.0)", float),
    ),
)
