"""Issue #34, item 6: settings and files that ask for unbounded work are refused.

``cscore decode --verify`` on damaged manifests and lock files, and the options of
``cscore bench bg``: each gives one line on stderr (exit status 2 or 1), no
traceback, and returns promptly.  Nothing here allocates what it refuses.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore._limits import check_memory, format_bytes, memory_limit
from cscore.cli.app import main
from cscore.pipelines import MANIFEST_NAME
from cscore.pipelines.lock import lock_path

pytest.importorskip("zarr")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 12))
    src = tmp_path / "Y.npy"
    np.save(src, rng.standard_normal((9, 6, 2)))
    out = tmp_path / "out.zarr"
    cscore.decode_file(cscore.decoder("somp", A, n_nonzero=2), src, out, chunk=4,
                       progress=False)
    return out


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_verify_refuses_a_manifest_with_an_absurd_shape(run_dir, capsys):
    man = run_dir / MANIFEST_NAME
    m = json.loads(man.read_text())
    m["shape"][0] = 10**18
    man.write_text(json.dumps(m))
    code, err = _cli(["decode", "--verify", str(run_dir)], capsys)
    assert code == 2
    assert "is damaged" in err and "over the memory limit" in err and "'shape'[0]" in err


@pytest.mark.parametrize("pid", ["2147483648", "1e300", "Infinity", "-5", "true", '"12"'])
def test_verify_with_a_damaged_lock_file(run_dir, capsys, pid):
    lock = lock_path(run_dir)
    host = json.dumps(socket.gethostname())
    lock.write_text(f'{{"pid": {pid}, "host": {host}, "start": null, "time": "t"}}')
    old = 1_000_000_000  # an unreadable lock older than the grace period is stale
    os.utime(lock, (old, old))
    code, _ = _cli(["decode", "--verify", str(run_dir)], capsys)
    assert code == 0  # the damaged lock belongs to no live run: the output verifies


def test_verify_with_a_deeply_nested_lock_file(run_dir, capsys):
    lock = lock_path(run_dir)
    lock.write_text("[" * 100_000 + "]" * 100_000)
    old = 1_000_000_000
    os.utime(lock, (old, old))
    code, _ = _cli(["decode", "--verify", str(run_dir)], capsys)
    assert code == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_verify_with_a_fifo_at_the_lock_path(run_dir, capsys):
    os.mkfifo(lock_path(run_dir))
    code, err = _cli(["decode", "--verify", str(run_dir)], capsys)
    assert code == 2
    assert "is not a regular file" in err


@pytest.mark.parametrize(("args", "words"), [
    (["--kappa", "inf"], "--kappa must be finite"),
    (["--kappa", "nan"], "--kappa must be finite"),
    (["--problems", str(10**10)], "--problems 10000000000 with --N 500 --M 250 would need"),
    (["--problems", str(10**10), "--quick"], "--L does not apply"),  # (--quick: 10 problems)
    (["--N", str(10**9)], "over the memory limit"),
    (["--L", "0"], "--L does not apply to bg"),
    (["--k", "5"], "--k does not apply to bg"),
])
def test_bench_bg_bad_options(tmp_path, capsys, args, words):
    if "--quick" not in args and "--problems" not in args:
        args = [*args, "--quick"]
    if "--problems" in args and "--quick" in args:
        args = [*args, "--L", "2"]  # what stops the run: --quick decodes 10 problems
    code, err = _cli(["bench", "bg", "--no-plot", "--out", str(tmp_path / "o"), *args],
                     capsys)
    assert code == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1


def test_bench_problems_beyond_memory(tmp_path, capsys):
    code, err = _cli(["bench", "sparsity", "--no-plot", "--out", str(tmp_path / "o"),
                      "--problems", str(10**9)], capsys)
    assert code == 2
    assert "--problems 1000000000 would need about" in err and "memory limit" in err


def test_memory_limit_setting(monkeypatch):
    monkeypatch.delenv("CSCORE_MEMORY_LIMIT", raising=False)
    assert memory_limit() == 4 << 30
    for text, value in (("512M", 512 << 20), ("8GiB", 8 << 30), ("1000", 1000),
                        ("1.5k", 1536)):
        monkeypatch.setenv("CSCORE_MEMORY_LIMIT", text)
        assert memory_limit() == value
    for text in ("0", "-1G", "lots", "inf", "nanG"):
        monkeypatch.setenv("CSCORE_MEMORY_LIMIT", text)
        with pytest.raises(ValueError, match="CSCORE_MEMORY_LIMIT"):
            memory_limit()
    monkeypatch.setenv("CSCORE_MEMORY_LIMIT", "1K")
    check_memory("x=1", 1024)
    with pytest.raises(ValueError, match=r"^x=2 would need about 2 KiB for y, over the memory "
                                         r"limit of 1 KiB"):
        check_memory("x=2", 2048, "y")
    with pytest.raises(ValueError, match="x=3"):
        check_memory("x=3", float("inf"))
    assert format_bytes(3 << 40) == "3 TiB"
