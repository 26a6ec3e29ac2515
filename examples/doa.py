"""Direction of arrival (DOA) with a uniform linear array: SOMP and T-MSBL vs MUSIC.

A uniform linear array of ``M`` sensors at half-wavelength spacing receives two
narrow-band sources a few degrees apart for ``L`` snapshots, in white noise.
The complex dictionary is the array's steering matrix on a 1-degree grid
(-90..90 degrees, N = 181 columns), ``A[m, j] = exp(-i pi m sin(theta_j))``,
and the snapshots are the L channels of one MMV problem ``Y = A S + V`` whose
row-sparse ``S`` has a nonzero row per source.  SOMP (``cscore.somp``, two
atoms) and T-MSBL (``cscore.tmsbl``) recover the rows; MUSIC (written here:
sample covariance, noise subspace, pseudo-spectrum, peak picking) is the
classical subspace method they are compared with.

    python examples/doa.py                      # the table over a few seeds
    python examples/doa.py --plot doa.png       # and a figure of one trial

Everything the test suite checks is in :func:`run_trial` (no plotting).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np

import cscore

#: The grid of candidate angles, degrees.
GRID = np.arange(-90.0, 90.5, 1.0)


def steering(M: int, angles_deg: np.ndarray) -> np.ndarray:
    """Steering vectors (M, len(angles)) of a half-wavelength uniform linear array."""
    m = np.arange(M)[:, None]
    return np.exp(-1j * np.pi * m * np.sin(np.deg2rad(np.asarray(angles_deg))[None, :]))


def simulate(M: int, L: int, angles_deg: np.ndarray, snr_db: float,
             rng: np.random.Generator) -> np.ndarray:
    """Snapshots Y (M, L): unit-power uncorrelated complex Gaussian sources plus noise."""
    K = len(angles_deg)
    S = (rng.standard_normal((K, L)) + 1j * rng.standard_normal((K, L))) / np.sqrt(2)
    sigma = 10.0 ** (-snr_db / 20.0)
    V = sigma * (rng.standard_normal((M, L)) + 1j * rng.standard_normal((M, L))) / np.sqrt(2)
    Y: np.ndarray = steering(M, angles_deg) @ S + V
    return Y


def pick_peaks(spectrum: np.ndarray, k: int) -> np.ndarray:
    """The grid angles of the k largest local maxima of ``spectrum`` (sorted)."""
    s = np.asarray(spectrum, dtype=float)
    padded = np.concatenate(([-np.inf], s, [-np.inf]))
    is_peak = (s > padded[:-2]) & (s >= padded[2:])
    idx = np.flatnonzero(is_peak)
    top = idx[np.argsort(-s[idx], kind="stable")[:k]]
    return np.sort(GRID[top])


def music_spectrum(Y: np.ndarray, n_sources: int) -> np.ndarray:
    """MUSIC pseudo-spectrum on GRID: 1 / ||E_n^H a(theta)||^2."""
    M, L = Y.shape
    R = Y @ Y.conj().T / L  # sample covariance
    _, U = np.linalg.eigh(R)  # ascending eigenvalues
    En = U[:, : M - n_sources]  # noise subspace
    proj = En.conj().T @ steering(M, GRID)
    out: np.ndarray = 1.0 / np.sum(np.abs(proj) ** 2, axis=0)
    return out


@dataclass
class Trial:
    """One trial: the true angles and, per method, estimates, spectrum and time."""

    truth: np.ndarray
    estimates: dict[str, np.ndarray] = field(default_factory=dict)
    spectra: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def error(self, method: str) -> float:
        """Largest absolute angle error in degrees (inf when fewer peaks were found)."""
        est = self.estimates[method]
        if len(est) < len(self.truth):
            return float("inf")
        return float(np.max(np.abs(est - self.truth)))


def run_trial(seed: int, *, M: int = 16, L: int = 30, snr_db: float = 15.0,
              separation: float = 4.0) -> Trial:
    """Simulate one scene and estimate the two angles with SOMP, T-MSBL and MUSIC.

    The first source is at an integer angle drawn in [-40, 40] degrees, the
    second ``separation`` degrees above it (both on the grid).
    """
    rng = np.random.default_rng(seed)
    first = float(rng.integers(-40, 41))
    truth = np.array([first, first + separation])
    Y = simulate(M, L, truth, snr_db, rng)
    A = steering(M, GRID)
    trial = Trial(truth)

    t = time.perf_counter()
    S = cscore.somp(A, Y, n_nonzero=2, n_threads=1)
    trial.seconds["SOMP"] = time.perf_counter() - t
    power = np.sum(np.abs(S) ** 2, axis=1)
    trial.spectra["SOMP"] = power
    trial.estimates["SOMP"] = np.sort(GRID[np.flatnonzero(power)])

    t = time.perf_counter()
    S = cscore.tmsbl(A, Y, rtol=1e-4, max_iter=1000, n_threads=1)
    trial.seconds["T-MSBL"] = time.perf_counter() - t
    power = np.sum(np.abs(S) ** 2, axis=1)
    trial.spectra["T-MSBL"] = power
    trial.estimates["T-MSBL"] = pick_peaks(power, 2)

    t = time.perf_counter()
    spec = music_spectrum(Y, 2)
    trial.seconds["MUSIC"] = time.perf_counter() - t
    trial.spectra["MUSIC"] = spec
    trial.estimates["MUSIC"] = pick_peaks(spec, 2)
    return trial


def summarize(trials: list[Trial], resolved_deg: float = 1.0) -> dict[str, dict[str, float]]:
    """Per method: resolution rate (both angles within ``resolved_deg``), RMSE, time."""
    out = {}
    for method in trials[0].estimates:
        errs = np.array([t.error(method) for t in trials])
        ok = errs <= resolved_deg
        sq = [np.mean((t.estimates[method] - t.truth) ** 2) for t in trials
              if len(t.estimates[method]) == len(t.truth)]
        out[method] = {
            "resolved": float(np.mean(ok)),
            "rmse_deg": float(np.sqrt(np.mean(sq))) if sq else float("inf"),
            "ms": 1000.0 * float(np.mean([t.seconds[method] for t in trials])),
        }
    return out


def plot(trial: Trial, path: str) -> None:
    """Normalized spectra of the three methods with the true angles."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for method, spec in trial.spectra.items():
        s = np.asarray(spec, dtype=float)
        db = 10 * np.log10(np.maximum(s / s.max(), 1e-6))
        style = "-" if method == "MUSIC" else ("o-" if method == "T-MSBL" else "s")
        ax.plot(GRID, db, style, label=f"{method}: {trial.estimates[method].tolist()}",
                markersize=3)
    for a in trial.truth:
        ax.axvline(a, color="k", linestyle=":", linewidth=1)
    lo, hi = trial.truth.min() - 25, trial.truth.max() + 25
    ax.set_xlim(lo, hi)
    ax.set_ylim(-60, 3)
    ax.set_xlabel("angle (degrees)")
    ax.set_ylabel("normalized spectrum (dB)")
    ax.set_title(f"two sources at {trial.truth.tolist()} degrees (dotted)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    """Command line: print the table over seeds, optionally plot the first trial."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--sensors", type=int, default=16)
    ap.add_argument("--snapshots", type=int, default=30)
    ap.add_argument("--snr", type=float, default=15.0)
    ap.add_argument("--separation", type=float, default=4.0)
    ap.add_argument("--plot", metavar="PNG", help="write a figure of the first trial")
    args = ap.parse_args()
    trials = [run_trial(s, M=args.sensors, L=args.snapshots, snr_db=args.snr,
                        separation=args.separation) for s in range(args.seeds)]
    print(f"ULA M={args.sensors}, L={args.snapshots} snapshots, SNR {args.snr:g} dB, "
          f"two sources {args.separation:g} deg apart, 1-deg grid, {args.seeds} seeds")
    for i, t in enumerate(trials[:5]):
        est = "  ".join(f"{m} {t.estimates[m].tolist()} (err {t.error(m):.0f})"
                        for m in t.estimates)
        print(f"seed {i}: truth {t.truth.tolist()}  {est}")
    print(f"{'method':8s} {'resolved':>9s} {'RMSE deg':>9s} {'ms/trial':>9s}")
    for m, r in summarize(trials).items():
        print(f"{m:8s} {r['resolved']:9.2f} {r['rmse_deg']:9.2f} {r['ms']:9.2f}")
    if args.plot:
        plot(trials[0], args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
