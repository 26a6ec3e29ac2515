"""
LSTM-CS vs SOMP on MNIST blocks
===============================

The paper's main experiment (Palangi, Ward, Deng 2016).  Four digits, one per
channel (0, 1, 2 and 3), are resized to 24x24 and cut into 12x12 blocks; each
block keeps its k = 20 largest pixels, so a problem is a (144, 4) sparse ``S``
whose four channels share no support.  ``Y = A S + noise`` with the M = 72 row
matrix of the shipped model ``mnist-m72`` and sigma = 0.005.

SOMP assumes one support for all channels; LSTM-CS learned from digits which
pixel each channel needs next, given the residuals of all of them.

**Data.** MNIST is not shipped with cscore.  When a checkout has the project's
reference data (``../shared/data/mnist``) this example uses its held-out digits;
otherwise it says so and builds problems the same way from the images that
PyWavelets bundles (as ``cscore demo`` does), which are not digits: LSTM-CS then
decodes images unlike its training data and its advantage shrinks.
"""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import cscore
from cscore.bench import mnist_problems
from cscore.datasets import (
    demo_images,
    expected_noise_tol,
    measure,
    mnist_mmv_problems,
    problems_to_images,
)
from cscore.metrics import nmse

model = cscore.pretrained("mnist-m72")
k, sigma = 20, 0.005


def find_mnist() -> Path | None:
    """The reference MNIST folder (``../shared/data/mnist`` of a checkout), if any."""
    for base in (Path.cwd(), *Path.cwd().parents):
        folder = base.parent / "shared" / "data" / "mnist"
        if (base / "pyproject.toml").is_file() and folder.is_dir():
            return folder
    return None


folder = find_mnist()
if folder is not None:
    print(f"MNIST digits from {folder} (held out from training)")
    problems = mnist_problems(folder, model.A, k, sigma=sigma, seed=0, n_tuples=25)
    S, Y = problems.S, problems.Y
else:
    print("NOTE: ../shared/data/mnist is absent: using PyWavelets' bundled images instead "
          "of digits (the model was trained on digits, so expect larger errors)")
    tiles = np.concatenate([im.reshape(4, 24, 4, 24).transpose(0, 2, 1, 3).reshape(16, 24, 24)
                            for im in demo_images(96).values()])
    S = mnist_mmv_problems(tiles, np.arange(len(tiles)).reshape(-1, 4), k)
    Y, _ = measure(model.A, S, sigma, seed=0)
print(f"{len(S)} problems: S {S.shape[1:]}, Y {Y.shape[1:]}")

# %%
# Decode with the paper's stopping rule
# -------------------------------------
# Both stop once the summed residual norm reaches the noise level expected for
# sigma (``tol``).

tol = expected_noise_tol(model.M, model.L, sigma)
S_lstm = model.decode(Y, tol=tol)
S_somp = cscore.somp(model.A, Y, tol=tol)
print(f"NMSE  LSTM-CS {nmse(S_lstm, S):.4f}   SOMP {nmse(S_somp, S):.4f}")

# %%
# The first tuple, decoded
# ------------------------
# Each row is one channel (one digit); the 24x24 images are put back together
# from their four blocks.

rows = {"original": S, "LSTM-CS": S_lstm, "SOMP": S_somp}
images = {name: problems_to_images(np.asarray(s[:4]))[0] for name, s in rows.items()}
fig, axes = plt.subplots(model.L, len(rows), figsize=(2.2 * len(rows), 2.2 * model.L))
for col, (name, ims) in enumerate(images.items()):
    for row in range(model.L):
        ax = axes[row, col]
        ax.imshow(ims[row], cmap="gray")
        ax.axis("off")
    axes[0, col].set_title(name)
fig.tight_layout()
plt.show()
