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
    try:
        cscore.decoder(name, np.eye(2, 3))
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


def run() -> dict[str, np.ndarray]:
    """Every decoder's outputs on the fixed problems, keyed by decoder/setting/dtype."""
    outputs: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(0)
    A = rng.standard_normal((24, 48)) / np.sqrt(24)
    models = _model_names()
    for name in cscore.decoder_names():
        if _is_matrix(name):
            runs = [("A", A, None, 4)]
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
    bad = [k for k in sorted(old)
           if k not in outputs or old[k].dtype != outputs[k].dtype
           or old[k].tobytes() != outputs[k].tobytes()]
    missing = [k for k in old if k not in outputs]
    new = [k for k in outputs if k not in old]
    print(f"{len(outputs)} outputs, {len(old)} in {Path(args.compare).name}; "
          f"{len(bad)} differ ({len(missing)} missing); {len(new)} new (decoders added since)")
    for k in bad:
        print("  differs:", k)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
