"""Time cscore.bcs / cscore.mtbcs against the authors' MATLAB code under GNU Octave.

Problem: A 72 x 144 (Gaussian, unit-norm columns, a new A per problem), L = 4
channels with a shared support of k = 20 nonzeros, noise sigma = 0.005.  BCS
decodes the four channels independently (``BCS_fast_rvm.m`` once per channel,
initial noise variance std(y)^2/100); MT-BCS decodes them jointly (``mt_CS.m``
with a = 1e2/0.1, b = 1).  Times are per problem (all four channels).

The originals are timed in the same run when ``octave-cli`` is on the PATH and
the original code (github.com/shihaoji/bcs, a checkout with ``BCS_demo/`` and
``MT_CS_demo/``) is given by ``--orig`` or the ``CSCORE_BCS_ORIG`` environment
variable; otherwise the recorded Octave figures are printed, marked as recorded.

    python benchmarks/bench_bayes_bcs.py --problems 50 --orig /path/to/bcs
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import cscore

#: Octave 8 figures measured on the project machine (s per problem), see
#: benchmarks/results/bcs.md; used only when the originals cannot be run.
RECORDED_OCTAVE = {"bcs": 0.24, "mtbcs": 0.17}

OCTAVE_SCRIPT = r"""
warning('off', 'all');
load('-v6', '{inp}');
P = size(Ys, 1); N = size(As, 3); L = size(Ys, 3);
Xb = zeros(P, N, L); Xm = zeros(P, N, L);
tb = 0; tm = 0;
for p = 1:P
  A = squeeze(As(p, :, :)); Y = squeeze(Ys(p, :, :));
  t0 = tic;
  for l = 1:L
    y = Y(:, l);
    [w, used] = BCS_fast_rvm(A, y, std(y)^2/1e2, 1e-8);
    Xb(p, used, l) = w;
  end
  tb = tb + toc(t0);
  C = cell(1, L); T = cell(1, L);
  for l = 1:L, C{{l}} = A; T{{l}} = Y(:, l); end
  t0 = tic;
  [w, ML] = mt_CS(C, T, 1e2/0.1, 1, 1e-8);
  tm = tm + toc(t0);
  Xm(p, :, :) = reshape(w, [1, N, L]);
end
tb = tb / P; tm = tm / P;
save('-v6', '{out}', 'Xb', 'Xm', 'tb', 'tm');
"""


def make_problems(P: int, M: int, N: int, L: int, k: int, sigma: float, seed: int):
    rng = np.random.default_rng(seed)
    As = rng.standard_normal((P, M, N))
    As /= np.linalg.norm(As, axis=1, keepdims=True)
    Ss = np.zeros((P, N, L))
    for p in range(P):
        supp = rng.choice(N, k, replace=False)
        Ss[p, supp] = rng.standard_normal((k, L))
    Ys = As @ Ss + sigma * rng.standard_normal((P, M, L))
    return As, Ss, Ys


def run_octave(orig: Path, As, Ys):
    import scipy.io

    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.mat", Path(tmp) / "out.mat"
        scipy.io.savemat(inp, {"As": As, "Ys": Ys})
        script = Path(tmp) / "bench.m"
        script.write_text(OCTAVE_SCRIPT.format(inp=inp, out=out))
        cmd = (
            f"addpath('{orig / 'BCS_demo'}'); addpath('{orig / 'MT_CS_demo'}'); source('{script}');"
        )
        subprocess.run(
            ["octave-cli", "--no-gui", "--quiet", "--eval", cmd], check=True, capture_output=True
        )
        r = scipy.io.loadmat(out)
    return float(r["tb"].ravel()[0]), float(r["tm"].ravel()[0]), r["Xb"], r["Xm"]


def best_of(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def nmse(X, S) -> float:
    return float(np.mean(np.sum((X - S) ** 2, axis=(1, 2)) / np.sum(S**2, axis=(1, 2))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--threads", type=int, default=cscore.get_num_threads())
    ap.add_argument("--orig", default=os.environ.get("CSCORE_BCS_ORIG"))
    args = ap.parse_args()
    M, N, L, k, sigma = 72, 144, 4, 20, 0.005
    P = args.problems
    As, Ss, Ys = make_problems(P, M, N, L, k, sigma, args.seed)
    print(f"{P} problems, A {M}x{N}, L={L}, k={k} (shared support), sigma={sigma}")

    def loop_bcs():
        return np.stack([cscore.bcs(As[p], Ys[p], n_threads=1) for p in range(P)])

    def loop_mt():
        return np.stack([cscore.mtbcs(As[p], Ys[p], n_threads=1) for p in range(P)])

    Xb, Xm = loop_bcs(), loop_mt()
    t_b = best_of(loop_bcs, args.repeat) / P
    t_m = best_of(loop_mt, args.repeat) / P
    # batch mode: one A shared by all problems (the usual setting), all threads
    A0 = As[0]
    Y0 = A0 @ Ss + sigma * np.random.default_rng(args.seed + 1).standard_normal((P, M, L))
    Yflat = np.ascontiguousarray(Y0.transpose(1, 0, 2).reshape(M, P * L))
    t_bb = best_of(lambda: cscore.bcs(A0, Yflat, n_threads=args.threads), args.repeat) / P
    t_mb = best_of(lambda: cscore.mtbcs(A0, Y0, n_threads=args.threads), args.repeat) / P
    print(f"NMSE vs truth: BCS {nmse(Xb, Ss):.3e}, MT-BCS {nmse(Xm, Ss):.3e}")

    octave = shutil.which("octave-cli")
    measured = bool(args.orig and octave and Path(args.orig, "BCS_demo").is_dir())
    if measured:
        o_b, o_m, oXb, oXm = run_octave(Path(args.orig), As, Ys)
        agree_b = np.max(np.linalg.norm(Xb - oXb, axis=1) / np.linalg.norm(oXb, axis=1))
        agree_m = np.max(np.linalg.norm(Xm - oXm, axis=1) / np.linalg.norm(oXm, axis=1))
        src = "measured now (octave-cli)"
    else:
        o_b, o_m = RECORDED_OCTAVE["bcs"], RECORDED_OCTAVE["mtbcs"]
        src = "RECORDED earlier, not measured in this run"
    print(f"Octave originals: {src}")
    print(f"{'':10s} {'octave s':>10s} {'cscore s':>10s} {'speed-up':>9s} {'batch s':>10s}")
    for name, o, c, cb in (("BCS", o_b, t_b, t_bb), ("MT-BCS", o_m, t_m, t_mb)):
        print(f"{name:10s} {o:10.4f} {c:10.5f} {o / c:8.1f}x {cb:10.5f}")
    print(
        "cscore s: one call per problem, 1 thread; batch s: one call for all problems "
        f"sharing one A, {args.threads} thread(s), per problem"
    )
    if measured:
        print(
            "max relative difference cscore vs originals per channel: "
            f"BCS {agree_b:.2e}, MT-BCS {agree_m:.2e}"
        )


if __name__ == "__main__":
    main()
