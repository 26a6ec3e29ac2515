"""Echo state networks with learned input/recurrent weights: the ESN core.

Thesis chapter 2 (Palangi): an ESN with sigmoid units and a linear ridge
readout whose input weights ``W`` and sparse recurrent weights ``W_rec`` are
tuned by gradient descent on the ridge cost, with the gradients taken in closed
form through the readout (see :mod:`cscore.seq._gradients`), FISTA momentum
(eqs. 2.36-2.37), gradient renormalization and ``W_rec`` renormalized to its
spectral radius after every epoch.  :class:`_SeqBase` holds what the ESN and the
R-DSN (:mod:`cscore.seq._rdsn`, section 2.5, a stack of such modules) share;
their model files are :mod:`cscore.seq._files`.
"""

from __future__ import annotations

import inspect
import numbers
import time
from pathlib import Path
from typing import Any

import numpy as np

from .._config import get_num_threads
from .._validation import check_positive_float, check_positive_int
from ._checks import _check_learn, _check_X, _check_y
from ._files import load_model, register_kind, save_model
from ._gradients import closed_form_gradients
from ._metrics import frame_error
from ._ops import SparseRec, _Module, forward, ridge_readout, spectral_radius

__all__ = ["ESN"]


def _context(x: np.ndarray, c: int) -> np.ndarray:
    """Centered window of ``c`` frames, edges repeated: (T, D) -> (T, c*D)."""
    if c == 1:
        return x
    h = (c - 1) // 2
    pad = np.concatenate([np.repeat(x[:1], h, axis=0), x, np.repeat(x[-1:], h, axis=0)])
    T = x.shape[0]
    return np.hstack([pad[k : k + T] for k in range(c)])


# --------------------------------------------------------------------- base
class _SeqBase:
    """Shared machinery: parameters, input preparation, prediction, save/load."""

    _kind = "base"
    # constructor parameters shared by ESN and RDSN (stored by ``_store_params``)
    n_hidden: int
    learn: tuple[str, ...]
    m: int
    spectral_radius: float
    input_scaling: float
    n_connections: int
    ridge: float
    context: int
    n_epochs: int
    step_size: float
    grad_clip: float
    momentum: bool
    random_state: int | None
    n_threads: int | None

    # -- sklearn-style parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def _store_params(self, values: dict[str, Any]) -> None:
        """Store the constructor arguments ``values`` (``locals()`` of ``__init__``) as is."""
        for k in self._param_names():
            setattr(self, k, values[k])

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters as a dict (scikit-learn convention).

        Parameters
        ----------
        deep : bool, default True
            Ignored (no nested estimators); kept for scikit-learn compatibility.

        Returns
        -------
        dict
            Parameter name -> value.
        """
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> _SeqBase:
        """Set constructor parameters; returns ``self``.

        Parameters
        ----------
        **params
            Parameter values by name; unknown names raise ``ValueError``.

        Returns
        -------
        self
        """
        valid = self._param_names()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(
                    f"invalid parameter {k!r} for {type(self).__name__}; valid: {valid}"
                )
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- validation of hyper-parameters (at fit time, naming the argument)
    def _validated(self) -> dict[str, Any]:
        p = self.get_params()
        v: dict[str, Any] = {}
        v["n_hidden"] = check_positive_int("n_hidden", p["n_hidden"], upper=100_000)
        v["learn"] = _check_learn(p["learn"])
        if isinstance(p["m"], (bool, np.bool_)) or not isinstance(p["m"], numbers.Integral):
            raise TypeError(f"m must be an integer >= 0, got {p['m']!r}")
        if p["m"] < 0:
            raise ValueError(f"m must be >= 0, got {p['m']}")
        v["m"] = int(p["m"])
        sr = check_positive_float("spectral_radius", p["spectral_radius"])
        if sr >= 4.0:
            raise ValueError(
                f"spectral_radius must be < 4 for sigmoid units (echo state property), got {sr}"
            )
        v["spectral_radius"] = sr
        v["input_scaling"] = check_positive_float("input_scaling", p["input_scaling"])
        v["n_connections"] = check_positive_int("n_connections", p["n_connections"])
        v["ridge"] = check_positive_float("ridge", p["ridge"])
        c = check_positive_int("context", p["context"], upper=99)
        if c % 2 == 0:
            raise ValueError(f"context must be odd (a centered window), got {c}")
        v["context"] = c
        if isinstance(p["n_epochs"], (bool, np.bool_)) or not isinstance(
            p["n_epochs"], numbers.Integral
        ):
            raise TypeError(f"n_epochs must be an integer >= 0, got {p['n_epochs']!r}")
        if p["n_epochs"] < 0:
            raise ValueError(f"n_epochs must be >= 0, got {p['n_epochs']}")
        v["n_epochs"] = int(p["n_epochs"])
        v["step_size"] = check_positive_float("step_size", p["step_size"])
        v["grad_clip"] = check_positive_float("grad_clip", p["grad_clip"])
        v["momentum"] = bool(p["momentum"])
        rs = p["random_state"]
        if rs is not None and (isinstance(rs, bool) or not isinstance(rs, numbers.Integral)):
            raise TypeError(f"random_state must be an int or None, got {p['random_state']!r}")
        if p.get("n_threads") is not None:
            check_positive_int("n_threads", p["n_threads"], upper=1024)
        return v

    # -- data preparation
    def _frames(self, X: list[np.ndarray], context: int) -> tuple[np.ndarray, np.ndarray]:
        """Standardize, add the context window and a bias column; concatenate."""
        Z = [_context((x - self.mean_) / self.scale_, context) for x in X]
        F = np.concatenate(Z)
        Xb = np.hstack([F, np.ones((F.shape[0], 1))])
        offsets = np.zeros(len(X) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([x.shape[0] for x in X])
        return np.ascontiguousarray(Xb), offsets

    def _check_fitted(self) -> None:
        if not hasattr(self, "modules_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(X, y)")

    # -- training of one module
    def _train_module(
        self,
        Xb: np.ndarray,
        offsets: np.ndarray,
        T: np.ndarray,
        W0: np.ndarray,
        rec: SparseRec,
        v: dict[str, Any],
        n_threads: int,
    ) -> _Module:
        learn = v["learn"]
        mu, lam = v["ridge"], v["spectral_radius"]
        n_frames = Xb.shape[0]
        W = W0.copy()
        history: list[float] = []
        if learn and v["n_epochs"] > 0:
            learn_rec = "W_rec" in learn
            W_prev, r_prev = W.copy(), rec.data.copy()
            t_old = 1.0
            best: tuple[float, np.ndarray, np.ndarray] | None = None
            for _ in range(v["n_epochs"]):
                E, gW, gR, _, _ = closed_form_gradients(
                    Xb, W, rec, offsets, T, mu, v["m"], learn_rec=learn_rec, n_threads=n_threads
                )
                E /= n_frames
                history.append(E)
                if best is None or E < best[0]:
                    best = (E, W.copy(), rec.data.copy())
                # mean cost per frame: gradient scaled by 1/F; renormalized when large
                gW = gW / n_frames
                gR = gR / n_frames if gR is not None else None
                norm = float(np.sqrt(np.sum(gW * gW) + (np.sum(gR * gR) if gR is not None else 0)))
                if norm > v["grad_clip"]:
                    gW *= v["grad_clip"] / norm
                    if gR is not None:
                        gR *= v["grad_clip"] / norm
                # FISTA momentum as written in eqs. 2.36-2.37: beta = m_old / m_new
                t_new = (1.0 + np.sqrt(1.0 + 4.0 * t_old * t_old)) / 2.0
                beta = t_old / t_new if v["momentum"] else 0.0
                t_old = t_new
                W_new = W - v["step_size"] * gW + beta * (W - W_prev)
                W_prev, W = W, W_new
                if gR is not None:
                    r_new = rec.data - v["step_size"] * gR + beta * (rec.data - r_prev)
                    r_prev = rec.data
                    rec = SparseRec(rec.indptr, rec.indices, r_new)
                    rec.data = rec.data * (lam / max(spectral_radius(rec), 1e-12))
            # the last update's cost, then keep the best epoch (training cost)
            H = forward(Xb @ W, rec, offsets, n_threads)
            Hc = np.hstack([H, Xb])
            U = ridge_readout(Hc, T, mu)
            Rs = Hc @ U - T
            E = float((np.sum(Rs * Rs) + mu * np.sum(U * U)) / n_frames)
            history.append(E)
            assert best is not None
            if best[0] < E:
                W = best[1]
                rec = SparseRec(rec.indptr, rec.indices, best[2])
                H = forward(Xb @ W, rec, offsets, n_threads)
                Hc = np.hstack([H, Xb])
                U = ridge_readout(Hc, T, mu)
            return _Module(W=W, rec=rec, U=U, history=history)
        H = forward(Xb @ W, rec, offsets, n_threads)
        U = ridge_readout(np.hstack([H, Xb]), T, mu)
        return _Module(W=W, rec=rec, U=U, history=history)

    @staticmethod
    def _new_rec(v: dict[str, Any], rng: np.random.Generator) -> SparseRec:
        rec = SparseRec.random(v["n_hidden"], v["n_connections"], rng)
        rho = spectral_radius(rec)
        rec.data = rec.data * (v["spectral_radius"] / max(rho, 1e-12))
        return rec

    # -- fit / predict
    def _fit(self, X: Any, y: Any, n_modules: int) -> _SeqBase:
        v = self._validated()
        Xs = _check_X("X", X)
        ys = _check_y("y", y, Xs)
        # m past the longest sequence adds only zeros (the full gradient is reached at
        # m = T_max - 1): cap it there, so a huge m cannot keep one kernel call busy
        v["m"] = min(v["m"], max(x.shape[0] for x in Xs) - 1)
        labels = np.concatenate(ys)
        classes = np.unique(labels)
        if classes.size < 2:
            raise ValueError(f"y must hold at least 2 classes; got {classes.tolist()}")
        self.classes_ = classes
        self.n_features_in_ = Xs[0].shape[1]
        allf = np.concatenate(Xs)
        self.mean_ = allf.mean(axis=0)
        sd = allf.std(axis=0)
        self.scale_ = np.where(sd > 0, sd, 1.0)
        Xb, offsets = self._frames(Xs, v["context"])
        T = (np.searchsorted(classes, labels)[:, None] == np.arange(classes.size)).astype(float)
        rng = np.random.default_rng(self.random_state)
        n_threads = self.n_threads if self.n_threads is not None else get_num_threads()
        modules: list[_Module] = []
        self.fit_seconds_: list[float] = []
        t0 = time.perf_counter()
        inp = Xb
        for level in range(n_modules):
            D_in = inp.shape[1]
            scale = v["input_scaling"] / np.sqrt(D_in)
            W0 = rng.standard_normal((D_in, v["n_hidden"])) * scale
            if level > 0:
                # section 2.5: rows for the data start from the tuned W below
                W0[: Xb.shape[1]] = modules[-1].W[: Xb.shape[1]]
            rec = self._new_rec(v, rng)
            mod = self._train_module(inp, offsets, T, W0, rec, v, n_threads)
            modules.append(mod)
            self.fit_seconds_.append(time.perf_counter() - t0)
            if level + 1 < n_modules:
                scores = self._module_scores(mod, inp, offsets, n_threads)
                inp = np.ascontiguousarray(np.hstack([Xb, scores]))
        self.modules_ = modules
        return self

    @staticmethod
    def _module_scores(
        mod: _Module, inp: np.ndarray, offsets: np.ndarray, n_threads: int
    ) -> np.ndarray:
        H = forward(inp @ mod.W, mod.rec, offsets, n_threads)
        return np.asarray(np.hstack([H, inp]) @ mod.U)

    def _scores(self, X: Any, n_modules: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        self._check_fitted()
        mods = self.modules_
        if n_modules is not None:
            mods = mods[: check_positive_int("n_modules", n_modules, upper=len(mods))]
        Xs = _check_X("X", X, self.n_features_in_)
        Xb, offsets = self._frames(Xs, int(self.context))
        n_threads = self.n_threads if self.n_threads is not None else get_num_threads()
        inp = Xb
        scores = Xb[:, :0]
        for level, mod in enumerate(mods):
            if level > 0:
                inp = np.ascontiguousarray(np.hstack([Xb, scores]))
            scores = self._module_scores(mod, inp, offsets, n_threads)
        return scores, offsets

    def decision_function(self, X: Any, n_modules: int | None = None) -> list[np.ndarray]:
        """Readout scores of every frame.

        Parameters
        ----------
        X : list of ndarray
            Sequences, each (T_i, D).
        n_modules : int, optional
            Use only the lowest ``n_modules`` modules of a stack (R-DSN); default all.

        Returns
        -------
        list of ndarray
            One (T_i, C) array per sequence; column ``j`` scores ``classes_[j]``.
        """
        S, off = self._scores(X, n_modules)
        return [S[off[i] : off[i + 1]] for i in range(len(off) - 1)]

    def predict(self, X: Any, n_modules: int | None = None) -> list[np.ndarray]:
        """Frame labels.

        Parameters
        ----------
        X : list of ndarray
            Sequences, each (T_i, D).
        n_modules : int, optional
            Use only the lowest ``n_modules`` modules of a stack (R-DSN); default all.

        Returns
        -------
        list of ndarray
            One (T_i,) array of labels (from ``classes_``) per sequence.
        """
        S, off = self._scores(X, n_modules)
        lab = self.classes_[np.argmax(S, axis=1)]
        return [lab[off[i] : off[i + 1]] for i in range(len(off) - 1)]

    def predict_sequence(self, X: Any) -> np.ndarray:
        """One label per sequence from the frame scores averaged over the sequence.

        Parameters
        ----------
        X : list of ndarray
            Sequences, each (T_i, D).

        Returns
        -------
        ndarray
            (n_sequences,) labels.
        """
        S, off = self._scores(X)
        idx = [int(np.argmax(S[off[i] : off[i + 1]].mean(axis=0))) for i in range(len(off) - 1)]
        return np.asarray(self.classes_[idx])

    def score(self, X: Any, y: Any) -> float:
        """Frame accuracy (1 - frame error), the scikit-learn ``score`` convention.

        Parameters
        ----------
        X : list of ndarray
            Sequences, each (T_i, D).
        y : list of array_like
            (T_i,) frame labels per sequence (or one label per sequence).

        Returns
        -------
        float
            Fraction of frames labelled correctly.
        """
        self._check_fitted()
        Xs = _check_X("X", X, self.n_features_in_)
        ys = _check_y("y", y, Xs)
        unknown = np.setdiff1d(np.concatenate(ys), self.classes_)
        if unknown.size:
            raise ValueError(
                f"y has labels out of range {unknown.tolist()}; the model knows "
                f"{self.classes_.tolist()}"
            )
        return 1.0 - frame_error(ys, self.predict(Xs))

    # -- persistence (npz arrays + JSON metadata, no pickle): cscore.seq._files
    def save(self, path: str | Path) -> None:
        """Write the fitted model to a compressed ``.npz`` (loads without pickle).

        The file is written atomically (:func:`cscore.models.format.save_npz_atomic`).

        Parameters
        ----------
        path : str or Path
            Destination file.
        """
        save_model(self, path)

    @classmethod
    def load(cls, path: str | Path) -> Any:
        """Read a model written by :meth:`save`.

        Parameters
        ----------
        path : str or Path
            The ``.npz`` file.

        Returns
        -------
        ESN or RDSN
            The fitted model (the class recorded in the file).
        """
        return load_model(path)


# --------------------------------------------------------------------- public classes
#: Defaults chosen on a validation split of the Japanese Vowels training utterances
#: (benchmarks/results/seq.md tells how).
_DEFAULTS: dict[str, Any] = {
    "spectral_radius": 2.0,
    "input_scaling": 0.5,
    "n_connections": 10,
    "ridge": 1.0,
    "context": 3,
    "n_epochs": 20,
    "step_size": 1.0,
    "grad_clip": 1.0,
}


class ESN(_SeqBase):
    """Echo state network with sigmoid units and a ridge readout (thesis section 2.2-2.4).

    With ``learn=()`` the classic ESN: random input weights, a random sparse
    recurrent matrix scaled to ``spectral_radius`` and a ridge readout over the
    states and the inputs (eqs. 2.1-2.9).  With ``learn=("W",)`` or
    ``learn=("W", "W_rec")`` the input (and recurrent) weights are tuned for
    ``n_epochs`` epochs by the closed-form gradients through the readout with
    ``m`` steps of dependency, FISTA momentum, gradient renormalization to
    ``grad_clip`` and ``W_rec`` renormalized to ``spectral_radius`` after every
    epoch.

    Parameters
    ----------
    n_hidden : int, default 500
        Reservoir units N.
    learn : tuple of str, default ()
        Weights to learn: ``()``, ``("W",)`` or ``("W", "W_rec")``.
    m : int, default 1
        Steps of dependency in the gradients (0 = none).  A value past the
        longest training sequence is capped at its length minus one (the full
        gradient; larger values would only add zeros).  Training runs the
        epochs in Python between compiled calls, so Ctrl-C stops it.
    spectral_radius : float, default 2.0
        Largest eigenvalue magnitude lambda of ``W_rec`` (eq. 2.3); must be < 4.
    input_scaling : float, default 0.5
        Standard deviation of each unit's input drive at initialization (the
        entries of ``W`` are N(0, (input_scaling^2) / D_in)).
    n_connections : int, default 10
        Nonzeros per row of the sparse ``W_rec``.
    ridge : float, default 1.0
        Ridge parameter mu of eq. 2.9.
    context : int, default 3
        Centered context window (frames) fed to the network; odd.
    n_epochs : int, default 20
        Epochs of weight learning (ignored when ``learn=()``).  The epoch with
        the lowest training cost is kept.
    step_size : float, default 1.0
        alpha of eq. 2.36 (applied to the per-frame mean cost).
    grad_clip : float, default 1.0
        Gradients whose norm exceeds this are rescaled to it.
    momentum : bool, default True
        FISTA momentum of eqs. 2.36-2.37.
    random_state : int, optional
        Seed for the random weights.
    n_threads : int, optional
        Threads of the compiled kernels (default :func:`cscore.get_num_threads`);
        results do not depend on it.

    Attributes
    ----------
    classes_ : ndarray
        The labels seen in ``fit``.
    modules_ : list
        The trained module (weights ``W``, ``rec``, readout ``U``, cost history).
    fit_seconds_ : list of float
        Wall time of ``fit`` up to the end of each module.

    Examples
    --------
    >>> from cscore.seq import ESN, load_japanese_vowels
    >>> tr = load_japanese_vowels("train")
    >>> model = ESN(n_hidden=50, learn=("W", "W_rec"), m=1, n_epochs=2, random_state=0)
    >>> model = model.fit(tr.X[:40], tr.frame_labels()[:40])
    >>> len(model.predict(tr.X[:3]))
    3
    """

    _kind = "esn"

    def __init__(
        self,
        n_hidden: int = 500,
        learn: tuple[str, ...] = (),
        m: int = 1,
        spectral_radius: float = _DEFAULTS["spectral_radius"],
        input_scaling: float = _DEFAULTS["input_scaling"],
        n_connections: int = _DEFAULTS["n_connections"],
        ridge: float = _DEFAULTS["ridge"],
        context: int = _DEFAULTS["context"],
        n_epochs: int = _DEFAULTS["n_epochs"],
        step_size: float = _DEFAULTS["step_size"],
        grad_clip: float = _DEFAULTS["grad_clip"],
        momentum: bool = True,
        random_state: int | None = None,
        n_threads: int | None = None,
    ) -> None:
        self._store_params(locals())

    def fit(self, X: Any, y: Any) -> ESN:
        """Train on sequences ``X`` with frame labels ``y``.

        Parameters
        ----------
        X : list of ndarray
            Sequences, each (T_i, D) float; lengths may differ.
        y : list of array_like
            (T_i,) integer frame labels per sequence (or one label per sequence).

        Returns
        -------
        self
        """
        self._fit(X, y, 1)
        return self


register_kind("esn", ESN)
