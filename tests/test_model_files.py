"""Damaged and hostile model files (issue 12, items 2-4).

The corpus is generated on the fly from a tiny valid model (nothing is
committed): truncations, byte flips in headers and body, wrong shapes and
dtypes, object arrays, missing and extra entries, huge declared sizes, zip
bombs, bad metadata, FIFOs and devices.  Every case must end in
``ModelFileError`` within 1 s and 100 MB of Python-visible allocations.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

import cscore
from cscore.decoders.learned import LSTMCSWeights
from cscore.models.format import ModelFileError, read_model_meta
from cscore.problem import ProblemSpec

#: where the cscore under test lives (source tree or installed), for subprocesses
PKG_ROOT = str(Path(cscore.__file__).resolve().parents[1])

M, N, L, H = 8, 16, 2, 4


def _model() -> cscore.LSTMCS:
    rng = np.random.default_rng(0)
    w = LSTMCSWeights(
        W=rng.normal(size=(3 * H, M)), R=rng.normal(size=(3 * H, H)), b=np.zeros(3 * H),
        U=rng.normal(size=(N, H)), c_out=np.zeros(N),
    )  # fmt: skip
    return cscore.LSTMCS(w, rng.normal(size=(M, N)), ProblemSpec(M=M, N=N, L=L))


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _zip(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _meta_bytes(meta: object) -> bytes:
    return _npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))


def _bomb(n_bytes: int) -> tuple[bytes, int]:
    """Deflated ``n_bytes`` zeros (raw deflate) and their CRC, built piecewise."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    out = [comp.compress(chunk) for _ in range(n_bytes >> 20)]
    out.append(comp.flush())
    crc = 0
    for _ in range(n_bytes >> 20):
        crc = zlib.crc32(chunk, crc)
    return b"".join(out), crc


def _raw_zip_with(entries: dict[str, bytes], raw: list[tuple[str, bytes, int, int]]) -> bytes:
    """Zip with ordinary entries plus pre-compressed ones (name, data, crc, size)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    body = bytearray(buf.getvalue())
    # Rebuild by hand: local header + data for each raw entry, then directory.
    zf2 = zipfile.ZipFile(io.BytesIO(bytes(body)))
    infos = zf2.infolist()
    out = io.BytesIO()
    central = []
    for info in infos:
        data = zf2.read(info.filename)
        comp = zlib.compressobj(6, zlib.DEFLATED, -15)
        cdata = comp.compress(data) + comp.flush()
        central.append((info.filename.encode(), out.tell(), cdata, zlib.crc32(data), len(data)))
        out.write(_local(info.filename.encode(), cdata, zlib.crc32(data), len(data)))
        out.write(cdata)
    for name, cdata, crc, size in raw:
        central.append((name.encode(), out.tell(), cdata, crc, size))
        out.write(_local(name.encode(), cdata, crc, size))
        out.write(cdata)
    start = out.tell()
    for name_b, off, cdata, crc, size in central:
        out.write(
            b"PK\x01\x02"
            + (20).to_bytes(2, "little") * 2
            + bytes(2)
            + (8).to_bytes(2, "little")
            + bytes(4)
            + crc.to_bytes(4, "little")
            + len(cdata).to_bytes(4, "little")
            + min(size, 0xFFFFFFFE).to_bytes(4, "little")
            + len(name_b).to_bytes(2, "little")
            + bytes(8)
            + bytes(4)
            + off.to_bytes(4, "little")
            + name_b
        )
    end = out.tell()
    n = len(central)
    out.write(
        b"PK\x05\x06" + bytes(4) + n.to_bytes(2, "little") * 2
        + (end - start).to_bytes(4, "little") + start.to_bytes(4, "little") + bytes(2)
    )  # fmt: skip
    return out.getvalue()


def _local(name_b: bytes, cdata: bytes, crc: int, size: int) -> bytes:
    return (
        b"PK\x03\x04" + (20).to_bytes(2, "little") + bytes(2) + (8).to_bytes(2, "little")
        + bytes(4) + crc.to_bytes(4, "little") + len(cdata).to_bytes(4, "little")
        + min(size, 0xFFFFFFFE).to_bytes(4, "little") + len(name_b).to_bytes(2, "little")
        + bytes(2) + name_b
    )  # fmt: skip


def _corpus(base_entries: dict[str, bytes], good: bytes) -> dict[str, bytes]:
    """name -> file content of every damaged case that must be refused."""
    meta = json.loads(np.load(io.BytesIO(base_entries["meta.npy"])).tobytes())
    cases: dict[str, bytes] = {}
    # truncations
    for cut in (0, 1, 21, 30, 100, len(good) // 3, len(good) // 2, len(good) - 23, len(good) - 1):
        cases[f"truncated-{cut}"] = good[:cut]
    cases["not-a-zip"] = b"hello world, this is not a model" * 10
    # missing / extra entries
    for name in base_entries:
        cases[f"missing-{name}"] = _zip({k: v for k, v in base_entries.items() if k != name})
    cases["extra-entry"] = _zip({**base_entries, "extra.npy": _npy(np.zeros(3))})
    cases["extra-non-npy"] = _zip({**base_entries, "README": b"hi"})
    cases["many-entries"] = _zip({**base_entries, **{f"x{i}.npy": b"" for i in range(80)}})
    # wrong shapes, dtypes, object arrays
    w = np.load(io.BytesIO(base_entries["W.npy"]))
    bad_arrays = {
        "W-extra-row": ("W.npy", np.zeros((w.shape[0] + 1, w.shape[1]), np.float32)),
        "W-transposed": ("W.npy", np.ascontiguousarray(w.T)),
        "R-0d": ("R.npy", np.float32(1.0)),
        "b-int": ("b.npy", np.zeros(3 * H, np.int64)),
        "U-complex": ("U.npy", np.zeros((N, H), np.complex64)),
        "U-float16": ("U.npy", np.zeros((N, H), np.float16)),
        "c_out-big-endian": ("c_out.npy", np.zeros(N, ">f4")),
        "c_out-object": ("c_out.npy", np.array([None] * N, dtype=object)),
        "A-nan": ("A.npy", np.full((M, N), np.nan)),
        "A-zero-column": ("A.npy", np.zeros((M, N))),
        "W-inf": ("W.npy", np.full(w.shape, np.inf, np.float32)),
        "A-structured": ("A.npy", np.zeros((M, N), dtype=[("a", "<f8")])),
        "meta-float": ("meta.npy", np.zeros(10)),
        "meta-2d": ("meta.npy", np.zeros((2, 5), np.uint8)),
        "meta-0d": ("meta.npy", np.uint8(3)),
        "meta-object": ("meta.npy", np.array([meta], dtype=object)),
    }
    for case, (entry, arr) in bad_arrays.items():
        cases[case] = _zip({**base_entries, entry: _npy(arr)})
    cases["meta-not-npy"] = _zip({**base_entries, "meta.npy": b"{\"format\": 1}"})
    cases["meta-not-json"] = _zip(
        {**base_entries, "meta.npy": _npy(np.frombuffer(b"\xff\xfe{", np.uint8))}
    )
    # metadata values
    def with_meta(**changes: object) -> bytes:
        m = json.loads(json.dumps(meta))
        for k, v in changes.items():
            if k.startswith("spec_"):
                m["spec"][k[5:]] = v
            elif v is _DEL:
                m.pop(k, None)
            else:
                m[k] = v
        return _zip({**base_entries, "meta.npy": _meta_bytes(m)})

    for case, ch in {
        "info-null-ok": None, "info-list": {"info": [1]}, "info-string": {"info": "x"},
        "version-true": {"version": True}, "version-2": {"version": 2},
        "format-other": {"format": "numpy"}, "arch-unknown": {"arch": "transformer"},
        "arch-int": {"arch": 3}, "cell-unknown": {"cell": "gru"}, "n_cells-str": {"n_cells": "4"},
        "n_cells-neg": {"n_cells": -4}, "n_cells-wrong": {"n_cells": H + 1},
        "n_cells-huge": {"n_cells": 2**40}, "block_size-neg": {"spec_block_size": -4},
        "levels-str": {"spec_levels": "x"}, "L-true": {"spec_L": True},
        "M-huge": {"spec_M": 2**19, "spec_N": 2**19}, "spec-list": {"spec": [1, 2]},
        "spec-extra": {"spec_foo": 1}, "transform-bad": {"spec_transform": "fft"},
        "meta-list": None, "cell-missing": {"cell": _DEL},
    }.items():
        if case == "info-null-ok":
            continue
        if case == "meta-list":
            cases[case] = _zip({**base_entries, "meta.npy": _meta_bytes([meta])})
            continue
        cases[case] = with_meta(**ch)  # type: ignore[arg-type]
    cases["meta-deep-json"] = _zip(
        {**base_entries, "meta.npy": _npy(np.frombuffer(b"[" * 200000 + b"]" * 200000, np.uint8))}
    )
    cases["meta-huge"] = _zip(
        {**base_entries, "meta.npy": _npy(np.zeros(8 << 20, np.uint8))}
    )
    # .npy headers
    hdr_ok = base_entries["W.npy"]
    cases["npy-bad-magic"] = _zip({**base_entries, "W.npy": b"\x93NUMPX" + hdr_ok[6:]})
    cases["npy-version-9"] = _zip({**base_entries, "W.npy": hdr_ok[:6] + b"\x09\x00" + hdr_ok[8:]})
    cases["npy-header-garbage"] = _zip(
        {**base_entries, "W.npy": hdr_ok[:8] + (20).to_bytes(2, "little") + b"{'descr': '<f4', (("}
    )
    cases["npy-header-tokenize"] = _zip(
        {**base_entries, "W.npy": hdr_ok[:8] + (12).to_bytes(2, "little") + b"\"\"\"abc\n    "}
    )
    cases["npy-huge-shape"] = _zip(
        {**base_entries, "W.npy": _npy_header("<f4", (2**40,))}
    )
    cases["npy-huge-header-len"] = _zip(
        {**base_entries, "W.npy": b"\x93NUMPY\x02\x00" + (2**31).to_bytes(4, "little")}
    )
    cases["npy-short-data"] = _zip({**base_entries, "W.npy": hdr_ok[:-8]})
    cases["npy-long-data"] = _zip({**base_entries, "W.npy": hdr_ok + bytes(64)})
    # compression and zip-level damage
    cases["bzip2-entries"] = _zip(base_entries, zipfile.ZIP_BZIP2)
    enc = bytearray(good)
    pos = enc.find(b"PK\x01\x02")
    enc[pos + 8] |= 1  # encrypted flag in the first directory record
    cases["encrypted-flag"] = bytes(enc)
    cdata, crc = _bomb(256 << 20)
    cases["zip-bomb-extra"] = _raw_zip_with(base_entries, [("bomb.npy", cdata, crc, 256 << 20)])
    cases["zip-bomb-as-W"] = _raw_zip_with(
        {k: v for k, v in base_entries.items() if k != "W.npy"},
        [("W.npy", cdata, crc, 256 << 20)],
    )
    cases["declared-size-lie"] = _raw_zip_with(
        {k: v for k, v in base_entries.items() if k != "W.npy"},
        [("W.npy", zlib.compress(hdr_ok)[2:-4], zlib.crc32(hdr_ok), 2**32 - 2)],
    )
    return cases


class _Del:
    pass


_DEL = _Del()


def _npy_header(descr: str, shape: tuple[int, ...]) -> bytes:
    d = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    d += b" " * (64 - (10 + len(d) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d


def _check_refused(path: Path) -> str:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ModelFileError) as exc:
            cscore.LSTMCS.load(path)
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0, f"{path.name}: {elapsed:.2f} s"
    assert peak < 100 << 20, f"{path.name}: {peak / 2**20:.0f} MB"
    return str(exc.value)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    folder = tmp_path_factory.mktemp("corpus")
    model = _model()
    good_path = folder / "good.npz"
    model.save(good_path)
    good = good_path.read_bytes()
    base = _entries(good_path)
    paths = {}
    for name, content in _corpus(base, good).items():
        p = folder / f"{name}.npz"
        p.write_bytes(content)
        paths[name] = p
    return good_path, paths


def test_good_file_loads(corpus):
    good, _ = corpus
    m = cscore.LSTMCS.load(good)
    assert (m.M, m.N, m.L, m.n_cells) == (M, N, L, H)
    assert read_model_meta(good)["arch"] == "lstm"


def test_every_damaged_file_is_refused(corpus):
    _, paths = corpus
    assert len(paths) > 70
    for name, p in paths.items():
        msg = _check_refused(p)
        assert str(p) in msg, name


def test_entry_named_in_errors(corpus):
    _, paths = corpus
    for case, entry in [("W-extra-row", "'W'"), ("R-0d", "'R'"), ("c_out-object", "'c_out'"),
                        ("meta-deep-json", "'meta'"), ("zip-bomb-extra", "bomb.npy"),
                        ("npy-huge-shape", "'W'"), ("A-nan", "'A'")]:  # fmt: skip
        assert entry in _check_refused(paths[case]), case


def test_byte_flips_never_escape(corpus):
    """Flip bytes all over a valid file: a load either succeeds or raises ModelFileError."""
    good, _ = corpus
    data = good.read_bytes()
    rng = np.random.default_rng(12)
    positions = sorted(set(rng.integers(0, len(data), 150).tolist()) | set(range(0, 60)))
    positions += list(range(len(data) - 120, len(data)))
    tmp = good.with_name("flip.npz")
    n_refused = 0
    for pos in positions:
        flipped = bytearray(data)
        flipped[pos] ^= 0xFF
        tmp.write_bytes(bytes(flipped))
        t0 = time.perf_counter()
        try:
            cscore.LSTMCS.load(tmp)
        except ModelFileError:
            n_refused += 1
        assert time.perf_counter() - t0 < 10.0  # a hang guard, generous for loaded machines
    assert n_refused > len(positions) // 2


def test_special_files_refused_without_hanging(tmp_path):
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    _check_refused(fifo)
    link = tmp_path / "zero.npz"
    link.symlink_to("/dev/zero")
    _check_refused(link)
    d = tmp_path / "dir.npz"
    d.mkdir()
    _check_refused(d)
    with pytest.raises(FileNotFoundError):
        cscore.LSTMCS.load(tmp_path / "absent.npz")


def test_listing_survives_bad_files(corpus, monkeypatch, tmp_path):
    _, paths = corpus
    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("truncated-100", "meta-deep-json", "info-list", "meta-not-npy", "zip-bomb-extra"):
        (folder / f"{name}.npz").write_bytes(paths[name].read_bytes())
    os.mkfifo(folder / "fifo.npz")
    (folder / "zero.npz").symlink_to("/dev/zero")
    monkeypatch.setenv("CSCORE_MODEL_PATH", str(folder))
    listing = dict(cscore.list_pretrained())
    assert "unreadable" in listing["meta-deep-json"]
    assert "unreadable" in listing["fifo"] and "unreadable" in listing["zero"]
    assert "mnist-m72" in listing and not listing["mnist-m72"].startswith("unreadable")
    out = subprocess.run(
        [sys.executable, "-m", "cscore", "models"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "CSCORE_MODEL_PATH": str(folder),
             "PYTHONPATH": PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "mnist-m72" in out.stdout


def test_failed_save_keeps_the_old_file(tmp_path):
    """A save that fails midway (file-size limit) leaves the old model intact."""
    path = tmp_path / "model.npz"
    small = _model()
    small.save(path)
    before = path.read_bytes()
    script = textwrap.dedent(
        f"""
        import resource, signal, numpy as np, cscore
        from cscore.decoders.learned import LSTMCSWeights
        from cscore.problem import ProblemSpec
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        rng = np.random.default_rng(1)
        M, N, H = 32, 64, 384
        w = LSTMCSWeights(W=rng.normal(size=(3 * H, M)), R=rng.normal(size=(3 * H, H)),
                          b=np.zeros(3 * H), U=rng.normal(size=(N, H)), c_out=np.zeros(N))
        big = cscore.LSTMCS(w, rng.normal(size=(M, N)), ProblemSpec(M=M, N=N, L=2))
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        try:
            big.save({str(path)!r})
        except OSError as e:
            print("save failed:", e.errno)
        else:
            print("save succeeded")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        env={**os.environ,
             "PYTHONPATH": PKG_ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "save failed" in out.stdout
    assert path.read_bytes() == before
    assert cscore.LSTMCS.load(path).n_cells == H  # the small model, intact
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"]  # no temporary left


def test_saved_model_files_follow_the_umask(tmp_path):
    """Model files come out as open() would make them (0644 under umask 0022), not 0600."""
    import os
    import stat

    from cscore.models.format import save_npz_atomic

    old = os.umask(0o022)
    try:
        save_npz_atomic(tmp_path / "a.npz", {"x": np.zeros(3)})
        os.umask(0o077)
        save_npz_atomic(tmp_path / "b.npz", {"x": np.zeros(3)})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.npz").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.npz").stat().st_mode) == 0o600


def test_every_shipped_model_saves_and_loads_to_the_same_arrays(tmp_path):
    """The one protocol reads every shipped file unchanged, and what it writes
    reads back to the same class, parameters, weights (float32) and matrix."""
    from cscore.models.registry import STORE

    for name, src in STORE.files().items():
        model = cscore.pretrained(name)
        model.save(tmp_path / "m.npz")
        back = cscore.models.load_model(tmp_path / "m.npz")
        (arrays, params), (arrays2, params2) = model._to_arrays(), back._to_arrays()
        assert type(back) is type(model) and params2 == params, name
        with np.load(src, allow_pickle=False) as z:
            assert sorted(z.files) == sorted(["meta", "A", *arrays]), name
            for k, v in arrays.items():
                np.testing.assert_array_equal(z[k].astype(np.float32), v, err_msg=name)
                assert arrays2[k].dtype == np.float32
                np.testing.assert_array_equal(arrays2[k], v, err_msg=name)
            np.testing.assert_array_equal(back.A, z["A"])
        assert back.info == model.info and back.spec == model.spec


def test_lstm_file_functions_are_deprecated_aliases(tmp_path):
    from cscore.decoders.learned import load_model_file, save_model_file

    model = cscore.pretrained("demo-dct-m32")
    path = tmp_path / "m.npz"
    with pytest.warns(DeprecationWarning, match=r"LSTMCS\(weights, A, spec, info\)\.save"):
        save_model_file(path, model.weights, model.A, model.spec, {"who": "alias"})
    with pytest.warns(DeprecationWarning, match=r"LSTMCS\.load"):
        w, A, spec, info = load_model_file(path)
    assert type(w) is LSTMCSWeights and spec == model.spec and info == {"who": "alias"}
    np.testing.assert_array_equal(A, model.A)
    np.testing.assert_array_equal(w.U, model.weights.U)
    assert cscore.LSTMCS.load(path).info == {"who": "alias"}
    nw = tmp_path / "nw.npz"
    cscore.pretrained("nwsomp-mnist-m72").save(nw)
    with pytest.warns(DeprecationWarning), \
            pytest.raises(ModelFileError, match=r"holds a NWSOMP model \(arch 'nwsomp'\)"):
        load_model_file(nw)
