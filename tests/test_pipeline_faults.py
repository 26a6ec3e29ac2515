"""Randomized fault injection for ``cscore.decode_file`` (issue 26).

Every round: decode a small problem set with SOMP, interrupt it at a random chunk
(``KeyboardInterrupt`` from ``on_chunk``), damage the output at random (delete,
corrupt or truncate a chunk file, edit ``zarr.json`` or the manifest), then resume.
The resumed run must end with the uninterrupted result, or refuse with a
``ValueError``: never a success over wrong data.  ``CSCORE_FAULT_ROUNDS`` sets the
number of rounds (default 20, so that CI stays fast).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore.pipelines import MANIFEST_NAME, verify_output

#: Pure-Python work (no new C++ paths): left out of the sanitizer run (scripts/sanitize.sh).
pytestmark = pytest.mark.slow

M, N, L = 8, 16, 2
ROUNDS = int(os.environ.get("CSCORE_FAULT_ROUNDS", "20"))


def _chunk_files(out: Path) -> list[Path]:
    return sorted(p for p in (out / "c").rglob("*") if p.is_file())


def _edit_json(path: Path, edit) -> None:
    obj = json.loads(path.read_text())
    path.write_text(json.dumps(edit(obj)))


def _damage(out: Path, rng: np.random.Generator) -> str:
    """Damage ``out`` in one random way; returns what was done."""
    files = _chunk_files(out)
    kinds = ["none", "zarr-dtype", "zarr-shape", "manifest-key", "manifest-list",
             "manifest-chunk", "manifest-checksum", "manifest-done"]
    if files:
        kinds += ["delete", "corrupt", "truncate", "empty"]
    kind = str(rng.choice(kinds))
    if kind in ("delete", "corrupt", "truncate", "empty"):
        f = files[int(rng.integers(len(files)))]
        blob = bytearray(f.read_bytes())
        if kind == "delete":
            f.unlink()
        elif kind == "corrupt":
            i = int(rng.integers(len(blob)))
            blob[i] ^= 1 << int(rng.integers(8))
            f.write_bytes(bytes(blob))
        elif kind == "truncate":
            f.write_bytes(bytes(blob[: int(rng.integers(1, max(2, len(blob))))]))
        else:
            f.write_bytes(b"")
    elif kind == "zarr-dtype":
        _edit_json(out / "zarr.json", lambda z: {**z, "data_type": "int8"})
    elif kind == "zarr-shape":
        _edit_json(out / "zarr.json",
                   lambda z: {**z, "shape": [max(1, z["shape"][0] // 2), *z["shape"][1:]]})
    elif kind.startswith("manifest"):
        man = out / MANIFEST_NAME

        def edit(m):
            if kind == "manifest-key":
                m.pop(sorted(m)[int(rng.integers(len(m)))])
                return m
            if kind == "manifest-list":
                return list(m.items())
            if kind == "manifest-done":  # claim every chunk finished
                m["done"] = list(range(len(files) + 8))
                return m
            if kind == "manifest-chunk":
                m["chunk"] = int(rng.choice([0, -64, m.get("chunk", 1) + 1]))
                return m
            for v in m.values():  # change one recorded checksum, if any
                if isinstance(v, dict) and v:
                    first = sorted(v)[0]
                    v[first] = "0" * 64 if isinstance(v[first], str) else v[first]
            return m

        _edit_json(man, edit)
    return kind


def _one_round(seed: int, tmp: Path) -> str:
    rng = np.random.default_rng(seed)
    B = int(rng.integers(12, 40))
    chunk = int(rng.integers(2, 9))
    A = rng.standard_normal((M, N))
    Y = rng.standard_normal((B, M, L))
    dec = cscore.decoder("somp", A, n_nonzero=3)
    src = tmp / "Y.npy"
    np.save(src, Y)
    ref = np.asarray(cscore.decode_file(dec, src, tmp / "ref", chunk=chunk, progress=False)[:])
    out = tmp / "out"
    n_chunks = -(-B // chunk)
    stop = int(rng.integers(1, n_chunks + 1))

    def interrupt(done: int, total: int) -> None:
        if done == stop:
            raise KeyboardInterrupt

    try:
        cscore.decode_file(dec, src, out, chunk=chunk, progress=False, on_chunk=interrupt)
    except KeyboardInterrupt:
        pass
    kind = _damage(out, rng)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = np.asarray(cscore.decode_file(dec, src, out, chunk=chunk, progress=False)[:])
    except ValueError:
        # a clear refusal; starting afresh must still give the right answer
        got = np.asarray(
            cscore.decode_file(dec, src, out, chunk=chunk, progress=False, overwrite=True)[:]
        )
        kind += " (refused)"
    np.testing.assert_array_equal(got, ref, err_msg=f"seed {seed}: {kind}")
    assert verify_output(out, src).ok, f"seed {seed}: {kind}"
    return kind


@pytest.mark.parametrize("seed", range(ROUNDS))
def test_interrupt_damage_resume(seed: int, tmp_path: Path) -> None:
    pytest.importorskip("zarr")
    _one_round(seed, tmp_path)
