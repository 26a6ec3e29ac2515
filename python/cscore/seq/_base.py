"""What the ESN and the R-DSN share: parameters, data preparation, fit loop, prediction.

:class:`SeqBase` holds the scikit-learn conventions (``get_params``/``set_params``,
checks at fit time naming the argument), the standardization and context window
of the frames (:func:`context_window`), the fit loop over stacked modules
(section 2.5; one module for the ESN), prediction and ``save``/``load``
(:mod:`cscore.seq._files`).  One module's training is :mod:`cscore.seq._train`;
the public classes are :class:`cscore.seq.ESN` and :class:`cscore.seq.RDSN`.
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
from ._checks import check_labels, check_learn, check_sequences
from ._files import load_model, save_model
from ._metrics import frame_error
from ._ops import Module, forward
from ._train import new_rec, train_module

__all__ = ["DEFAULTS", "SeqBase", "context_window"]

#: Defaults chosen on a validation split of the Japanese Vowels training utterances
#: (benchmarks/results/seq.md tells how).
DEFAULTS: dict[str, Any] = {
    "spectral_radius": 2.0,
    "input_scaling": 0.5,
    "n_connections": 10,
    "ridge": 1.0,
    "context": 3,
    "n_epochs": 20,
    "step_size": 1.0,
    "grad_clip": 1.0,
}


def context_window(x: np.ndarray, c: int) -> np.ndarray:
    """Centered window of ``c`` frames, edges repeated: (T, D) -> (T, c*D).

    Parameters
    ----------
    x : ndarray
        (T, D) frames of one sequence.
    c : int
        Odd window length; 1 returns ``x``.

    Returns
    -------
    ndarray
        (T, c*D): row t holds frames t-(c-1)/2 .. t+(c-1)/2 side by side.
    """
    if c == 1:
        return x
    h = (c - 1) // 2
    pad = np.concatenate([np.repeat(x[:1], h, axis=0), x, np.repeat(x[-1:], h, axis=0)])
    T = x.shape[0]
    return np.hstack([pad[k : k + T] for k in range(c)])


class SeqBase:
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

    def set_params(self, **params: Any) -> SeqBase:
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
    def validated(self) -> dict[str, Any]:
        """The hyper-parameters checked (at fit time; errors name the argument).

        Returns
        -------
        dict
            Parameter name -> checked value (``m`` and ``n_epochs`` as int, ``learn``
            in storage order).
        """
        p = self.get_params()
        v: dict[str, Any] = {}
        v["n_hidden"] = check_positive_int("n_hidden", p["n_hidden"], upper=100_000)
        v["learn"] = check_learn(p["learn"])
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
        Z = [context_window((x - self.mean_) / self.scale_, context) for x in X]
        F = np.concatenate(Z)
        Xb = np.hstack([F, np.ones((F.shape[0], 1))])
        offsets = np.zeros(len(X) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([x.shape[0] for x in X])
        return np.ascontiguousarray(Xb), offsets

    def _check_fitted(self) -> None:
        if not hasattr(self, "modules_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(X, y)")


    # -- fit / predict
    def _fit(self, X: Any, y: Any, n_modules: int) -> SeqBase:
        v = self.validated()
        Xs = check_sequences("X", X)
        ys = check_labels("y", y, Xs)
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
        modules: list[Module] = []
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
            rec = new_rec(v, rng)
            mod = train_module(inp, offsets, T, W0, rec, v, n_threads)
            modules.append(mod)
            self.fit_seconds_.append(time.perf_counter() - t0)
            if level + 1 < n_modules:
                scores = self._module_scores(mod, inp, offsets, n_threads)
                inp = np.ascontiguousarray(np.hstack([Xb, scores]))
        self.modules_ = modules
        return self

    @staticmethod
    def _module_scores(
        mod: Module, inp: np.ndarray, offsets: np.ndarray, n_threads: int
    ) -> np.ndarray:
        H = forward(inp @ mod.W, mod.rec, offsets, n_threads)
        return np.asarray(np.hstack([H, inp]) @ mod.U)

    def _scores(self, X: Any, n_modules: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        self._check_fitted()
        mods = self.modules_
        if n_modules is not None:
            mods = mods[: check_positive_int("n_modules", n_modules, upper=len(mods))]
        Xs = check_sequences("X", X, self.n_features_in_)
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
        Xs = check_sequences("X", X, self.n_features_in_)
        ys = check_labels("y", y, Xs)
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
