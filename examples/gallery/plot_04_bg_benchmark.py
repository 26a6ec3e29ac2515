"""
The Bernoulli-Gaussian benchmark: OMP, AMP, VAMP and LAMP
=========================================================

The setting in which the AMP/LAMP literature (Borgerding, Schniter, Rangan, IEEE
TSP 2017) compares its decoders: ``x`` in R^500 with i.i.d. entries, 0 with
probability 0.9 and N(0, 1) otherwise, ``y = A x + w`` with ``A`` i.i.d.
N(0, 1/250) and noise at SNR = 40 dB.  The score is the NMSE
``||x_hat - x||^2 / ||x||^2`` averaged over problems, in dB; the *support oracle*
(least squares that knows the support, regularized by the noise) is the bound.

``cscore bench bg`` runs the full benchmark; here 50 problems are drawn with
:mod:`cscore.bench.bg` for the matrix of the shipped LAMP model
``lamp-bg-n500-m250`` (14 layers, trained for this ``A``).
"""

import matplotlib.pyplot as plt
import numpy as np

import cscore
from cscore.bench import bg

lamp = cscore.pretrained("lamp-bg-n500-m250")
M, N = lamp.A.shape
problems = bg.bg_problems(50, A=lamp.A, seed=0)
X = problems.X[..., 0]  # (P, N): one channel per problem
print(f"{len(X)} problems, N = {N}, M = {M}, noise variance {problems.noise_var:.2e}")


def nmse_db(X_hat: np.ndarray) -> float:
    """Mean NMSE over problems, in dB."""
    X_hat = np.asarray(X_hat).reshape(X.shape)
    return float(10 * np.log10(np.mean(np.sum((X_hat - X) ** 2, axis=1)
                                       / np.sum(X**2, axis=1))))


# %%
# Every decoder on the same problems
# ----------------------------------
# OMP stops when the residual reaches the expected noise norm; AMP and VAMP learn
# the Bernoulli-Gaussian prior's parameters by EM and stop at convergence; LAMP
# runs its trained layers.

noise_norm = np.sqrt(M * problems.noise_var)
scores = {
    "OMP": nmse_db(cscore.omp(lamp.A, problems.Y[..., 0].T, tol=noise_norm).T),
    "AMP": nmse_db(cscore.amp(lamp.A, problems.Y)),
    "VAMP": nmse_db(cscore.vamp(lamp.A, problems.Y)),
    "LAMP (14 layers)": nmse_db(lamp.decode(problems.Y)),
    "support oracle": nmse_db(bg.support_oracle(problems)),
}
for name, score in scores.items():
    print(f"{name:18s} {score:6.1f} dB")

# %%
# AMP and VAMP iteration by iteration
# -----------------------------------
# The curves of the papers' figures: the NMSE after each iteration.

curves = {name: bg.iteration_curve(name, problems, 20) for name in ("amp", "vamp")}
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
left.barh(list(scores), list(scores.values()), color="tab:blue")
left.invert_yaxis()
left.set_xlabel("NMSE (dB), lower is better")
left.set_title("final NMSE")
for name, curve in curves.items():
    right.plot(np.arange(1, len(curve) + 1), curve, "o-", markersize=3, label=name.upper())
right.axhline(scores["support oracle"], color="k", linestyle=":", label="support oracle")
right.set_xlabel("iteration")
right.set_ylabel("NMSE (dB)")
right.set_title("per iteration")
right.legend()
fig.tight_layout()
plt.show()
