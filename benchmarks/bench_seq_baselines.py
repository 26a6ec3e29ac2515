"""Baselines for ``cscore seq bench``: reservoirpy's ESN (tuned) and a BPTT-trained LSTM.

Both see the same inputs as cscore's models: frames standardized with the
training mean/std and a centered context window of 3 frames.  Tuning uses the
same 3-fold split of the *training* utterances (10 per speaker per fold, seed
123) that chose cscore's defaults; the test utterances are used once, at the end.

    nice -n 10 python benchmarks/bench_seq_baselines.py --out /tmp/seq-baselines

reservoirpy is not a cscore dependency (``pip install reservoirpy``); the script
skips it when it is missing.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import time
from pathlib import Path

import numpy as np

from cscore.seq import context_window, frame_error, load_japanese_vowels, utterance_error


def folds(labels: np.ndarray, seed: int = 123) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    perm = [rng.permutation(np.where(labels == c)[0]) for c in range(9)]
    return [np.concatenate([p[10 * k : 10 * k + 10] for p in perm]) for k in range(3)]


def features(Xtr, Xother):
    allf = np.concatenate(Xtr)
    mu, sd = allf.mean(0), allf.std(0)
    f = lambda X: [context_window((x - mu) / sd, 3) for x in X]  # noqa: E731
    return f(Xtr), f(Xother)


# ------------------------------------------------------------------ reservoirpy
def rpy_fit_predict(Xtr, ytr, Xte, units, lr, sr, iscale, ridge, seed):
    from reservoirpy.nodes import Reservoir, Ridge

    res = Reservoir(units=units, lr=lr, sr=sr, input_scaling=iscale, seed=seed)
    readout = Ridge(ridge=ridge)
    model = res >> readout
    T = [np.eye(9)[y] for y in ytr]
    t = time.perf_counter()
    model.fit(Xtr, T)
    secs = time.perf_counter() - t
    scores = []
    for x in Xte:  # fresh zero state for every utterance
        res.reset()
        scores.append(np.asarray(model.run(x)))
    return scores, secs


RPY_GRID = {
    "lr": [1.0, 0.5],
    "sr": [0.5, 1.0],
    "iscale": [0.3, 1.0],
    "ridge": [0.1, 1.0],
}


# ------------------------------------------------------------------ LSTM
def lstm_fit_predict(Xtr, ytr, Xte, hidden, epochs, seed, lr=5e-3, batch=16):
    import torch

    torch.manual_seed(seed)
    D = Xtr[0].shape[1]

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(D, hidden, batch_first=True)
            self.out = torch.nn.Linear(hidden, 9)

        def forward(self, x):
            return self.out(self.lstm(x)[0])

    def pad(X, Y=None):
        L = max(len(x) for x in X)
        xb = np.zeros((len(X), L, D), dtype=np.float32)
        yb = np.full((len(X), L), -100, dtype=np.int64)
        for i, x in enumerate(X):
            xb[i, : len(x)] = x
            if Y is not None:
                yb[i, : len(x)] = Y[i]
        return torch.from_numpy(xb), torch.from_numpy(yb)

    net = Net().double()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    for _ in range(epochs):
        order = rng.permutation(len(Xtr))
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            xb, yb = pad([Xtr[i] for i in idx], [ytr[i] for i in idx])
            logits = net(xb.double())
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 9), yb.reshape(-1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
            opt.step()
    secs = time.perf_counter() - t
    with torch.no_grad():
        scores = [net(torch.from_numpy(x[None]).double())[0].numpy() for x in Xte]
    return scores, secs


def evaluate(scores, yte):
    pred = [s.argmax(1) for s in scores]
    return frame_error(yte, pred), utterance_error(yte, scores)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--lstm-hidden", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--lstm-epochs", type=int, nargs="+", default=[20, 40, 80])
    ap.add_argument("--out", type=Path, default=Path("seq-baselines"))
    ap.add_argument("--skip-rpy", action="store_true")
    ap.add_argument("--skip-lstm", action="store_true")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    tr, te = load_japanese_vowels("train"), load_japanese_vowels("test")
    Ytr, Yte = tr.frame_labels(), te.frame_labels()
    fs = folds(tr.labels)
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)

    def cv(fn, **kw):
        fes = []
        for val in fs:
            trn = np.setdiff1d(np.arange(len(tr)), val)
            Xa, Xb = features([tr.X[i] for i in trn], [tr.X[i] for i in val])
            scores, _ = fn(Xa, [Ytr[i] for i in trn], Xb, **kw)
            fes.append(evaluate(scores, [Ytr[i] for i in val])[0])
        return float(np.mean(fes))

    Xa, Xb = features(tr.X, te.X)
    have_rpy = True
    try:
        import reservoirpy  # noqa: F401
    except ImportError:
        have_rpy = False
        print("reservoirpy not installed: skipped")
    if have_rpy and not args.skip_rpy:
        tuned = cv_best = None
        for combo in itertools.product(*RPY_GRID.values()):
            kw = dict(zip(RPY_GRID, combo))
            fe = cv(rpy_fit_predict, units=500, seed=0, **kw)
            print(f"reservoirpy 500 {kw} cv frame error {fe:.4f}", flush=True)
            if cv_best is None or fe < cv_best:
                cv_best, tuned = fe, kw
        print(f"reservoirpy tuned: {tuned} (cv {cv_best:.4f})")
        for n in args.sizes:
            for seed in args.seeds:
                scores, secs = rpy_fit_predict(Xa, Ytr, Xb, units=n, seed=seed, **tuned)
                fe, ue = evaluate(scores, Yte)
                rows.append(dict(model=f"reservoirpy {tuned}", size=n, seed=seed,
                                 frame_error=fe, utterance_error=ue, fit_seconds=secs))
                print(rows[-1], flush=True)
    if not args.skip_lstm:
        best = None
        for h, ep in itertools.product(args.lstm_hidden, args.lstm_epochs):
            fe = cv(lstm_fit_predict, hidden=h, epochs=ep, seed=0)
            print(f"lstm hidden={h} epochs={ep} cv frame error {fe:.4f}", flush=True)
            if best is None or fe < best[0]:
                best = (fe, h, ep)
        assert best is not None
        _, h, ep = best
        for seed in args.seeds:
            scores, secs = lstm_fit_predict(Xa, Ytr, Xb, hidden=h, epochs=ep, seed=seed)
            fe, ue = evaluate(scores, Yte)
            rows.append(dict(model=f"LSTM BPTT epochs={ep}", size=h, seed=seed,
                             frame_error=fe, utterance_error=ue, fit_seconds=secs))
            print(rows[-1], flush=True)
    if rows:
        with open(args.out / "seq_baselines.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
