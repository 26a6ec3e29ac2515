"""Regenerate tests/reference/sbl_reference.npz from the authors' MATLAB programs.

Usage (needs GNU Octave and Zhilin Zhang's TMSBL.m v1.11 and TSBL.m v1.4 in a folder)::

    python tests/reference/make_sbl_reference.py /path/to/folder/with/TMSBL_and_TSBL

Each case draws ``A`` (unit-norm Gaussian columns) and a row-sparse ``S`` whose rows
are AR(1) sequences (coefficient 0.99) from a seeded NumPy generator, runs the
original in ``octave-cli`` with the named preset (``'print', 0``) and stores the
inputs with the original's ``X``, ``gamma_est``, ``count`` and ``B``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.io as sio

#: name -> (alg, preset, seed, M, N, L, K, sigma)
CASES = {
    "tmsbl_no": ("tmsbl", "no", 101, 20, 50, 4, 5, 0.0),
    "tmsbl_small": ("tmsbl", "small", 102, 20, 50, 4, 5, 0.01),
    "tmsbl_mild": ("tmsbl", "mild", 103, 20, 50, 3, 5, 0.05),
    "tmsbl_large": ("tmsbl", "large", 104, 20, 50, 4, 4, 0.2),
    "tmsbl_default_L10": ("tmsbl", "default", 105, 20, 50, 10, 5, 0.02),
    "tsbl_default": ("tsbl", "default", 106, 20, 50, 4, 5, 0.02),
    "tsbl_high": ("tsbl", "high", 107, 20, 50, 4, 5, 0.01),
    "tsbl_low": ("tsbl", "low", 108, 20, 50, 3, 5, 0.1),
    "tsbl_inf": ("tsbl", "inf", 109, 16, 40, 3, 3, 0.0),
}

HARNESS = r"""
function run_one(inp, outp, orig)
  addpath(orig);
  s = load(inp);
  if strcmp(s.alg, 'tmsbl')
    if strcmp(s.preset, 'default')
      [X, gi, ge, count, B] = TMSBL(s.A, s.Y, 'print', 0);
    else
      [X, gi, ge, count, B] = TMSBL(s.A, s.Y, 'noise', s.preset, 'print', 0);
    end
  else
    if strcmp(s.preset, 'default')
      [X, gi, ge, count, B] = TSBL(s.A, s.Y, 'print', 0);
    else
      [X, gi, ge, count, B] = TSBL(s.A, s.Y, 'SNR', s.preset, 'print', 0);
    end
  end
  save('-v7', outp, 'X', 'ge', 'count', 'B');
end
"""


def ar_problem(seed: int, M: int, N: int, L: int, K: int, sigma: float, beta: float = 0.99):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((N, L))
    for i in rng.choice(N, K, replace=False):
        r = np.empty(L)
        r[0] = rng.standard_normal()
        for t in range(1, L):
            r[t] = beta * r[t - 1] + np.sqrt(1 - beta**2) * rng.standard_normal()
        S[i] = r
    Y = A @ S + sigma * rng.standard_normal((M, L))
    return A, S, Y


def main(orig: str) -> None:
    out: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "run_one.m").write_text(HARNESS)
        for name, (alg, preset, seed, M, N, L, K, sigma) in CASES.items():
            A, _S, Y = ar_problem(seed, M, N, L, K, sigma)
            inp, outp = str(Path(tmp, "in.mat")), str(Path(tmp, "out.mat"))
            sio.savemat(inp, dict(A=A, Y=Y, alg=alg, preset=preset))
            subprocess.run(
                ["octave-cli", "--no-gui", "--eval",
                 f"cd('{tmp}'); run_one('{inp}', '{outp}', '{orig}')"],
                check=True,
            )
            o = sio.loadmat(outp)
            out[f"{name}/A"], out[f"{name}/Y"] = A, Y
            out[f"{name}/X"], out[f"{name}/gamma"] = o["X"], o["ge"].ravel()
            out[f"{name}/count"] = np.array(int(o["count"][0, 0]))
            out[f"{name}/B"] = o["B"]
            print(name, int(o["count"][0, 0]))
    np.savez_compressed(Path(__file__).with_name("sbl_reference.npz"), **out)


if __name__ == "__main__":
    main(sys.argv[1])
