"""``tol="auto"`` on pure noise: how often a decoder fits atoms to nothing (issue #34).

Every decoder that accepts ``tol="auto"`` decodes measurements that are pure
Gaussian noise (no signal at all); a *false alarm* is a problem given more than
one greedy step (OMP: more than one atom in the vector; SOMP: more than one
joint row; LSTM-CS, BLSTM-CS, CDSN-CS: more than one atom in some channel;
NWSOMP: more than one step).  OMP and SOMP run on Gaussian matrices with unit
columns at several M / N and L, the learned decoders on every shipped model of
theirs, with its own A and L.  Noise of several scales shows that the rule is
scale-free.  Usage::

    PYTHONPATH=python python benchmarks/bench_noise.py [--problems 400] [--model-problems 200]
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np

import cscore

GREEDY_GRID = [(72, 144, 1), (36, 144, 1), (32, 64, 1), (128, 512, 1),
               (72, 144, 4), (36, 144, 4), (32, 64, 4), (128, 512, 2), (25, 64, 8)]  # fmt: skip
SCALES = (1e-3, 1.0, 1e3)


def false_alarms(n_iter: np.ndarray) -> tuple[float, float]:
    """Fraction of problems with more than one step, and the mean number of steps."""
    n = np.asarray(n_iter)
    return float(np.mean(n > 1)), float(np.mean(n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=400, help="noise problems per OMP/SOMP point")
    ap.add_argument("--model-problems", type=int, default=200,
                    help="noise problems per shipped model and scale")  # fmt: skip
    ap.add_argument("--seed", type=int, default=34)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"cscore {cscore.__version__}; {platform.processor() or platform.machine()}; "
          f"instruction set {cscore.instruction_set()}; load average {os.getloadavg()[0]:.2f}")
    print()
    print("| decoder | model / A | M | N | L | problems | "
          + " | ".join(f"false alarms x{s:g} (mean steps)" for s in SCALES) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(SCALES))
    for name in ("omp", "somp"):
        for M, N, L in GREEDY_GRID:
            if (name == "omp") != (L == 1):
                continue
            A = rng.standard_normal((M, N))
            A /= np.linalg.norm(A, axis=0)
            Y = rng.standard_normal((args.problems, M, L))
            cells = []
            for s in SCALES:
                if name == "omp":
                    res = cscore.omp(A, s * Y[:, :, 0].T, tol="auto", return_result=True)
                else:
                    res = cscore.somp(A, s * Y, tol="auto", return_result=True)
                fa, steps = false_alarms(res.n_iter)
                cells.append(f"{fa:.3f} ({steps:.2f})")
            print(f"| {name} | Gaussian | {M} | {N} | {L} | {args.problems} | "
                  + " | ".join(cells) + " |", flush=True)
    for model_name, _ in cscore.list_pretrained():
        model = cscore.pretrained(model_name)
        spec = cscore.decoders.get_decoder_spec
        kind = next((d for d in cscore.decoder_names()
                     if spec(d).kind == "model" and type(model) is spec(d).model_type
                     and "auto" in spec(d).stopping), None)  # fmt: skip
        if kind is None:
            continue
        Y = rng.standard_normal((args.model_problems, model.M, model.L))
        cells = []
        for s in SCALES:
            res = model.decode(s * Y, tol="auto", return_result=True)
            fa, steps = false_alarms(res.n_iter)
            cells.append(f"{fa:.3f} ({steps:.2f})")
        print(f"| {kind} | {model_name} | {model.M} | {model.N} | {model.L} | "
              f"{args.model_problems} | " + " | ".join(cells) + " |", flush=True)
    print()
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
