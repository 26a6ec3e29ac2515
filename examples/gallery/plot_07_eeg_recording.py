"""
A real EEG recording, compressed on the sensor and decoded as a stream
======================================================================

A 14-channel scalp EEG (16 s at 128 Hz, the sample recording that the ``spkit``
wheel ships; ``pip install "cscore-decoders[sensor]"``) is compressed the way a wireless
headset would: every window of N = 64 samples of every channel is measured with
a sparse binary M x 64 matrix (two ones per column, so each measurement is a sum
of a few samples).  The receiver decodes the DCT coefficients of the windows,
with the 14 channels as the channels of one MMV problem, from a stream of
measurement frames (:func:`cscore.stream`).

This is ``cscore demo sensor`` for M = 32 (a compression ratio of 50 %), with
the settings chosen on the recording's validation part (see the sensor guide).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

import cscore
from cscore.datasets.sensor import (
    binary_sensing_matrix,
    dct_matrix,
    load_eeg14,
    split_recording,
    windows,
)

recording = load_eeg14()  # read from spkit's wheel without importing spkit
parts = split_recording(recording)
scale = parts["train"].std()  # a fixed constant of the receiver (microvolts)
N, M = 64, 32
Phi = binary_sensing_matrix(M, N, d=2, seed=0)  # what the headset multiplies by
D = dct_matrix(N)  # orthonormal DCT: s = D x
A = Phi @ D.T  # the decoders' matrix: y = Phi x = (Phi D^T) s
test = windows(parts["test"], N)  # (8, 64, 14): the last 4 s
print(f"{recording.signal.shape[1]} channels at {recording.fs:g} Hz; "
      f"{len(test)} test windows of {N} samples, {M} measurements each")

# %%
# Decode the stream
# -----------------
# Frames arrive one window at a time; :func:`cscore.stream` batches them and
# yields the decoded windows in order.  The score is the guide's: per channel
# ``||x - x_hat||^2 / ||x||^2`` in the time domain, averaged over the channels.
# (T-MSBL reaches its iteration limit on these windows, which are not exactly
# sparse; its warning is silenced here.)

decoders = {
    "SOMP": cscore.decoder("somp", A, n_nonzero=M // 4),
    "T-MSBL": cscore.decoder("tmsbl", A, noise="mild"),
    "LSTM-CS": cscore.decoder("lstm-cs", model="sensor-eeg14-dct-m32", n_nonzero=M // 2),
}
decoded = {}
for name, dec in decoders.items():
    frames = ((Phi @ W) / scale for W in test)  # what the headset sends, (M, 14) each
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        S = np.stack(list(cscore.stream(dec, frames, batch=8)))
    X = scale * (D.T @ S)  # windows back in microvolts, (8, 64, 14)
    decoded[name] = X
    per_channel = np.sum((X - test) ** 2, axis=(0, 1)) / np.sum(test**2, axis=(0, 1))
    print(f"{name:8s} mean NMSE {per_channel.mean():.4f}")

# %%
# One channel of the test part
# ----------------------------

channel = recording.channels.index("O1")
t = np.arange(test.shape[0] * N) / recording.fs + 12.0
fig, ax = plt.subplots(figsize=(10, 3.8))
ax.plot(t, test[:, :, channel].ravel(), "k", linewidth=1.5, label="recorded")
for name, X in decoded.items():
    ax.plot(t, X[:, :, channel].ravel(), linewidth=0.9, label=name)
ax.set_xlim(12.0, 14.0)
ax.set_xlabel("time (s)")
ax.set_ylabel("microvolts")
ax.set_title(f"channel O1, M = {M} of N = {N} samples per window")
ax.legend(ncol=4, fontsize=8)
fig.tight_layout()
plt.show()
