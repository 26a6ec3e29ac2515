"""cscore.stream and cscore decode / cscore.decode_file: ordering, back-pressure, resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore.pipelines import MANIFEST_NAME


def need_zarr():  # the pipeline extra (zarr 3 needs Python >= 3.11); streams do not need it
    return pytest.importorskip("zarr")


M, N, L = 10, 20, 2


@pytest.fixture
def dec(rng: np.random.Generator) -> cscore.Decoder:
    A = rng.standard_normal((M, N))
    return cscore.decoder("somp", A, n_nonzero=3)


def frames_of(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal((n, M, L))


class Counting:
    """An iterator that counts how many frames were taken from it."""

    def __init__(self, frames: np.ndarray) -> None:
        self.frames = frames
        self.taken = 0

    def __iter__(self) -> Counting:
        return self

    def __next__(self) -> np.ndarray:
        if self.taken >= len(self.frames):
            raise StopIteration
        self.taken += 1
        return self.frames[self.taken - 1]


def stream_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("cscore-stream")]


@pytest.mark.parametrize("workers", [1, 3])
def test_stream_order_and_values(dec, rng, workers) -> None:
    Y = frames_of(rng, 53)
    out = list(cscore.stream(dec, iter(Y), batch=8, max_latency=0.001, workers=workers))
    assert len(out) == 53
    # every result is the decoder's answer for its own frame, in input order
    np.testing.assert_array_equal(np.stack(out), dec(Y))


@pytest.mark.parametrize("workers", [1, 2])
def test_stream_back_pressure(dec, rng, workers) -> None:
    src = Counting(frames_of(rng, 500))
    batch, ahead = 4, 6
    bound = ahead + workers * batch + 1
    it = cscore.stream(dec, src, batch=batch, max_latency=0.0, read_ahead=ahead,
                       workers=workers)
    consumed = 0
    for _ in it:
        consumed += 1
        time.sleep(0.002)  # a slow consumer
        assert src.taken - consumed <= bound
        if consumed == 40:
            break
    time.sleep(0.05)
    assert src.taken - consumed <= bound
    it.close()
    assert not any(t.is_alive() for t in stream_threads())


def test_stream_source_error_propagates_and_thread_ends(dec, rng) -> None:
    Y = frames_of(rng, 10)

    def source():
        yield from Y[:5]
        raise RuntimeError("sensor failed")

    got = []
    with pytest.raises(RuntimeError, match="sensor failed"):
        for r in cscore.stream(dec, source(), batch=2, max_latency=0.0):
            got.append(r)
    np.testing.assert_array_equal(np.stack(got), dec(Y[: len(got)]))
    time.sleep(0.05)
    assert not any(t.is_alive() for t in stream_threads())


def test_stream_bad_frame_named(dec, rng) -> None:
    frames = [*frames_of(rng, 3), np.zeros((M + 1, L))]
    with pytest.raises(ValueError, match="frame 3"):
        list(cscore.stream(dec, frames, batch=4, max_latency=0.01))
    with pytest.raises(ValueError, match="batch"):
        cscore.stream(dec, frames, batch=0)


def test_async_stream(dec, rng) -> None:
    Y = frames_of(rng, 37)

    async def source():
        for i, y in enumerate(Y):
            if i % 5 == 0:
                await asyncio.sleep(0.002)
            yield y

    async def main() -> list[np.ndarray]:
        return [r async for r in cscore.stream(dec, source(), batch=6, max_latency=0.001)]

    out = asyncio.run(main())
    np.testing.assert_array_equal(np.stack(out), dec(Y))
    assert not any(t.is_alive() for t in stream_threads())

    async def first_three() -> list[np.ndarray]:  # leave early: the helpers stop
        got = []
        agen = cscore.stream(dec, source(), batch=4, max_latency=0.0)
        async for r in agen:
            got.append(r)
            if len(got) == 3:
                break
        await agen.aclose()
        return got

    np.testing.assert_array_equal(np.stack(asyncio.run(first_three())), dec(Y[:3]))
    assert not any(t.is_alive() for t in stream_threads())


# ---------------------------------------------------------------- decode_file
def test_decode_file_npy_and_zarr_inputs(dec, rng, tmp_path) -> None:
    zarr = need_zarr()
    Y = frames_of(rng, 45)
    np.save(tmp_path / "Y.npy", Y)
    zarr.save_array(str(tmp_path / "Y.zarr"), Y)
    want = dec(Y)
    for name in ("Y.npy", "Y.zarr"):
        out = tmp_path / f"out-{name}.zarr"
        arr = cscore.decode_file(dec, tmp_path / name, out, chunk=8, progress=False)
        assert arr.shape == (45, N, L)
        np.testing.assert_array_equal(arr[:], want)
        man = json.loads((out / MANIFEST_NAME).read_text())
        assert man["complete"] and man["done"] == list(range(6))
    # a finished run is a no-op when run again
    arr = cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "out-Y.npy.zarr",
                             progress=False)
    np.testing.assert_array_equal(arr[:], want)


def test_decode_file_resumes_and_refuses_changed_input(dec, rng, tmp_path) -> None:
    need_zarr()
    Y = frames_of(rng, 40)
    np.save(tmp_path / "Y.npy", Y)
    out = tmp_path / "S.zarr"

    def stop_after(done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=7, progress=False,
                           on_chunk=stop_after)
    man = json.loads((out / MANIFEST_NAME).read_text())
    assert man["done"] == [0, 1] and not man["complete"]  # what finished was flushed
    seen = []
    arr = cscore.decode_file(dec, tmp_path / "Y.npy", out, progress=False,
                             on_chunk=lambda d, t: seen.append(d))
    assert seen == [3, 4, 5, 6]  # only the missing chunks
    np.testing.assert_array_equal(arr[:], dec(Y))
    # the input changes: refused
    Y2 = Y.copy()
    Y2[3, 0, 0] += 1e-9
    np.save(tmp_path / "Y.npy", Y2)
    with pytest.raises(ValueError, match="changed"):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, progress=False)
    # another decoder: refused
    np.save(tmp_path / "Y.npy", Y)
    other = cscore.decoder("somp", dec.A, n_nonzero=2)
    with pytest.raises(ValueError, match="another decoder"):
        cscore.decode_file(other, tmp_path / "Y.npy", out, progress=False)
    # not a cscore run: refused unless overwrite
    (tmp_path / "junk").mkdir()
    with pytest.raises(ValueError, match="overwrite"):
        cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "junk", progress=False)


def test_decode_file_bad_input(dec, tmp_path) -> None:
    need_zarr()
    np.save(tmp_path / "bad.npy", np.zeros((4, M + 1, L)))
    with pytest.raises(ValueError, match="M = 11"):
        cscore.decode_file(dec, tmp_path / "bad.npy", tmp_path / "o.zarr", progress=False)
    np.save(tmp_path / "bad2.npy", np.zeros((M, L)))
    with pytest.raises(ValueError, match="shape"):
        cscore.decode_file(dec, tmp_path / "bad2.npy", tmp_path / "o.zarr", progress=False)


def _cli(*args: str, **kw) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    # the cscore under test (the source tree in development, site-packages in CI)
    pkg_root = str(Path(cscore.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([pkg_root, env.get("PYTHONPATH", "")])
    return subprocess.Popen([sys.executable, "-m", "cscore", "decode", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_cli_sigkill_then_resume_identical(tmp_path) -> None:
    """A run killed with SIGKILL mid-way, then resumed, gives the uninterrupted output."""
    zarr = need_zarr()
    rng = np.random.default_rng(7)
    A = rng.standard_normal((64, 256))
    dec = cscore.decoder("somp", A, n_nonzero=32)
    cfg = dec.save(tmp_path / "dec.json", inline=False)
    Y = rng.standard_normal((12000, 64, 2))
    np.save(tmp_path / "Y.npy", Y)
    common = ["--config", str(cfg), "--input", str(tmp_path / "Y.npy"), "--chunk", "400",
              "--no-progress"]
    ref = cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "ref.zarr", chunk=400,
                             progress=False)[:]
    out = tmp_path / "out.zarr"
    man = out / MANIFEST_NAME
    killed_mid_run = 0
    for _ in range(2):
        p = _cli(*common, "--output", str(out))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60 and p.poll() is None:  # until chunks get recorded
            if man.is_file() and len(json.loads(man.read_text()).get("done", [])) >= 3:
                break
            time.sleep(0.005)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        done = json.loads(man.read_text())["done"]
        killed_mid_run += 0 < len(done) < 30
    assert killed_mid_run >= 1
    # Ctrl-C (SIGINT): the command stops, says so, exits 130 with its chunks recorded
    n_before = len(json.loads(man.read_text())["done"])
    p = _cli(*common, "--output", str(out))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60 and p.poll() is None:
        if len(json.loads(man.read_text()).get("done", [])) >= n_before + 2:
            break
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    if p.returncode == 130:  # (0 if it had just finished)
        assert b"interrupted" in err and b"run the same command to resume" in err
        assert len(json.loads(man.read_text())["done"]) >= n_before + 2
    p = _cli(*common, "--output", str(out))
    assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    got = zarr.open_array(str(out), mode="r")[:]
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, dec(Y))
    assert json.loads(man.read_text())["complete"]
    assert not list(out.rglob("*.partial"))


def test_cli_flags_and_changed_input(rng, tmp_path) -> None:
    zarr = need_zarr()
    A = rng.standard_normal((M, N))
    np.save(tmp_path / "A.npy", A)
    Y = frames_of(rng, 30)
    np.save(tmp_path / "Y.npy", Y)
    from cscore.cli import main

    base = ["decode", "--decoder", "somp", "--matrix", str(tmp_path / "A.npy"),
            "--n-nonzero", "2", "--input", str(tmp_path / "Y.npy"), "--chunk", "8",
            "--no-progress"]
    args = [*base, "--output", str(tmp_path / "o.zarr")]
    assert main(args) == 0
    got = zarr.open_array(str(tmp_path / "o.zarr"), mode="r")[:]
    np.testing.assert_array_equal(got, cscore.somp(A, Y, n_nonzero=2))
    np.save(tmp_path / "Y.npy", Y[::-1])
    assert main(args) == 2  # changed input: an error, no traceback
    assert main([*base, "--output", str(tmp_path / "p.zarr"), "--set", "bogus=1"]) == 2
    assert main([*base, "--output", str(tmp_path / "o.zarr"), "--overwrite"]) == 0
