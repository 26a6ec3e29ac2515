"""Regenerate tests/reference/bcs_reference.npz by running the authors' MATLAB code.

Usage (needs GNU Octave and the original code, github.com/shihaoji/bcs)::

    python tests/reference/make_bcs_reference.py /path/to/shihaoji-bcs

The inputs are drawn here from fixed seeds; the outputs come from running
``BCS_demo/BCS_fast_rvm.m`` and ``MT_CS_demo/mt_CS.m`` under ``octave-cli`` on
those inputs.  Nothing from the originals is stored except their outputs.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.io

HERE = Path(__file__).resolve().parent

# (name, kind, M, N, L, k, sigma, seed, init_noise_divisor)
CASES = [
    ("bcs_noisy", "bcs", 40, 100, 3, 8, 0.005, 11, 1e2),
    ("bcs_noiseless", "bcs", 30, 80, 2, 6, 0.0, 12, 1e6),
    ("bcs_hard", "bcs", 40, 120, 2, 16, 0.01, 13, 1e2),
    ("mt_shared", "mt", 40, 100, 3, 10, 0.005, 21, 0.0),
    ("mt_single", "mt", 35, 90, 1, 7, 0.005, 22, 0.0),
    ("mt_hard", "mt", 36, 120, 4, 16, 0.01, 23, 0.0),
]

DRIVER = r"""
1;
warning('off', 'all');
load('-v6', '{inp}');
if strcmp(kind, 'bcs')
  L = size(Y, 2); N = size(A, 2);
  X = zeros(N, L); niter = zeros(1, L); sig2 = zeros(1, L);
  for l = 1:L
    y = Y(:, l);
    init = std(y)^2 / divisor;
    [w, used, s2] = BCS_fast_rvm(A, y, init, 1e-8);
    X(used, l) = w; sig2(l) = s2;
    eval(sprintf('used_%d = used(:)'';', l));
  end
  save('-v6', '{out}', 'X', 'sig2', 'used_*');
else
  L = size(Y, 2);
  if L == 1
    [X, ML] = mt_CS(A, Y, a, b, 1e-8);
  else
    P = cell(1, L); T = cell(1, L);
    for l = 1:L, P{{l}} = A; T{{l}} = Y(:, l); end
    [X, ML] = mt_CS(P, T, a, b, 1e-8);
  end
  save('-v6', '{out}', 'X', 'ML');
end
"""


def make_inputs(M: int, N: int, L: int, k: int, sigma: float, seed: int, shared: bool):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, N))
    A /= np.linalg.norm(A, axis=0)
    S = np.zeros((N, L))
    supp = rng.choice(N, k, replace=False)
    for l in range(L):
        s = supp if shared else rng.choice(N, k, replace=False)
        S[s, l] = rng.choice([-1.0, 1.0], k) * (1.0 + rng.random(k))
    Y = A @ S + sigma * rng.standard_normal((M, L))
    return A, S, Y


def main(orig: str) -> None:
    orig_path = Path(orig).resolve()
    out: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, M, N, L, k, sigma, seed, div in CASES:
            A, S, Y = make_inputs(M, N, L, k, sigma, seed, shared=(kind == "mt"))
            inp = Path(tmp) / f"{name}_in.mat"
            res = Path(tmp) / f"{name}_out.mat"
            scipy.io.savemat(
                inp, {"A": A, "Y": Y, "kind": kind, "divisor": div, "a": 1e2 / 0.1, "b": 1.0}
            )
            script = Path(tmp) / f"{name}.m"
            script.write_text(DRIVER.format(inp=inp, out=res))
            sub = "BCS_demo" if kind == "bcs" else "MT_CS_demo"
            subprocess.run(
                [
                    "octave-cli",
                    "--no-gui",
                    "--quiet",
                    "--eval",
                    f"addpath('{orig_path / sub}'); source('{script}');",
                ],
                check=True,
                capture_output=True,
            )
            r = scipy.io.loadmat(res)
            out[f"{name}/A"] = A
            out[f"{name}/Y"] = Y
            out[f"{name}/S_true"] = S
            out[f"{name}/X"] = r["X"]
            if kind == "bcs":
                out[f"{name}/divisor"] = np.array(div)
                out[f"{name}/noise_var"] = r["sig2"].ravel()
                for l in range(L):
                    out[f"{name}/used_{l}"] = r[f"used_{l + 1}"].ravel().astype(np.int64) - 1
            else:
                out[f"{name}/ML"] = r["ML"].ravel()
            print(name, "done")
    np.savez_compressed(HERE / "bcs_reference.npz", **out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/scratch/bcs/orig")
