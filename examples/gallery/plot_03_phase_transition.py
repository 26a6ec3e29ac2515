"""
A phase transition: OMP, SOMP, MT-BCS and AMP
=============================================

Donoho and Tanner's picture of where recovery works.  For each undersampling
ratio ``delta = M / N`` and sparsity ratio ``rho = k / M``, noiseless random
problems (a unit-norm Gaussian ``A``, L = 4 channels sharing one support) are
decoded and the fraction recovered (NMSE below 0.01) is recorded.  Below the
transition curve almost every problem is recovered, above it almost none.

This is :func:`cscore.bench.phase_transition`, what ``cscore bench phase`` runs,
on a coarse grid that takes a few seconds (N = 64, 6 problems per point).
"""

import matplotlib.pyplot as plt
import numpy as np

from cscore.bench import WarningTally, phase_transition

deltas = np.linspace(0.1, 0.9, 9).round(2).tolist()
rhos = np.linspace(0.1, 0.9, 9).round(2).tolist()
decoders = ["omp", "somp", "mtbcs", "amp"]
tally = WarningTally()  # a decoder's warnings (non-convergence) counted, not printed
result = phase_transition(64, deltas, rhos, decoders, L=4, n_trials=6, seed=0,
                          progress=False, tally=tally)
print("warnings:", tally.summary())

# %%
# Success rate on the (delta, rho) grid
# -------------------------------------
# OMP decodes each channel alone; SOMP uses the joint support of the four
# channels, so its region of success is larger.  The Bayesian decoders that share
# the support too, MT-BCS and AMP (joint rows, with a Bernoulli-Gaussian prior
# learned by EM), reach further still.

fig, axes = plt.subplots(1, len(decoders), figsize=(3.4 * len(decoders), 3.4), sharey=True)
for ax, name in zip(axes, decoders):
    success = np.asarray(result["success"][name])
    im = ax.imshow(success, origin="lower", vmin=0, vmax=1, cmap="viridis", aspect="auto",
                   extent=(deltas[0] - 0.05, deltas[-1] + 0.05, rhos[0] - 0.05, rhos[-1] + 0.05))
    ax.set_title(name)
    ax.set_xlabel("delta = M / N")
    print(f"{name:6s} recovered in {success.mean():.0%} of the grid")
axes[0].set_ylabel("rho = k / M")
fig.colorbar(im, ax=axes, label="fraction recovered")
plt.show()
