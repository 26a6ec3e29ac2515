"""cscore.dask.decode and `cscore decode --scheduler` on a loopback LocalCluster."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import cscore

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
zarr = pytest.importorskip("zarr")

from cscore import dask as cdask  # noqa: E402

M, N, L = 10, 20, 2


def _cluster(processes: bool, n: int = 2) -> distributed.LocalCluster:
    """Worker threads talk in-process; worker processes over loopback TCP only."""
    extra = {"host": "127.0.0.1"} if processes else {}
    return distributed.LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=processes,
        dashboard_address=None,
        silence_logs=50,
        **extra,
    )


@pytest.fixture
def dec(rng: np.random.Generator) -> cscore.Decoder:
    return cscore.decoder("somp", rng.standard_normal((M, N)), n_nonzero=3)


def test_dask_decode_local_scheduler(dec, rng) -> None:
    Y = rng.standard_normal((50, M, L))
    S = cdask.decode(dec, da.from_array(Y, chunks=(16, 5, L)))  # chunks along M get merged
    assert S.shape == (50, N, L) and S.chunks[0] == (16, 16, 16, 2)
    np.testing.assert_array_equal(S.compute(scheduler="threads"), dec(Y))
    with pytest.raises(ValueError, match="M = 11"):
        cdask.decode(dec, da.zeros((4, M + 1, L)))
    with pytest.raises(TypeError, match="dask"):
        cdask.decode(dec, Y)


def test_dask_decode_cluster_scatters_decoder_once(dec, rng, tmp_path) -> None:
    Y = rng.standard_normal((90, M, L))
    with _cluster(processes=False) as cluster, distributed.Client(cluster) as client:
        S = cdask.decode(dec, da.from_array(Y, chunks=(10, M, L)), client=client)
        np.testing.assert_array_equal(S.compute(), dec(Y))
        # one copy of the decoder per worker, not one per task
        held = {k: v for k, v in client.who_has().items()
                if isinstance(k, str) and k.startswith("Decoder-")}  # array chunks: tuples
        assert len(held) == 1 and len(next(iter(held.values()))) == 2
        # the CLI / decode_file path through the same cluster
        np.save(tmp_path / "Y.npy", Y)
        arr = cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "S.zarr", chunk=16,
                                 progress=False, scheduler=client)
        np.testing.assert_array_equal(arr[:], dec(Y))
        # chunks decoded on the cluster are recorded with checksums: a damaged one is
        # found on the next run and decoded again there
        from cscore.pipelines import ChunkDamageWarning, verify_output

        assert verify_output(tmp_path / "S.zarr").ok
        victim = sorted((tmp_path / "S.zarr" / "c").glob("3/*/*"))[0]
        victim.write_bytes(victim.read_bytes()[:-5])
        assert verify_output(tmp_path / "S.zarr").damaged == [3]
        with pytest.warns(ChunkDamageWarning, match=r"chunk\(s\) 3"):
            arr = cscore.decode_file(dec, tmp_path / "Y.npy", tmp_path / "S.zarr",
                                     progress=False, scheduler=client)
        np.testing.assert_array_equal(arr[:], dec(Y))
        assert verify_output(tmp_path / "S.zarr").ok
        # `cscore decode --scheduler ADDRESS` (its own client to the same scheduler)
        from cscore.cli import main

        np.save(tmp_path / "A.npy", dec.A)
        rc = main(["decode", "--decoder", "somp", "--matrix", str(tmp_path / "A.npy"),
                   "--n-nonzero", "3", "--input", str(tmp_path / "Y.npy"), "--output",
                   str(tmp_path / "S2.zarr"), "--chunk", "32", "--no-progress",
                   "--scheduler", cluster.scheduler_address])
        assert rc == 0
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "S2.zarr"))[:], dec(Y))


@pytest.mark.slow
def test_dask_worker_killed_mid_run_still_completes(tmp_path) -> None:
    rng = np.random.default_rng(3)
    A = rng.standard_normal((48, 128))
    dec = cscore.decoder("somp", A, n_nonzero=24)
    Y = rng.standard_normal((6000, 48, 2))
    want = dec(Y)
    with _cluster(processes=True) as cluster, distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        S = cdask.decode(dec, da.from_array(Y, chunks=(100, 48, 2)), client=client)
        fut = client.compute(S)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:  # kill a worker once some tasks are done
            if sum(len(w) for w in client.has_what().values()) > 6:
                break
            time.sleep(0.01)
        assert not fut.done()  # the kill lands mid-run
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        got = fut.result(timeout=120)
    np.testing.assert_array_equal(got, want)
