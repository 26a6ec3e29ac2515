"""Property-based fuzzing of the pipeline, seq and text surfaces (issue 26).

Extends ``test_fuzz.py`` (same ``ci`` / ``long`` hypothesis profiles, chosen by
``CSCORE_FUZZ_PROFILE`` and ``CSCORE_FUZZ_EXAMPLES``) to:

* ``Decoder.from_config`` on arbitrary JSON-like values and on mutated valid
  configs: a decoder, ``ValueError`` or ``FileNotFoundError`` -- nothing else;
* ``decode_file`` resuming over a random or mutated ``cscore-manifest.json``:
  output equal to an uninterrupted run, or ``ValueError``;
* ``cscore.stream`` on random frame sequences (NaN, wrong shapes, a source
  that raises): every yielded frame equals ``dec(frame)``, in order; the only
  errors are the source's own or a ``ValueError`` naming the frame;
* ``seq.load_model`` / ``text.load_model`` on random bytes and damaged model
  files: the loader's ``ModelFileError`` subclass or ``FileNotFoundError``;
* the text model's encode / score / rank on hostile unicode text.

Every example runs under a time bound (``BOUND_S``): a hang is a failure.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import cscore  # noqa: E402
from cscore import seq, text  # noqa: E402
from cscore.text.encoders import LSTMEncoder  # noqa: E402
from cscore.text.hashing import TrigramHasher  # noqa: E402

settings.register_profile(
    "ci", max_examples=100, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
settings.register_profile(
    "long", max_examples=int(os.environ.get("CSCORE_FUZZ_EXAMPLES", "2000")), deadline=None,
    print_blob=True, suppress_health_check=list(HealthCheck),
)  # fmt: skip
settings.load_profile(os.environ.get("CSCORE_FUZZ_PROFILE", "ci"))
LONG = os.environ.get("CSCORE_FUZZ_PROFILE", "ci") == "long"


def _n(ci: int) -> settings:
    """``ci`` examples under the ci profile; the profile's count under ``long``."""
    return settings() if LONG else settings(max_examples=ci)


BOUND_S = 10.0  # the hang threshold


def bounded(fn: Callable[[], Any], limit: float = BOUND_S) -> Any:
    """Run ``fn`` in a daemon thread; its result, its exception, or a hang failure."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["out"] = fn()
        except BaseException as exc:  # handed back to the caller
            box["exc"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"hang: no answer in {limit} s"
    if "exc" in box:
        raise box["exc"]
    return box.get("out")


# ------------------------------------------------------------------ JSON values
_scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
    | st.sampled_from([10**400, -1, 0, 1, 64, 64.9, "", "somp", "omp", "A", "model"])
)  # fmt: skip
json_values = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=5)
    | st.dictionaries(st.text(max_size=10), kids, max_size=5),
    max_leaves=20,
)


def _deep(depth: int, as_list: bool) -> Any:
    v: Any = 0
    for _ in range(depth):
        v = [v] if as_list else {"a": v}
    return v


A_SMALL = np.random.default_rng(7).standard_normal((4, 8))
DEC = cscore.decoder("somp", A_SMALL, n_nonzero=2)


def _mutate(draw: Any, obj: Any, extra: st.SearchStrategy[Any]) -> Any:
    """``obj`` with one random field (at any depth) replaced, dropped or added."""
    if isinstance(obj, dict) and obj and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(obj)))
        out = dict(obj)
        action = draw(st.sampled_from(["replace", "drop", "recurse", "add"]))
        if action == "replace":
            out[key] = draw(extra)
        elif action == "drop":
            del out[key]
        elif action == "add":
            out[draw(st.text(max_size=8))] = draw(extra)
        else:
            out[key] = _mutate(draw, obj[key], extra)
        return out
    if isinstance(obj, list) and obj and draw(st.booleans()):
        i = draw(st.integers(0, len(obj) - 1))
        out_l = list(obj)
        action = draw(st.sampled_from(["replace", "drop", "recurse", "dup"]))
        if action == "replace":
            out_l[i] = draw(extra)
        elif action == "drop":
            del out_l[i]
        elif action == "dup":
            out_l.insert(i, out_l[i])
        else:
            out_l[i] = _mutate(draw, obj[i], extra)
        return out_l
    return draw(extra)


# ------------------------------------------------------------------- configs
def _file_refs(tmp: Path) -> st.SearchStrategy[Any]:
    """File references: random names, real files of random content, ``..`` escapes."""
    names = st.sampled_from(["a.npy", "../a.npy", "/nonexistent/x.npy", "b.npz", "", ".",
                             "x" * 5000, "cfg.json", "empty.npy", "A.npy"])  # fmt: skip
    sha = st.sampled_from(["", "0" * 64, "zz"]) | st.text(max_size=70)
    return st.fixed_dictionaries({"path": names}, optional={"sha256": sha}) | names


def _write_side_files(tmp: Path) -> None:
    np.save(tmp / "A.npy", A_SMALL)
    np.save(tmp / "a.npy", np.full((2, 3), np.nan))
    (tmp / "empty.npy").write_bytes(b"")
    np.savez(tmp / "b.npz", A=A_SMALL)
    (tmp / "cfg.json").write_text("{")


@st.composite
def configs(draw: Any) -> tuple[Any, Path]:
    tmp = Path(tempfile.mkdtemp(prefix="cscore-fuzz-cfg-"))
    _write_side_files(tmp)
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "deep", "file"]))
    extra = json_values | _file_refs(tmp)
    if kind == "random":
        return draw(json_values), tmp
    if kind == "deep":
        return {"cscore_decoder": 1, "name": "somp",
                "A": _deep(draw(st.integers(10, 5000)), draw(st.booleans()))}, tmp  # fmt: skip
    base = DEC.config
    base["A"] = draw(st.sampled_from([base["A"], {"path": "A.npy"}]))
    cfg = _mutate(draw, base, extra)
    if kind == "file":
        p = tmp / "config.json"
        p.write_text(json.dumps(cfg))
        return p, tmp
    return cfg, tmp


@_n(60)
@given(configs(), st.booleans())
def test_from_config_only_documented_errors(case: tuple[Any, Path], with_base: bool) -> None:
    cfg, tmp = case
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = tmp if with_base and not isinstance(cfg, Path) else None
            dec = bounded(lambda: cscore.Decoder.from_config(cfg, base_dir=base))
    except (ValueError, FileNotFoundError):
        return
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # a decoder came back: its own config rebuilds an equal decoder
    assert isinstance(dec, cscore.Decoder)
    again = cscore.Decoder.from_config(dec.config)
    assert again.config == dec.config


def test_valid_config_round_trips(tmp_path: Path) -> None:
    cfg = DEC.config
    again = cscore.Decoder.from_config(json.loads(json.dumps(cfg)))
    assert again.config == cfg
    Y = np.random.default_rng(0).standard_normal((3, 4, 2))
    np.testing.assert_array_equal(again(Y), DEC(Y))
    p = DEC.save(tmp_path / "d.json")
    np.testing.assert_array_equal(cscore.Decoder.from_config(p)(Y), DEC(Y))


# ------------------------------------------------------------------ manifests
_Y_RUN = np.random.default_rng(3).standard_normal((7, 4, 2))


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, dict[str, Any]]:
    d = tmp_path_factory.mktemp("clean-run")
    np.save(d / "Y.npy", _Y_RUN)
    out = cscore.decode_file(DEC, d / "Y.npy", d / "out.zarr", chunk=2, progress=False)
    manifest = json.loads((d / "out.zarr" / "cscore-manifest.json").read_text())
    return d, np.asarray(out[:]), manifest


@_n(40)
@given(data=st.data())
def test_resume_over_damaged_manifest(clean_run: Any, data: Any) -> None:
    src, expect, manifest = clean_run
    draw = data.draw
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "mutated", "bytes"]))
    if kind == "random":
        text_ = json.dumps(draw(json_values))
    elif kind == "bytes":
        raw = json.dumps(manifest).encode()
        cut = draw(st.integers(0, len(raw)))
        text_ = (raw[:cut] + draw(st.binary(max_size=20))).decode("utf-8", "replace")
    else:
        extra = json_values | st.sampled_from([[0, 1], [0, 1, 2, 3], [5], [-1], 2, 3, "0" * 64])
        text_ = json.dumps(_mutate(draw, manifest, extra))
    work = Path(tempfile.mkdtemp(prefix="cscore-fuzz-man-"))
    try:
        shutil.copy(src / "Y.npy", work / "Y.npy")
        shutil.copytree(src / "out.zarr", work / "out.zarr")
        (work / "out.zarr" / "cscore-manifest.json").write_text(text_)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = bounded(lambda: cscore.decode_file(
                    DEC, work / "Y.npy", work / "out.zarr", chunk=2, progress=False))
            except ValueError:
                return
        np.testing.assert_array_equal(np.asarray(out[:]), expect)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------- stream
class SourceError(Exception):
    """The source's own failure."""


@st.composite
def frame_cases(draw: Any) -> tuple[list[Any], int | None]:
    L = draw(st.integers(1, 3))
    n = draw(st.integers(0, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kinds = draw(st.lists(st.sampled_from(["ok"] * 12 + ["nan", "inf", "rows", "cols", "1d", "3d",
                                                         "str", "f32", "int", "empty"]),
                          min_size=n, max_size=n))  # fmt: skip
    frames: list[Any] = []
    for k in kinds:
        f: Any = rng.standard_normal((4, L))
        if k == "nan":
            f[rng.integers(0, 4), rng.integers(0, L)] = np.nan
        elif k == "inf":
            f[0, 0] = np.inf
        elif k == "rows":
            f = rng.standard_normal((5, L))
        elif k == "cols":
            f = rng.standard_normal((4, L + 1))
        elif k == "1d":
            f = rng.standard_normal(4)
        elif k == "3d":
            f = rng.standard_normal((1, 4, L))
        elif k == "str":
            f = "frame"
        elif k == "f32":
            f = f.astype(np.float32)
        elif k == "int":
            f = np.round(f * 3).astype(np.int64)
        elif k == "empty":
            f = np.zeros((4, 0))
        frames.append(f)
    fail_at = draw(st.none() | st.integers(0, n))
    return frames, fail_at


def _reference(f: Any) -> np.ndarray | None:
    """``dec(frame)``, or None where the frame alone cannot be decoded."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(DEC(np.asarray(f)[None]))[0]
    except (ValueError, TypeError):
        return None


stream_kw = st.fixed_dictionaries(
    {},
    optional={
        "batch": st.sampled_from([1, 2, 3, 8, 64]) | st.sampled_from([0, -1, 2.5, True, "4"]),
        "max_latency": st.sampled_from([0.0, 0.001, 0.02]) | st.sampled_from([-1.0, np.nan]),
        "read_ahead": st.sampled_from([None, 1, 2, 5]) | st.sampled_from([0, -3, 1.5]),
        "workers": st.sampled_from([1, 2, 3]) | st.sampled_from([0, -1, True, 2.0]),
    },
)


ARGS = ("batch", "max_latency", "read_ahead", "workers")


@_n(50)
@given(frame_cases(), stream_kw)
def test_stream_keeps_every_frame_in_order(case: Any, kw: dict[str, Any]) -> None:
    frames, fail_at = case

    def source() -> Any:
        for i, f in enumerate(frames):
            if i == fail_at:
                raise SourceError(f"source failed at {i}")
            yield f
        if fail_at == len(frames):
            raise SourceError("source failed at the end")

    got: list[np.ndarray] = []

    def consume() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for out in cscore.stream(DEC, source(), **kw):  # type: ignore[union-attr]
                got.append(np.asarray(out))

    delivered = frames if fail_at is None else frames[:fail_at]
    refs = [_reference(f) for f in delivered]
    # a frame that cannot be decoded alone stops the stream there; every other
    # frame is decoded, whatever its L and whichever batch it falls in
    first_bad = next((i for i, r in enumerate(refs) if r is None), None)

    try:
        bounded(consume)
    except SourceError:
        assert first_bad is None and fail_at is not None
        assert len(got) == fail_at
    except ValueError as exc:
        msg = str(exc)
        k = len(got)
        if f"frame {k} " in msg:
            assert k == first_bad, msg
        else:  # an argument check at the call, before any frame
            assert not got and any(a in msg for a in ARGS), msg
    else:
        assert first_bad is None and fail_at is None
        assert len(got) == len(frames)
    for i, out in enumerate(got):
        ref = refs[i]
        assert ref is not None
        np.testing.assert_array_equal(out, ref, err_msg=f"frame {i}")


# -------------------------------------------------------------- model files
class Blobs(list):  # type: ignore[type-arg]
    """Model files as bytes, shown short in hypothesis' failure reports."""

    def __repr__(self) -> str:
        return f"<{len(self)} model files>"


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def _read_npz(raw: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def seq_files(tmp_path_factory: pytest.TempPathFactory) -> Blobs:
    rng = np.random.default_rng(0)
    X = [rng.standard_normal((int(rng.integers(2, 6)), 3)) + (s % 2) for s in range(6)]
    y = [np.full(len(x), s % 2) for s, x in enumerate(X)]
    d = tmp_path_factory.mktemp("seq")
    out = Blobs()
    for i, model in enumerate((seq.ESN(n_hidden=8, random_state=0).fit(X, y),
                               seq.RDSN(n_modules=2, n_hidden=6, m=1, n_epochs=1,
                                        random_state=0).fit(X, y))):  # fmt: skip
        p = d / f"m{i}.npz"
        model.save(p)
        out.append(p.read_bytes())
    return out


def _tiny_text_model() -> text.RetrievalModel:
    h = TrigramHasher.fit(["supersonic flow over a wedge", "heat transfer in boundary layers"])
    E = np.random.default_rng(0).standard_normal((len(h), 5)).astype(np.float32)
    return text.RetrievalModel(h, E, LSTMEncoder.random(5, 4, seed=1),
                               LSTMEncoder.random(5, 4, seed=2), max_words=None)  # fmt: skip


@pytest.fixture(scope="module")
def text_files(tmp_path_factory: pytest.TempPathFactory) -> Blobs:
    d = tmp_path_factory.mktemp("text")
    m = _tiny_text_model()
    m.save(d / "t.npz")
    ens = text.RetrievalEnsemble([m, _tiny_text_model()])
    ens.save(d / "e.npz")
    return Blobs([(d / "t.npz").read_bytes(), (d / "e.npz").read_bytes()])


def _random_array(draw: Any) -> np.ndarray:
    kind = draw(st.sampled_from(["f8", "f4", "i8", "i4", "u1", "U", "b", "bad-shape"]))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    vals = draw(st.sampled_from([0.0, 1.0, -1.0, np.nan, np.inf, 1e300, 3.0]))
    if kind == "U":
        return np.array(draw(st.text(max_size=20)))
    if kind == "b":
        return np.array(draw(st.binary(max_size=20)))
    if kind == "bad-shape":
        return np.zeros((1, 1, 1, 1, 2))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.full(shape, vals).astype(kind)


def _meta_array(a: np.ndarray, meta: Any) -> np.ndarray:
    s = json.dumps(meta)
    if a.dtype.kind == "U":
        return np.array(s)
    return np.frombuffer(s.encode(), dtype=a.dtype if a.dtype.itemsize == 1 else np.uint8)


def _damage(draw: Any, raw: bytes) -> bytes:
    """A damaged copy of the model file ``raw`` (bytes, entries, or its metadata)."""
    kind = draw(st.sampled_from(["flip", "truncate", "meta", "meta", "entry", "drop", "random"]))
    if kind == "random":
        return draw(st.binary(max_size=400))
    if kind == "flip":
        b = bytearray(raw)
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= draw(st.integers(1, 255))
        return bytes(b)
    if kind == "truncate":
        return raw[: draw(st.integers(0, len(raw) - 1))]
    arrays = _read_npz(raw)
    if kind == "drop":
        del arrays[draw(st.sampled_from(sorted(arrays)))]
    elif kind == "entry":
        arrays[draw(st.sampled_from(sorted(arrays)))] = _random_array(draw)
    else:
        a = arrays["meta"]
        meta = json.loads(a.tobytes().decode() if a.dtype.kind != "U" else str(a))
        extra = json_values | st.sampled_from([10**9, 10**12, -1, 0, "x", [], {}, None, 1.5])
        arrays["meta"] = _meta_array(a, _mutate(draw, meta, extra))
    return _npz_bytes(arrays)


def _load_damaged(loader: Callable[[Path], Any], raw: bytes, err: type[Exception]) -> None:
    d = Path(tempfile.mkdtemp(prefix="cscore-fuzz-file-"))
    try:
        p = d / "m.npz"
        p.write_bytes(raw)
        try:
            bounded(lambda: loader(p))
        except (err, FileNotFoundError):
            pass
    finally:
        shutil.rmtree(d, ignore_errors=True)


@_n(60)
@given(data=st.data())
def test_seq_load_model_damaged(seq_files: list[bytes], data: Any) -> None:
    raw = _damage(data.draw, data.draw(st.sampled_from(seq_files)))
    _load_damaged(seq.load_model, raw, seq.SeqModelFileError)


@_n(60)
@given(data=st.data())
def test_text_load_model_damaged(text_files: list[bytes], data: Any) -> None:
    raw = _damage(data.draw, data.draw(st.sampled_from(text_files)))
    _load_damaged(text.load_model, raw, text.TextModelFileError)


def test_loaders_missing_and_not_a_zip(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        seq.load_model(tmp_path / "nope.npz")
    with pytest.raises(FileNotFoundError):
        text.load_model(tmp_path / "nope.npz")
    (tmp_path / "z.npz").write_bytes(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(seq.SeqModelFileError):
        seq.load_model(tmp_path / "z.npz")
    with pytest.raises(text.TextModelFileError):
        text.load_model(tmp_path / "z.npz")
    assert zipfile.is_zipfile(io.BytesIO(_npz_bytes({"a": np.zeros(1)})))


# ----------------------------------------------------------------- text input
TEXT_MODEL = _tiny_text_model()
_texts = st.one_of(
    st.text(max_size=60),
    st.text(alphabet=st.characters(max_codepoint=0x1F), max_size=30),
    st.sampled_from(["", " ", "\0", "\ud800", "flow " * 50, "x" * 200_000, "supersonic",
                     "a" * 2_000_000 + " flow"]),
)


@_n(50)
@given(st.lists(_texts, max_size=6), st.lists(_texts, max_size=6),
       st.sampled_from([1, 2, 2048]) | st.sampled_from([0, -1, True, 1.5]),
       st.sampled_from([None, 1, 3]) | st.sampled_from([0, -2, True, 2.5]))  # fmt: skip
def test_text_entry_points(queries: list[str], docs: list[str], bs: Any, top_k: Any) -> None:
    m = TEXT_MODEL

    def run() -> None:
        try:
            E = m.encode(docs, "document", batch_size=bs)
        except (ValueError, TypeError) as exc:  # a wrong type or value, named
            assert "batch_size" in str(exc)
        else:
            assert E.shape == (len(docs), m.dim) and E.dtype == np.float32
            assert np.isfinite(E).all()
        Q = m.encode_queries(queries)
        assert Q.shape == (len(queries), m.dim) and np.isfinite(Q).all()
        S = m.score(queries, docs)
        assert S.shape == (len(queries), len(docs))
        assert np.all(np.abs(S) <= 1 + 1e-5)
        if queries:
            try:
                r = m.rank(queries[0], docs, top_k=top_k)
            except ValueError as exc:
                assert "top_k" in str(exc)
                assert top_k is not None and (isinstance(top_k, bool) or top_k < 1 or
                                              not isinstance(top_k, int))  # fmt: skip
            else:
                k = len(docs) if top_k is None else min(top_k, len(docs))
                assert len(r) == k

    bounded(run)


def test_rank_refuses_boolean_top_k() -> None:
    # issue 26: booleans are not integers (top_k=True used to return one result)
    with pytest.raises(ValueError, match="top_k"):
        TEXT_MODEL.rank("flow", ["supersonic flow", "heat"], top_k=True)
    assert len(TEXT_MODEL.rank("flow", ["supersonic flow", "heat"], top_k=1)) == 1


def test_seq_load_model_refuses_scalar_weights(tmp_path: Path, seq_files: Blobs) -> None:
    # found by the campaign: a 0-d m0_U raised IndexError instead of SeqModelFileError
    # (and a 0-d m0_indptr, IndexError inside SparseRec)
    for key, value, match in [("m0_U", np.array(0.0), "inconsistent shapes"),
                              ("m0_indptr", np.array(0.0), "recurrent pattern"),
                              ("m0_indptr", np.array([0, 5, 3, 9]), "recurrent pattern"),
                              ("m0_indices", np.full(9, 99), "recurrent pattern")]:  # fmt: skip
        arrays = _read_npz(seq_files[0])
        arrays[key] = value
        (tmp_path / "m.npz").write_bytes(_npz_bytes(arrays))
        with pytest.raises(seq.SeqModelFileError, match=match):
            seq.load_model(tmp_path / "m.npz")
    (tmp_path / "ok.npz").write_bytes(seq_files[0])
    assert seq.load_model(tmp_path / "ok.npz").n_features_in_ == 3
