"""
A resumable ``cscore decode`` run
=================================

``cscore decode`` (and :func:`cscore.decode_file`) decodes a (B, M, L) array on
disk into a zarr array (B, N, L) chunk by chunk.  Each finished chunk is written
atomically and recorded with its checksum in a manifest, so a run that stops --
Ctrl-C, a crash, a lost machine -- resumes where it stopped when the same command
runs again, and its output equals that of an uninterrupted run.

Here a first run is cut short after three of eight chunks, the same run is then
finished with the ``cscore`` command (called from Python through
:func:`cscore.cli.main`, as the shell would run it), and ``cscore decode
--verify`` checks the result.  Needs the ``pipeline`` extra (zarr).
"""

import shutil
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import zarr  # the pipeline extra

import cscore
from cscore.cli import main as cscore_command

work = Path(tempfile.mkdtemp(prefix="cscore-decode-"))
model = cscore.pretrained("mnist-m72")  # its 72 x 144 matrix
rng = np.random.default_rng(0)
B = 512
S = np.zeros((B, model.N, model.L))
for b in range(B):
    S[b, rng.choice(model.N, 12, replace=False)] = rng.standard_normal((12, model.L))
Y = model.A @ S + 0.005 * rng.standard_normal((B, model.M, model.L))
np.save(work / "measurements.npy", Y)
dec = cscore.decoder("somp", model.A, tol=0.34)
dec.save(work / "dec.json")  # the decoder as a config file, as a pipeline names it
print((work / "dec.json").read_text()[:100], "...")

# %%
# The first run stops after three chunks
# --------------------------------------
# ``on_chunk`` is called after every recorded chunk; raising there stands in for
# a run that is killed.


class Stopped(Exception):
    """The stand-in for Ctrl-C or a crash."""


def stop_after_three(done: int, total: int) -> None:
    """Called with the number of recorded chunks after each one."""
    if done == 3:
        raise Stopped(f"stopped after {done} of {total} chunks")


t0 = time.perf_counter()
try:
    cscore.decode_file(dec, work / "measurements.npy", work / "decoded.zarr", chunk=64,
                       progress=False, on_chunk=stop_after_three)
except Stopped as stop:
    print(f"first run: {stop} ({time.perf_counter() - t0:.2f} s)")

# %%
# The same command again finishes the run
# ---------------------------------------
# Only the five missing chunks are decoded (the three recorded ones are read back
# and checked against their checksums first).

argv = ["decode", "--config", str(work / "dec.json"), "--input", str(work / "measurements.npy"),
        "--output", str(work / "decoded.zarr"), "--chunk", "64", "--no-progress"]
t0 = time.perf_counter()
status = cscore_command(argv)
print(f"cscore decode ... exited with {status} ({time.perf_counter() - t0:.2f} s)")
status = cscore_command(["decode", "--verify", str(work / "decoded.zarr"),
                         "--input", str(work / "measurements.npy")])
print(f"cscore decode --verify exited with {status}")

# %%
# The output equals an uninterrupted decode
# -----------------------------------------

out = np.asarray(zarr.open_array(str(work / "decoded.zarr"), mode="r"))
print("equal to dec(Y) bit for bit:", np.array_equal(out, dec(Y)))
err = np.linalg.norm(out - S, axis=(1, 2)) / np.linalg.norm(S, axis=(1, 2))

fig, ax = plt.subplots(figsize=(9, 3.5))
chunk_of = np.arange(B) // 64
for first, color, label in ((True, "tab:blue", "first run (chunks 0-2)"),
                            (False, "tab:green", "resumed run (chunks 3-7)")):
    rows = np.flatnonzero((chunk_of < 3) == first)
    ax.plot(rows, err[rows], ".", color=color, markersize=3, label=label)
for c in range(1, 8):
    ax.axvline(64 * c, color="0.8", linewidth=0.8)
ax.set_yscale("log")
ax.set_xlabel("problem (chunks of 64)")
ax.set_ylabel("relative error")
ax.set_title("SOMP over 512 problems, decoded in two runs")
ax.legend()
fig.tight_layout()
plt.show()
shutil.rmtree(work)  # the run's files
