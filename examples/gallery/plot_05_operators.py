"""
Operators instead of matrices: OMP at N = 2^16
==============================================

A partial DCT with N = 65536 columns and M = 2048 rows would take 1 GiB as a
dense float64 matrix.  As a :class:`scipy.sparse.linalg.LinearOperator` (the
rows of the orthonormal DCT-II, applied with :mod:`scipy.fft`) it takes the
memory of a few vectors, and :func:`cscore.omp` decodes with it directly: each
iteration applies ``A^T`` once to the residual and fetches the chosen column as
``A @ e_j``; least squares on the support grows a QR factorization.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.fft
from scipy.sparse.linalg import LinearOperator

import cscore

rng = np.random.default_rng(0)
N, M, k = 2**16, 2**11, 20
rows = np.sort(rng.choice(N, M, replace=False))


def forward(x: np.ndarray) -> np.ndarray:
    """``A x``: M chosen rows of the orthonormal DCT of x."""
    return scipy.fft.dct(np.ravel(x), norm="ortho")[rows]


def adjoint(y: np.ndarray) -> np.ndarray:
    """``A^T y``: the inverse DCT of y placed on the chosen rows."""
    z = np.zeros(N)
    z[rows] = np.ravel(y)
    return scipy.fft.idct(z, norm="ortho")


A = LinearOperator((M, N), matvec=forward, rmatvec=adjoint, dtype=np.float64)
x = np.zeros(N)
support = rng.choice(N, k, replace=False)
x[support] = rng.choice([-1.0, 1.0], k) * rng.uniform(1, 2, k)
y = A @ x + 1e-4 * rng.standard_normal(M)
print(f"N = {N}, M = {M}, k = {k}; a dense A would take {M * N * 8 / 2**30:.0f} GiB")

# %%
# Decode with the operator
# ------------------------
# The columns of a partial DCT have nearly equal norms, which the selection
# assumes for an operator (pass ``column_norms=`` otherwise).

t0 = time.perf_counter()
res = cscore.omp(A, y, n_nonzero=k, return_result=True)
seconds = time.perf_counter() - t0
found = np.flatnonzero(res.x)
print(f"stopped: {res.stop_reason}; support found: {set(found) == set(support)}; "
      f"relative error {np.linalg.norm(res.x - x) / np.linalg.norm(x):.1e}; "
      f"{seconds:.2f} s")

# %%
# The signal and its estimate
# ---------------------------

fig, ax = plt.subplots(figsize=(9, 3.5))
ax.stem(support, x[support], linefmt="k-", markerfmt="ko", basefmt=" ", label="true")
ax.plot(found, res.x[found], "x", color="tab:orange", markersize=9, mew=2, label="OMP")
ax.set_xlim(0, N)
ax.set_xlabel(f"index (N = 2^16 = {N})")
ax.set_ylabel("value")
ax.set_title(f"{k} nonzeros recovered from M = {M} partial-DCT measurements")
ax.legend()
fig.tight_layout()
plt.show()
