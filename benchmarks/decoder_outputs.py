"""Decode a fixed set of problems with every registered decoder and write the outputs.

Run it before and after a change that should not alter results (a refactor, a
move of modules) and compare the two files: every decoder's output must be the
same to the bit (LSTM-CS on the same CPU kernel).

    python benchmarks/decoder_outputs.py --out before.npz
    ... change ...
    python benchmarks/decoder_outputs.py --out after.npz --compare before.npz

Matrix decoders decode problems made with a seeded Gaussian ``A``; model
decoders decode problems made with the ``A`` of every shipped model of their
kind.  Each decoder runs with a fixed atom count and with a residual tolerance
(where it has those settings), on float64 and float32 input, as one batch.
Only the public API is used (``cscore.decoder_names``, ``cscore.decoder``,
``cscore.list_pretrained``, ``cscore.pretrained``), so the script runs on any
release that has them.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

import numpy as np

import cscore


def _problems(A: np.ndarray, L: int, B: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    M, N = A.shape
    S = np.zeros((B, N, L))
    for b in range(B):
        rows = rng.choice(N, k, replace=False)
        S[b, rows] = rng.standard_normal((k, L))
    return np.asarray(A @ S + 0.005 * rng.standard_normal((B, M, L)))


def _settings(dec_name: str, k: int, tol: float) -> list[tuple[str, dict[str, Any]]]:
    """The settings a decoder runs with: a fixed k and a tol, where it takes them."""
    if dec_name in ("omp", "somp", "lstm-cs", "blstm-cs", "nwsomp", "cdsn-cs"):
        return [("k", {"n_nonzero": k}), ("tol", {"tol": tol}), ("auto", {"tol": "auto"})]
    return [("default", {})]


def _is_matrix(name: str) -> bool:
    """Whether the decoder takes a matrix ``A`` (rather than a model)."""
    import cscore.decoders

    get = getattr(cscore.decoders, "get_decoder_spec", None)
    if get is not None and hasattr(get(name), "kind"):
        return bool(get(name).kind != "model")
    try:  # older releases: try building one on a small well-posed matrix
        cscore.decoder(name, np.random.default_rng(0).standard_normal((4, 8)))
    except (ValueError, TypeError):
        return False
    return True


def _model_names() -> dict[str, list[str]]:
    """Shipped model names grouped by the decoder whose model class loads them."""
    out: dict[str, list[str]] = {}
    classes = {"lstm-cs": cscore.LSTMCS, "blstm-cs": cscore.BLSTMCS,
               "nwsomp": cscore.NWSOMP, "cdsn-cs": cscore.CDSNCS}
    for name, _ in cscore.list_pretrained():
        model = cscore.pretrained(name)
        # the most specific class first: BLSTMCS subclasses LSTMCS
        for dec in ("blstm-cs", "lstm-cs", "nwsomp", "cdsn-cs"):
            if isinstance(model, classes[dec]):
                out.setdefault(dec, []).append(name)
                break
    return out


def _kinds(name: str) -> tuple[str, ...]:
    """The input kinds beyond dense real a decoder declares (empty on older releases)."""
    import cscore.decoders

    get = getattr(cscore.decoders, "get_decoder_spec", None)
    if get is None:
        return ()
    return tuple(k for k in getattr(get(name), "inputs", ()) if k != "dense")


def _kind_outputs(name: str, A: np.ndarray, k: int, tol: float) -> dict[str, np.ndarray]:
    """Outputs on complex data, a sparse ``A`` and a LinearOperator, where declared."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import aslinearoperator

    out: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(7)
    M, N = A.shape
    Y = _problems(A, 4, B=6, k=k, seed=2)
    for kind in _kinds(name):
        if kind == "complex":
            Ac = A + 1j * rng.standard_normal(A.shape) / np.sqrt(M)
            Sc = np.zeros((6, N, 4), complex)
            for b in range(6):
                rows = rng.choice(N, k, replace=False)
                Sc[b, rows] = rng.standard_normal((k, 4)) + 1j * rng.standard_normal((k, 4))
            noise = rng.standard_normal(Y.shape) + 1j * rng.standard_normal(Y.shape)
            Yc = Ac @ Sc + 0.005 * noise
            cases = [(Ac, Yc.astype(np.complex128)),
                     (Ac.astype(np.complex64), Yc.astype(np.complex64))]
        elif kind == "sparse":
            As = sp.csr_matrix(np.where(np.abs(A) > 0.15, A, 0.0))
            cases = [(As, Y)]
        elif kind == "operator":
            cases = [(aslinearoperator(A), Y)]
        else:
            continue
        for label, settings in _settings(name, k, tol):
            if label == "auto":
                continue
            for Am, Yk in cases:
                dec = cscore.decoder(name, Am, **settings)
                key = f"{name}/{kind}/{label}/{np.asarray(Yk).dtype.name}"
                out[key] = np.asarray(dec(Yk))
    return out


def run() -> dict[str, np.ndarray]:
    """Every decoder's outputs on the fixed problems, keyed by decoder/setting/dtype."""
    outputs: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(0)
    A = rng.standard_normal((24, 48)) / np.sqrt(24)
    models = _model_names()
    for name in cscore.decoder_names():
        if _is_matrix(name):
            runs = [("A", A, None, 4)]
            tol4 = float(4 * 0.005 * np.sqrt(A.shape[0] * 4))
            outputs.update(_kind_outputs(name, A, max(2, A.shape[0] // 8), tol4))
        else:
            runs = []
            for mname in models.get(name, []):
                model = cscore.pretrained(mname)
                runs.append((mname, np.asarray(model.A), mname, int(model.L)))
        for tag, Am, mname, L in runs:
            k = max(2, Am.shape[0] // 8)
            Y = _problems(Am, L, B=6, k=k, seed=1)
            tol = float(L * 0.005 * np.sqrt(Am.shape[0] * L))
            for label, settings in _settings(name, k, tol):
                if mname is None:
                    dec = cscore.decoder(name, Am, **settings)
                else:
                    dec = cscore.decoder(name, model=mname, **settings)
                for dt in (np.float64, np.float32):
                    key = f"{name}/{tag}/{label}/{np.dtype(dt).name}"
                    outputs[key] = np.asarray(dec(Y.astype(dt)))
    return outputs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="npz file to write the outputs to")
    p.add_argument("--compare", help="an earlier output file; exit 1 where any output differs")
    p.add_argument("--rtol", type=float, default=0.0,
                   help="with --compare: the largest relative difference (max |a-b| / max |b|) "
                        "taken as equal; 0 (default) demands the same bits")
    args = p.parse_args(argv)
    outputs = run()
    np.savez(args.out, **{k.replace("/", "|"): v for k, v in outputs.items()})
    for key, val in outputs.items():
        digest = hashlib.sha256(np.ascontiguousarray(val).tobytes()).hexdigest()[:16]
        print(f"{key:45s} {val.dtype} {val.shape} {digest}")
    if not args.compare:
        return 0
    with np.load(args.compare) as ref:
        old = {k.replace("|", "/"): ref[k] for k in ref.files}
    def differs(k: str) -> bool:
        if k not in outputs or old[k].dtype != outputs[k].dtype or old[k].shape != outputs[k].shape:
            return True
        if old[k].tobytes() == outputs[k].tobytes():
            return False
        scale = float(np.max(np.abs(old[k]))) or 1.0
        return bool(np.max(np.abs(outputs[k] - old[k])) > args.rtol * scale)

    bad = [k for k in sorted(old) if differs(k)]
    inexact = [k for k in sorted(old) if k in outputs and k not in bad
               and old[k].tobytes() != outputs[k].tobytes()]
    missing = [k for k in old if k not in outputs]
    new = [k for k in outputs if k not in old]
    print(f"{len(outputs)} outputs, {len(old)} in {Path(args.compare).name}; "
          f"{len(bad)} differ ({len(missing)} missing); {len(new)} new (decoders added since)")
    for k in bad:
        print("  differs:", k)
    for k in inexact:
        print(f"  within rtol {args.rtol:g}, not bit-identical:", k)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
