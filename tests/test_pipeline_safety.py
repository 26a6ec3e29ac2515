"""Pipelines that never lose or invent data (issue 26): guarded outputs, verified
resumes, a lock on the output, decoder fingerprints, and streams that keep every
decoded frame."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore.pipelines import MANIFEST_NAME, ChunkDamageWarning, verify_output
from cscore.pipelines.lock import lock_path

M, N, L = 10, 20, 2


def need_zarr():
    return pytest.importorskip("zarr")


@pytest.fixture
def dec(rng: np.random.Generator) -> cscore.Decoder:
    return cscore.decoder("somp", rng.standard_normal((M, N)), n_nonzero=3)


@pytest.fixture
def Y(rng: np.random.Generator, tmp_path: Path) -> np.ndarray:
    Y = rng.standard_normal((40, M, L))
    np.save(tmp_path / "Y.npy", Y)
    return Y


def manifest(out: Path) -> dict:
    return json.loads((out / MANIFEST_NAME).read_text())


def chunk_files(out: Path) -> list[Path]:
    """The chunk files of a zarr v3 array (under c/), in chunk order."""
    files = [p for p in (out / "c").rglob("*") if p.is_file()]
    return sorted(files, key=lambda p: int(p.relative_to(out / "c").parts[0]))


def stop_after(n: int):
    def cb(done: int, total: int) -> None:
        if done == n:
            raise KeyboardInterrupt

    return cb


# ------------------------------------------------------- 1. output vs input
def test_output_that_is_the_input_npy_is_refused_untouched(dec, Y, tmp_path) -> None:
    need_zarr()
    src = tmp_path / "Y.npy"
    before = src.read_bytes()
    for overwrite in (False, True):
        with pytest.raises(ValueError, match="is the input"):
            cscore.decode_file(dec, src, src, overwrite=overwrite, progress=False)
        assert src.read_bytes() == before
    # another name for the same file (a hard link) is the input too
    os.link(src, tmp_path / "same.npy")
    with pytest.raises(ValueError, match="is the input"):
        cscore.decode_file(dec, src, tmp_path / "same.npy", overwrite=True, progress=False)
    assert src.read_bytes() == before and not lock_path(src).exists()


def test_output_containing_or_inside_the_input_is_refused(dec, Y, tmp_path) -> None:
    zarr = need_zarr()
    zarr.save_array(str(tmp_path / "Y.zarr"), Y)
    files_before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    cases = [
        (tmp_path / "Y.zarr", tmp_path / "Y.zarr", "is the input"),
        (tmp_path / "Y.zarr", tmp_path / "Y.zarr" / "out.zarr", "lies inside"),
        (tmp_path / "Y.npy", tmp_path, "contains"),
        (tmp_path / "Y.zarr", tmp_path / "sub" / ".." / "Y.zarr", "is the input"),
    ]
    for src, out, what in cases:
        with pytest.raises(ValueError, match=what):
            cscore.decode_file(dec, src, out, overwrite=True, progress=False)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == files_before
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "Y.zarr"))[:], Y)
    np.testing.assert_array_equal(np.load(tmp_path / "Y.npy"), Y)
    # the command line: an error, not a traceback, input intact
    from cscore.cli import main

    np.save(tmp_path / "A.npy", dec.A)
    rc = main(["decode", "--decoder", "somp", "--matrix", str(tmp_path / "A.npy"),
               "--n-nonzero", "3", "--input", str(tmp_path / "Y.npy"), "--output",
               str(tmp_path), "--overwrite", "--no-progress"])
    assert rc == 2
    np.testing.assert_array_equal(np.load(tmp_path / "Y.npy"), Y)


def test_symlink_output_with_overwrite_is_refused(dec, Y, tmp_path) -> None:
    need_zarr()
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "keep.txt").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(ValueError, match="symbolic link"):
        cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "link", overwrite=True,
                           progress=False)
    assert (tmp_path / "real" / "keep.txt").read_text() == "x"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="symbolic link to nothing"):
        cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "dangling", progress=False)


# ------------------------------------------------------- 2. verified resume
@pytest.mark.parametrize("damage", ["delete", "flip", "truncate", "zarr.json"])
def test_resume_verifies_every_recorded_chunk(dec, Y, tmp_path, damage) -> None:
    need_zarr()
    out = tmp_path / "S.zarr"
    cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False)
    man = manifest(out)
    assert man["complete"] and sorted(man["chunk_sha256"]) == [str(i) for i in range(5)]
    victim = chunk_files(out)[2]
    if damage == "delete":
        victim.unlink()
    elif damage == "flip":
        raw = bytearray(victim.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        victim.write_bytes(bytes(raw))
    elif damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:-7])
    else:  # the array's metadata is gone: rebuilt from the record, every chunk checked
        (out / "zarr.json").unlink()
    assert not verify_output(out).ok
    seen: list[int] = []
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        arr = cscore.decode_file(dec, tmp_path / "Y.npy", out, progress=False,
                                 on_chunk=lambda d, t: seen.append(d))
    np.testing.assert_array_equal(arr[:], dec(Y))
    damage_warnings = [w.message for w in rec if isinstance(w.message, ChunkDamageWarning)]
    if damage == "zarr.json":  # the chunk files are intact: all verified, none redone
        assert not damage_warnings and seen == []
    else:  # only the damaged chunk is decoded again, and the caller is told
        assert [w.chunks for w in damage_warnings] == [[2]] and seen == [5]
        assert "failed verification" in str(damage_warnings[0])
    assert verify_output(out).ok
    assert manifest(out)["complete"]


def test_cli_verify(dec, Y, tmp_path, capsys) -> None:
    need_zarr()
    from cscore.cli import main

    out = tmp_path / "S.zarr"
    cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False)
    assert main(["decode", "--verify", str(out)]) == 0
    assert "OK" in capsys.readouterr().out
    assert main(["decode", "--verify", str(out), "--input", str(tmp_path / "Y.npy")]) == 0
    np.save(tmp_path / "Y2.npy", Y[::-1])
    assert main(["decode", "--verify", str(out), "--input", str(tmp_path / "Y2.npy")]) == 1
    chunk_files(out)[1].unlink()
    assert main(["decode", "--verify", str(out)]) == 1
    assert "damaged" in capsys.readouterr().out
    # an unfinished run is not a verified one
    part = tmp_path / "P.zarr"
    with pytest.raises(KeyboardInterrupt):
        cscore.decode_file(dec, tmp_path / "Y.npy", part, chunk=8, progress=False,
                           on_chunk=stop_after(2))
    rep = verify_output(part)
    assert not rep.ok and rep.missing == [2, 3, 4] and not rep.damaged
    assert main(["decode", "--verify", str(tmp_path)]) == 2  # not a run


def test_cli_reports_redecoded_chunks(dec, Y, tmp_path, capsys) -> None:
    need_zarr()
    from cscore.cli import main

    np.save(tmp_path / "A.npy", dec.A)
    args = ["decode", "--decoder", "somp", "--matrix", str(tmp_path / "A.npy"),
            "--n-nonzero", "3", "--input", str(tmp_path / "Y.npy"), "--output",
            str(tmp_path / "S.zarr"), "--chunk", "8", "--no-progress"]
    assert main(args) == 0
    chunk_files(tmp_path / "S.zarr")[3].unlink()
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "1 recorded chunk(s) failed verification and were decoded again" in err
    got = need_zarr().open_array(str(tmp_path / "S.zarr"))[:]
    np.testing.assert_array_equal(got, dec(Y))


# ------------------------------------------------------- 3. a lock on the output
def test_second_writer_is_refused_while_the_first_runs(dec, Y, tmp_path) -> None:
    need_zarr()
    out = tmp_path / "S.zarr"
    errors = []

    def intruder(done: int, total: int) -> None:
        if done == 2:  # a second run, even with overwrite, while this one writes
            try:
                cscore.decode_file(dec, tmp_path / "Y.npy", out, overwrite=True,
                                   progress=False)
            except ValueError as exc:
                errors.append(str(exc))

    arr = cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False,
                             on_chunk=intruder)
    assert len(errors) == 1 and "in use by another cscore decode run" in errors[0]
    assert f"pid {os.getpid()}" in errors[0]
    np.testing.assert_array_equal(arr[:], dec(Y))
    assert verify_output(out).ok
    assert not lock_path(out).exists()  # released at the end


def _write_lock(out: Path, pid: int, host: str | None = None) -> None:
    lock_path(out).write_text(json.dumps({"cscore_lock": 1, "pid": pid,
                                          "host": host or socket.gethostname(),
                                          "time": "then", "token": "t"}))


def test_stale_lock_is_taken_over_live_one_refused(dec, Y, tmp_path) -> None:
    need_zarr()
    out = tmp_path / "S.zarr"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_lock(out, dead.pid)  # a run killed with SIGKILL leaves this behind
    arr = cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False)
    np.testing.assert_array_equal(arr[:], dec(Y))
    assert not lock_path(out).exists()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _write_lock(out, live.pid)
        with pytest.raises(ValueError, match=f"pid {live.pid}"):
            cscore.decode_file(dec, tmp_path / "Y.npy", out, overwrite=True, progress=False)
        assert verify_output.__name__ and manifest(out)["complete"]  # nothing was wiped
        with pytest.raises(ValueError, match="being written"):
            verify_output(out)
    finally:
        live.kill()
        live.wait()
    _write_lock(out, 1, host="another-host.example")  # liveness unknown: never broken
    with pytest.raises(ValueError, match=r"another-host\.example"):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, progress=False)


def test_stale_lock_takeover_has_one_winner(dec, tmp_path) -> None:
    from cscore.pipelines.lock import OutputLock

    out = tmp_path / "S.zarr"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for _ in range(5):
        _write_lock(out, dead.pid)
        won: list[OutputLock] = []
        refused: list[OutputLock] = []
        go = threading.Barrier(6)

        def take(go=go, won=won, refused=refused) -> None:
            lk = OutputLock(out)
            go.wait()
            try:
                lk.acquire()
                won.append(lk)
            except ValueError:
                refused.append(lk)

        ts = [threading.Thread(target=take) for _ in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(won) == 1 and len(refused) == 5
        assert json.loads(lock_path(out).read_text())["token"] == won[0].token
        won[0].release()
        assert not lock_path(out).exists()


# ------------------------------------------------------- 4. decoder fingerprint
def test_model_object_decoder_fingerprint_refuses_other_settings_and_weights(tmp_path) -> None:
    need_zarr()
    dct = cscore.pretrained("msrc-buildings-dct-m32-lstm")
    haar = cscore.pretrained("msrc-buildings-haar-m32-lstm")
    rng = np.random.default_rng(5)
    Y = rng.standard_normal((12, dct.M, dct.L))
    np.save(tmp_path / "Y.npy", Y)
    out = tmp_path / "S.zarr"
    d1 = cscore.decoder("lstm-cs", model=dct, n_nonzero=4)
    with pytest.raises(KeyboardInterrupt):
        cscore.decode_file(d1, tmp_path / "Y.npy", out, chunk=4, progress=False,
                           on_chunk=stop_after(1))
    fp = manifest(out)["decoder"]
    assert fp["name"] == "lstm-cs" and fp["settings"] == {"n_nonzero": 4}
    assert len(fp["model"]["sha256"]) == 64
    for other in (cscore.decoder("lstm-cs", model=dct, n_nonzero=5),
                  cscore.decoder("lstm-cs", model=haar, n_nonzero=4)):
        with pytest.raises(ValueError, match="another decoder"):
            cscore.decode_file(other, tmp_path / "Y.npy", out, progress=False)
    # the same model, as an object again or by its pretrained name: accepted
    arr = cscore.decode_file(cscore.decoder("lstm-cs", model="msrc-buildings-dct-m32-lstm",
                                            n_nonzero=4), tmp_path / "Y.npy", out,
                             progress=False)
    np.testing.assert_array_equal(arr[:], d1(Y))


def test_matrix_decoder_fingerprint(dec, Y, tmp_path) -> None:
    need_zarr()
    out = tmp_path / "S.zarr"
    with pytest.raises(KeyboardInterrupt):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False,
                           on_chunk=stop_after(1))
    A2 = dec.A.copy()
    A2[0, 0] = np.nextafter(A2[0, 0], 9.0)
    with pytest.raises(ValueError, match="another sensing matrix"):
        cscore.decode_file(cscore.decoder("somp", A2, n_nonzero=3), tmp_path / "Y.npy", out,
                           progress=False)
    with pytest.raises(ValueError, match="settings"):
        cscore.decode_file(cscore.decoder("somp", dec.A, n_nonzero=3, tol=0.1),
                           tmp_path / "Y.npy", out, progress=False)


# ------------------------------------------------------- 5. the array's metadata
@pytest.mark.parametrize("edit", ["dtype", "shape"])
def test_edited_array_metadata_is_refused(dec, Y, tmp_path, edit) -> None:
    need_zarr()
    out = tmp_path / "S.zarr"
    with pytest.raises(KeyboardInterrupt):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False,
                           on_chunk=stop_after(2))
    meta = json.loads((out / "zarr.json").read_text())
    if edit == "dtype":
        meta["data_type"] = "int8"
    else:
        meta["shape"] = [24, N, L]
    (out / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="metadata"):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, progress=False)
    assert verify_output(out).problem is not None


# ------------------------------------------------------- manifests and chunk sizes
@pytest.mark.parametrize("edit", [
    lambda m: [m],
    lambda m: {k: v for k, v in m.items() if k != "shape"},
    lambda m: {**m, "chunk": 0},
    lambda m: {**m, "chunk": -64},
    lambda m: {**m, "chunk": True},
    lambda m: {**m, "chunk": 8.9},
    lambda m: {**m, "done": [99]},
    lambda m: {**m, "cscore_decode": 7},
])
def test_damaged_manifest_is_a_clear_error(dec, Y, tmp_path, edit) -> None:
    need_zarr()
    out = tmp_path / "S.zarr"
    with pytest.raises(KeyboardInterrupt):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False,
                           on_chunk=stop_after(1))
    (out / MANIFEST_NAME).write_text(json.dumps(edit(manifest(out))))
    with pytest.raises(ValueError, match=r"manifest .* is damaged"):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, progress=False)


def test_chunk_is_capped_at_the_number_of_problems(dec, Y, tmp_path) -> None:
    need_zarr()
    out = tmp_path / "S.zarr"
    arr = cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=4_000_000, progress=False)
    assert arr.chunks[0] == 40 and manifest(out)["chunk"] == 40
    np.testing.assert_array_equal(arr[:], dec(Y))
    # resuming with the chunk the user gave first is the same run
    cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=4_000_000, progress=False)


def test_manifest_of_an_older_cscore_is_resumed_safely(dec, Y, tmp_path) -> None:
    """A version-1 manifest (no checksums) resumes; its recorded chunks are decoded again."""
    need_zarr()
    out = tmp_path / "S.zarr"
    with pytest.raises(KeyboardInterrupt):
        cscore.decode_file(dec, tmp_path / "Y.npy", out, chunk=8, progress=False,
                           on_chunk=stop_after(2))
    m = manifest(out)
    old = {k: m[k] for k in ("input", "input_sha256", "shape", "dtype", "chunk", "done",
                             "complete")}
    old.update(cscore_decode=1, decoder=None)
    (out / MANIFEST_NAME).write_text(json.dumps(old))
    chunk_files(out)[0].unlink()  # what the old run recorded cannot be trusted
    with pytest.warns(ChunkDamageWarning, match="older cscore"):
        arr = cscore.decode_file(dec, tmp_path / "Y.npy", out, progress=False)
    np.testing.assert_array_equal(arr[:], dec(Y))
    assert manifest(out)["cscore_decode"] == 2 and verify_output(out).ok


# ------------------------------------------------------- 6. streams keep every frame
class Slow:
    """A decoder that takes a while per batch, so batches are in flight when errors come."""

    def __init__(self, dec: cscore.Decoder, delay: float) -> None:
        self.dec, self.delay = dec, delay

    def __call__(self, Y: np.ndarray) -> np.ndarray:
        time.sleep(self.delay)
        return self.dec(Y)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_stream_yields_every_frame_before_the_source_error(dec, rng, workers) -> None:
    Y = rng.standard_normal((77, M, L))

    def source():
        yield from Y
        raise RuntimeError("sensor failed at frame 77")

    got = []
    with pytest.raises(RuntimeError, match="sensor failed"):
        for r in cscore.stream(Slow(dec, 0.01), source(), batch=8, max_latency=1.0,
                               workers=workers):
            got.append(r)
    assert len(got) == 77
    np.testing.assert_array_equal(np.stack(got), dec(Y))


@pytest.mark.parametrize("workers", [1, 3])
def test_stream_bad_frame_keeps_its_neighbours(dec, rng, workers) -> None:
    Y = rng.standard_normal((30, M, L))
    Y[13, 1, 0] = np.nan
    got = []
    with pytest.raises(ValueError, match="frame 13") as ei:
        for r in cscore.stream(dec, iter(Y), batch=8, max_latency=1.0, workers=workers):
            got.append(r)
    assert len(got) == 13  # frames 8..12 share the bad frame's batch: decoded, yielded
    np.testing.assert_array_equal(np.stack(got), dec(Y[:13]))
    assert "NaN" in str(ei.value)
    bad_shape = [*Y[:5], np.zeros((M + 1, L))]
    got = []
    with pytest.raises(ValueError, match="frame 5"):
        for r in cscore.stream(dec, bad_shape, batch=8, max_latency=1.0):
            got.append(r)
    np.testing.assert_array_equal(np.stack(got), dec(Y[:5]))


def test_async_stream_yields_every_frame_before_the_source_error(dec, rng) -> None:
    import asyncio

    Y = rng.standard_normal((21, M, L))

    async def source():
        for y in Y:
            yield y
        raise RuntimeError("sensor failed")

    async def main() -> tuple[list[np.ndarray], BaseException | None]:
        got: list[np.ndarray] = []
        try:
            async for r in cscore.stream(dec, source(), batch=8, max_latency=1.0):
                got.append(r)
        except RuntimeError as exc:
            return got, exc
        return got, None

    got, exc = asyncio.run(main())
    assert exc is not None and len(got) == 21
    np.testing.assert_array_equal(np.stack(got), dec(Y))


def test_cli_matrix_npz_or_empty_is_a_clear_error(dec, Y, tmp_path) -> None:
    need_zarr()
    from cscore.cli import main

    np.savez(tmp_path / "A.npz", A=dec.A)
    (tmp_path / "empty.npy").write_bytes(b"")
    for matrix in ("A.npz", "empty.npy"):
        rc = main(["decode", "--decoder", "somp", "--matrix", str(tmp_path / matrix),
                   "--input", str(tmp_path / "Y.npy"), "--output", str(tmp_path / "o.zarr"),
                   "--no-progress"])
        assert rc == 2
    assert main(["decode", "--decoder", "somp", "--output", str(tmp_path / "o.zarr")]) == 2


def test_cli_concurrent_writer_refused_first_run_intact(tmp_path) -> None:
    """Run B with --overwrite while run A decodes: B is refused, A's output is whole."""
    zarr = need_zarr()
    rng = np.random.default_rng(11)
    dec = cscore.decoder("somp", rng.standard_normal((64, 256)), n_nonzero=32)
    cfg = dec.save(tmp_path / "dec.json", inline=False)
    Y = rng.standard_normal((6000, 64, 2))
    np.save(tmp_path / "Y.npy", Y)
    out = tmp_path / "out.zarr"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(cscore.__file__).resolve().parents[1]),
                                         env.get("PYTHONPATH", "")])
    args = ["decode", "--config", str(cfg), "--input", str(tmp_path / "Y.npy"),
            "--output", str(out), "--chunk", "200", "--no-progress"]
    # B is started (and has imported cscore) before A records its first chunk; it
    # then runs `cscore decode ... --overwrite` at once
    b_script = (
        "import json, sys, time; from pathlib import Path; from cscore.cli import main\n"
        # what the decode command imports lazily, imported before the wait so that
        # B's refusal is not slowed by a cold start while A finishes
        "import zarr, cscore.cli.decode, cscore.pipelines.files  # noqa: F401\n"
        f"man = Path({str(out / MANIFEST_NAME)!r})\n"
        "t0 = time.monotonic()\n"
        "while time.monotonic() - t0 < 60:\n"
        "    try:\n"
        "        if json.loads(man.read_text())['done']: break\n"
        "    except (OSError, ValueError): pass\n"
        "    time.sleep(0.002)\n"
        f"sys.exit(main({[*args, '--overwrite']!r}))\n"
    )
    b_proc = subprocess.Popen([sys.executable, "-c", b_script], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    a = subprocess.Popen([sys.executable, "-m", "cscore", *args], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, b_err = b_proc.communicate(timeout=120)
    b = subprocess.CompletedProcess(b_proc.args, b_proc.returncode, b"", b_err)
    a_still_running = a.poll() is None
    _, err_a = a.communicate(timeout=120)
    assert a.returncode == 0, err_a.decode()
    assert a_still_running  # B ran while A was writing
    assert b.returncode == 2 and b"in use by another cscore decode run" in b.stderr
    assert f"pid {a.pid}".encode() in b.stderr
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[:], dec(Y))
    assert verify_output(out).ok and not lock_path(out).exists()


def test_missing_optional_packages_say_how_to_install_before_touching_anything(
        tmp_path, monkeypatch, capsys):
    import sys

    from cscore.cli import main as cli_main

    A = np.random.default_rng(0).standard_normal((12, 24))
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "Y.npy", np.zeros((3, 12, 2)))
    dec = cscore.decoder("somp", A, n_nonzero=2)
    monkeypatch.setitem(sys.modules, "zarr", None)
    with pytest.raises(ImportError, match=r'pip install "cscore-decoders\[pipeline\]"'):
        cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "S.zarr")
    assert cli_main(["decode", "--decoder", "somp", "--matrix", str(tmp_path / "A.npy"),
                     "--n-nonzero", "2", "--input", str(tmp_path / "Y.npy"),
                     "--output", str(tmp_path / "S2.zarr")]) == 2
    err = capsys.readouterr().err
    assert 'cscore decode: error:' in err and 'pip install "cscore-decoders[pipeline]"' in err
    assert not (tmp_path / "S.zarr").exists() and not (tmp_path / "S2.zarr").exists()
    monkeypatch.delitem(sys.modules, "zarr")
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r'pip install "cscore-decoders\[dask\]"'):
        cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "S3.zarr",
                           scheduler="tcp://127.0.0.1:1")
    assert not (tmp_path / "S3.zarr").exists()
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r'pip install "cscore-decoders\[dask\]"'):
        cscore.dask.decode(dec, np.zeros((3, 12, 2)))


def test_stream_accepts_frames_of_another_l_in_any_batch():
    """Whether a frame is decoded never depends on the batch it falls in."""
    rng = np.random.default_rng(8)
    A = rng.standard_normal((10, 20))
    dec = cscore.decoder("somp", A, n_nonzero=2)
    frames = [rng.standard_normal((10, 2 if i % 3 else 3)) for i in range(9)]
    for batch in (1, 2, 4, 9):
        got = list(cscore.stream(dec, iter(frames), batch=batch, max_latency=10.0))
        assert len(got) == len(frames)
        for f, g in zip(frames, got):
            np.testing.assert_array_equal(g, dec(f))
