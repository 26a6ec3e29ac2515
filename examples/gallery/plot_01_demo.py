"""
The demo: LSTM-CS, SOMP and OMP on image blocks
===============================================

What ``cscore demo`` does, step by step.  An image that PyWavelets bundles is cut
into 8x8 blocks; each block's DCT is kept to its ``k = 10`` largest coefficients,
so every block is a sparse vector of N = 64 coefficients.  Four blocks form the
L = 4 channels of one MMV problem, measured with the M = 32 row sensing matrix of
the shipped model ``demo-dct-m32`` plus noise (sigma = 0.005).

LSTM-CS (the shipped model), SOMP and OMP decode the same measurements and the
images are put back together from the decoded coefficients.
"""

import time

import matplotlib.pyplot as plt

import cscore
from cscore.datasets import expected_noise_tol, load_demo
from cscore.metrics import nmse

model = cscore.pretrained("demo-dct-m32")
M, N = model.A.shape
sigma, k = 0.005, 10
data = load_demo(k, M=M, L=model.L, A=model.A, sigma=sigma, seed=0)
print(f"{data.Y_test.shape[0]} test problems, Y (M, L) = {data.Y_test.shape[1:]}, N = {N}")

# %%
# Decode
# ------
# LSTM-CS and SOMP stop when the residual reaches the noise level the paper's rule
# expects (``tol``); OMP decodes each channel alone with ``k`` atoms.

tol = expected_noise_tol(M, model.L, sigma)
decoders = {
    "LSTM-CS": lambda Y: model.decode(Y, tol=tol),
    "SOMP": lambda Y: cscore.somp(model.A, Y, tol=tol),
    "OMP": lambda Y: cscore.decoder("omp", model.A, n_nonzero=k)(Y),
}
images = {f"{k}-sparse original": data.to_images(data.S_test)}
for name, decode in decoders.items():
    t0 = time.perf_counter()
    S_hat = decode(data.Y_test)
    seconds = time.perf_counter() - t0
    err = nmse(S_hat, data.S_test)
    print(f"{name:8s} NMSE {err:.4f}  ({1000 * seconds / len(data.Y_test):.2f} ms/problem)")
    images[f"{name}, NMSE {err:.3f}"] = data.to_images(S_hat)

# %%
# The decoded images
# ------------------

fig, axes = plt.subplots(1, len(images), figsize=(3 * len(images), 3.2))
for ax, (title, im) in zip(axes, images.items()):
    ax.imshow(im[0], cmap="gray", vmin=0, vmax=1)
    ax.set_title(title, fontsize=9)
    ax.axis("off")
fig.suptitle(f"M = {M} measurements of N = {N} coefficients per block, L = {model.L}")
fig.tight_layout()
plt.show()
