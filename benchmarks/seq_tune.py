"""How cscore.seq's defaults were chosen: 3-fold CV on the Japanese Vowels *training* utterances.

Folds: 10 utterances per speaker each (seed 123); the test utterances are never
used.  Pass a JSON grid; every combination is fit on two folds and scored on
the third, and the mean frame/utterance error over the folds is printed.

    nice -n 10 python benchmarks/seq_tune.py '{"n_hidden": 500, "random_state": 0,
        "spectral_radius": [1, 2, 3.9], "input_scaling": [0.25, 0.5, 1],
        "ridge": [0.1, 1, 10]}'
    nice -n 10 python benchmarks/seq_tune.py '{"n_hidden": 500, "random_state": 0,
        "spectral_radius": 2, "input_scaling": 0.5, "ridge": [0.1, 1, 10],
        "learn": [["W", "W_rec"]], "m": 3, "step_size": [0.1, 0.3, 1, 3]}'
"""

from __future__ import annotations

import itertools
import json
import sys
import time

import numpy as np

from cscore.seq import ESN, RDSN, frame_error, load_japanese_vowels, utterance_error


def main() -> int:
    grid = {k: (v if isinstance(v, list) else [v]) for k, v in json.loads(sys.argv[1]).items()}
    tr = load_japanese_vowels("train")
    rng = np.random.default_rng(123)
    perm = [rng.permutation(np.where(tr.labels == c)[0]) for c in range(9)]
    folds = [np.concatenate([p[10 * k : 10 * k + 10] for p in perm]) for k in range(3)]
    Y = tr.frame_labels()
    for combo in itertools.product(*grid.values()):
        kw = dict(zip(grid, combo))
        if "learn" in kw:
            kw["learn"] = tuple(kw["learn"])
        cls = RDSN if "n_modules" in kw else ESN
        fes, ues, secs = [], [], []
        for val in folds:
            trn = np.setdiff1d(np.arange(len(tr)), val)
            t = time.perf_counter()
            model = cls(**kw).fit([tr.X[i] for i in trn], [Y[i] for i in trn])
            secs.append(time.perf_counter() - t)
            Xv, Yv = [tr.X[i] for i in val], [Y[i] for i in val]
            fes.append(frame_error(Yv, model.predict(Xv)))
            ues.append(utterance_error(Yv, model.decision_function(Xv), model.classes_))
        print(
            f"{kw} cv frame={np.mean(fes):.4f} utt={np.mean(ues):.4f} "
            f"fit={np.mean(secs):.1f}s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        raise SystemExit(0)
    raise SystemExit(main())
