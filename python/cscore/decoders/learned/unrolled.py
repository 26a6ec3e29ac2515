"""Unrolled decoders: LISTA (Gregor & LeCun 2010) and LAMP (Borgerding, Schniter, Rangan 2017).

Both are a fixed number T of layers, each a linear step followed by a shrinkage,
learned end to end (:mod:`cscore.training.unrolled`); decoding is plain batched
NumPy (no torch): the B problems x L channels of a batch go through every layer
as one matrix product.  Every channel is an independent vector unless the model
is ``joint`` (multi-vector): then the shrinkage acts on the rows of each problem's
(N, L) estimate (row sparsity, one support shared by the channels).

LISTA (learned ISTA), layer t = 0..T-1 with ``x_0 = 0``::

    x_{t+1} = eta(B y + S x_t; lambda_t)

``eta`` is the soft threshold (the group soft threshold of the rows for a joint
model).  ``B`` (N, M) and ``S`` (N, N) are shared by the layers (Gregor &
LeCun's form; initialised as ISTA's ``A^T / c`` and ``I - A^T A / c`` with ``c =
||A||_2^2``) or, ``untied``, one pair per layer; ``lambda_t`` is one threshold per
layer (Borgerding et al.'s LISTA).

LAMP (learned AMP, "tied": the residual uses the model's own A), ``x_0 = 0``,
``v_0 = y``::

    r_t     = x_t + B_t v_t
    x_{t+1} = eta(r_t; sigma_t, theta_t)          sigma_t^2 = ||v_t||^2 / M
    v_{t+1} = y - A x_{t+1} + (1/M) sum_n eta'(r_t)_n v_t     (Onsager correction)

with ``B_t`` (N, M) and the shrinkage's parameters ``theta_t`` learned per layer.
The shrinkages (``shrinkage=``):

* ``"soft"`` -- ``beta * soft(r; alpha * sigma)`` (LAMP-l1; theta = (alpha, beta));
* ``"bg"`` -- the MMSE estimate of a Bernoulli-Gaussian ``x`` (rate rho, variance
  psi on the support) from ``r = x + N(0, sigma^2)``, theta = (log psi, logit rho);
* ``"pwlin"`` -- Borgerding et al.'s piecewise-linear shrinkage: slope theta_3 up
  to theta_1 sigma, theta_4 up to theta_2 sigma, theta_5 beyond.

For a joint model every shrinkage is applied to the norm of a row ``r_n`` in R^L
(``x_n = g(||r_n||) r_n``: group soft threshold, row-sparse Bernoulli-Gaussian,
radial piecewise-linear; thresholds scale with ``sigma sqrt(L)``), sigma^2 is the
per-entry residual variance of the problem, and the Onsager term is the L x L
matrix ``(1/M) sum_n d x_n / d r_n`` applied to the channels of ``v_t``.  With
L = 1 the joint shrinkages are the scalar ones.

File entries (float32): LISTA ``B`` (N, M) or (T, N, M), ``S`` (N, N) or (T, N, N),
``theta`` (T, 1); LAMP ``B`` (T, N, M), ``theta`` (T, P) (P = 2, 2, 5 for soft,
bg, pwlin); ``arch`` "lista" / "lamp"; ``arch_params = {"n_layers", "joint",
"untied"}`` (LISTA) or ``{"n_layers", "joint", "shrinkage"}`` (LAMP).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._blas import single_threaded_blas
from ..._tol import warn_scale
from ..._validation import as_float_array, check_positive_int
from ...models.format import ModelFileError, load_model_arrays, save_model
from ...problem import ProblemSpec
from ...result import DecodeResult
from .base import LearnedModel
from .shrinkage import SHRINKAGES, shrink

__all__ = ["LAMP", "LISTA", "SHRINKAGES", "UnrolledModel", "shrink"]

#: Most layers a model file may declare.
MAX_LAYERS = 10_000


def _meta_params(meta: Mapping[str, Any]) -> dict[str, Any]:
    params = meta.get("arch_params")
    if not isinstance(params, dict):
        raise ValueError(f"arch_params must be an object, got {params!r}")
    return dict(params)


def _int_param(params: Mapping[str, Any], name: str, lo: int, hi: int) -> int:
    v = params.get(name)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError(f"arch_params[{name!r}] must be an int in [{lo}, {hi}], got {v!r}")
    return v


class UnrolledModel(LearnedModel):
    """What LISTA and LAMP share: weights, files, the batched decode.

    Subclasses set :attr:`ARCH`, implement :meth:`expected_shapes` and
    :meth:`_layers` (the forward pass over a batch laid out (B, L, M)) and check
    their ``arch_params`` in :meth:`_check_params`.
    """

    ARCH: ClassVar[str] = ""

    def __init__(self, arrays: Mapping[str, Any], A: np.ndarray, spec: ProblemSpec,
                 params: Mapping[str, Any], info: dict[str, Any] | None = None) -> None:
        self._set_spec(A, spec, info)
        self._params = self._check_params(dict(params))
        shapes = self.expected_shapes(spec, self._params)
        if set(arrays) != set(shapes):
            raise ValueError(f"{self.ARCH} weights must be {sorted(shapes)}, got {sorted(arrays)}")
        self._w: dict[str, np.ndarray] = {}
        for name, shape in shapes.items():
            arr = np.asarray(arrays[name])
            if arr.shape != shape:
                raise ValueError(f"weight {name!r} has shape {arr.shape}, expected {shape}")
            # a C-ordered copy (made read-only below): the layout picks the BLAS path,
            # so a model decodes to the same bits however its weights were made
            arr = np.array(arr, dtype=np.float32, order="C")
            if not np.isfinite(arr).all():
                raise ValueError(f"weight {name!r} contains NaN or infinity")
            arr.setflags(write=False)
            self._w[name] = arr
        self._check_weights()
        self._cache: dict[Any, dict[str, np.ndarray]] = {}

    def _check_weights(self) -> None:
        """Refuse weights the layers cannot evaluate (a subclass hook; none here)."""

    # -- subclass hooks -------------------------------------------------------
    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def expected_shapes(spec: ProblemSpec, params: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """Entry name -> shape of the weights for ``spec`` and ``arch_params``."""
        raise NotImplementedError

    def _layers(self, Yt: np.ndarray, n_layers: int, w: dict[str, np.ndarray],
                keep: bool) -> list[np.ndarray]:
        """The forward pass over ``Yt`` (B, L, M); each kept layer's X as (B, L, N)."""
        raise NotImplementedError

    # -- properties -----------------------------------------------------------
    @property
    def n_layers(self) -> int:
        """Number of layers T."""
        return int(self._params["n_layers"])

    @property
    def joint(self) -> bool:
        """Whether the shrinkage is row-sparse across the L channels (multi-vector)."""
        return bool(self._params["joint"])

    def arch_params(self) -> dict[str, Any]:
        """The architecture sizes and options stored in the file's ``arch_params``."""
        return dict(self._params)

    def arrays(self) -> dict[str, np.ndarray]:
        """The weights (float32, read-only), named as in the file."""
        return dict(self._w)

    def _weights(self, dtype: np.dtype) -> dict[str, np.ndarray]:
        """The weights and A in the compute dtype (cached per dtype)."""
        key = np.dtype(dtype).str
        if key not in self._cache:
            w = {k: np.ascontiguousarray(v, dtype=dtype) for k, v in self._w.items()}
            w["A"] = np.ascontiguousarray(self._A, dtype=dtype)
            self._cache[key] = w
        return self._cache[key]

    # -- files ----------------------------------------------------------------
    @classmethod
    def file_shapes(cls, meta: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """Weight entries of a file, from its ``spec`` and ``arch_params``.

        Parameters
        ----------
        meta : mapping
            The file's checked metadata.

        Returns
        -------
        dict of str to tuple
        """
        spec = ProblemSpec(**meta["spec"])
        return cls.expected_shapes(spec, cls._check_params(_meta_params(meta)))

    @classmethod
    def check_file_meta(cls, meta: Mapping[str, Any]) -> str | None:
        """What is wrong with a file's ``arch_params``, or None.

        Parameters
        ----------
        meta : mapping
            The file's metadata.

        Returns
        -------
        str or None
        """
        try:
            cls._check_params(_meta_params(meta))
        except (TypeError, ValueError) as exc:
            return str(exc)
        return None

    @classmethod
    def load(cls, path: str | Path) -> Any:
        """Load a model file written by :meth:`save` (bounded, no pickle).

        Parameters
        ----------
        path : path
            The ``.npz`` model file.

        Returns
        -------
        The model.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ModelFileError
            Malformed, of another architecture, or inconsistent.
        """
        meta, arrays, A, spec = load_model_arrays(path, (cls.ARCH,))
        try:
            return cls(arrays, A, spec, _meta_params(meta), dict(meta["info"]))
        except (ValueError, TypeError) as exc:
            raise ModelFileError(f"{path}: {exc}") from exc

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (``.npz``, see :mod:`cscore.models.format`).

        Parameters
        ----------
        path : path
            File to write (replaced atomically).
        """
        save_model(path, self.ARCH, self._w, self._A, self._spec,
                   {"arch_params": self.arch_params()}, self._info)

    # -- decoding -------------------------------------------------------------
    def _prepare(self, Y: Any, n_layers: int | None) -> tuple[np.ndarray, bool, int]:
        Y = as_float_array("Y", Y, ndim=(2, 3), empty_batch=(3, 0))
        single = Y.ndim == 2
        Yb = Y[None] if single else Y
        if Yb.shape[1] != self.M:
            raise ValueError(f"Y has {Yb.shape[1]} rows (measurements) per problem; this "
                             f"model expects M = {self.M}")
        if self.joint and Yb.shape[2] != self.L:
            raise ValueError(f"Y has {Yb.shape[2]} columns (channels) per problem; this joint "
                             f"model expects L = {self.L}")
        T = self.n_layers if n_layers is None else check_positive_int(
            "n_layers", n_layers, upper=self.n_layers, upper_desc="the model's n_layers")
        warn_scale(type(self).__name__, Yb,
                   why="its thresholds were learned at the training data's scale")
        return Yb, single, T

    def _groups(self, B: int, L: int) -> tuple[int, int]:
        """(P, G): the shrinkage's groups, G = L channels for a joint model, else 1."""
        return (B, L) if self.joint else (B * L, 1)

    def _run(self, Yb: np.ndarray, T: int, keep: bool, device: Any = None) -> list[np.ndarray]:
        B, _, L = Yb.shape
        if B == 0:
            return [np.zeros((0, self.N, L), dtype=Yb.dtype)] * (T if keep else 1)
        if device is not None:
            from ..torch_backend.unrolled import unrolled_decode

            return unrolled_decode(self, Yb, T, keep, device)
        # The products are one (L, K) x (K, N) product per problem (a stacked
        # matmul), on one BLAS thread: a problem's result never depends on the
        # batch it is decoded in (chunked files, Dask) nor on the thread count.
        with single_threaded_blas():
            Yt = np.ascontiguousarray(Yb.transpose(0, 2, 1))  # (B, L, M)
            outs = self._layers(Yt, T, self._weights(Yb.dtype), keep)
        return [np.ascontiguousarray(X.transpose(0, 2, 1)) for X in outs]

    def decode(
        self, Y: np.ndarray, *, n_layers: int | None = None, return_result: bool = False,
        device: Any = None,
    ) -> np.ndarray | DecodeResult:
        """Recover sparse ``X`` from ``Y = A X + noise`` with the unrolled network.

        Parameters
        ----------
        Y : ndarray, shape (M, L) or (B, M, L)
            Measurements of one problem or a batch; each channel is an
            independent vector unless the model is ``joint``.
        n_layers : int, optional
            Stop after this many layers (``1 <= n_layers <= self.n_layers``;
            default all): the output of an earlier layer.
        return_result : bool, default False
            Return a :class:`cscore.DecodeResult` instead of the array.
        device : str, optional
            None (default): NumPy.  A torch device (``"cpu"``, ``"cuda"``,
            ``"cuda:1"``): the same layers in PyTorch on that device
            (:mod:`cscore.decoders.torch_backend.unrolled`; needs torch).

        Returns
        -------
        ndarray, shape (N, L) or (B, N, L), or DecodeResult
            float32 when ``Y`` is float32 (computed in float32), float64
            otherwise.  The result's ``residual_norm`` is ``||y - A x||`` per
            channel, ``n_iter`` the layers run, ``stop_reason`` "layers".
        """
        if device is not None:
            from ..torch_backend import check_device

            check_device(device)
        Yb, single, T = self._prepare(Y, n_layers)
        X = self._run(Yb, T, keep=False, device=device)[-1]
        if not return_result:
            return X[0] if single else X
        R = Yb - np.einsum("mn,bnl->bml", self._weights(X.dtype)["A"], X)
        sel: Any = 0 if single else slice(None)
        return DecodeResult(
            x=X[sel], support=(X != 0)[sel], residual_norm=np.linalg.norm(R, axis=1)[sel],
            n_iter=np.full(X.shape[0], T, dtype=np.int64)[sel],
            stop_reason=np.full(X.shape[0], "layers")[sel], extra={"n_layers": T},
        )

    def decode_layers(self, Y: np.ndarray, *, n_layers: int | None = None,
                      device: Any = None) -> np.ndarray:
        """Every layer's output (for per-layer error curves).

        Parameters
        ----------
        Y : ndarray, shape (M, L) or (B, M, L)
            Measurements.
        n_layers : int, optional
            Layers to run (default all).
        device : str, optional
            As in :meth:`decode`.

        Returns
        -------
        ndarray, shape (T, N, L) or (T, B, N, L)
            Entry ``t`` is the estimate after layer ``t + 1`` (equal to
            ``decode(Y, n_layers=t + 1)``).
        """
        if device is not None:
            from ..torch_backend import check_device

            check_device(device)
        Yb, single, T = self._prepare(Y, n_layers)
        out = np.stack(self._run(Yb, T, keep=True, device=device))
        return out[:, 0] if single else out


def _flags(params: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``params`` with the 0/1 flags ``names`` checked (default 0; bools become ints)."""
    out = dict(params)
    for k in names:
        v = out.get(k, 0)
        out[k] = int(v) if isinstance(v, bool) else v
        _int_param(out, k, 0, 1)
    return out


class LISTA(UnrolledModel):
    """LISTA (Gregor & LeCun 2010): ISTA unrolled into T layers with learned B, S, thresholds.

    Parameters
    ----------
    arrays : mapping
        ``B`` (N, M), ``S`` (N, N), ``theta`` (T, 1) (with ``untied``: ``B``
        (T, N, M), ``S`` (T, N, N)); kept as float32.
    A : ndarray (M, N)
        The sensing matrix the model was trained for.
    spec : ProblemSpec
        Sizes (and for a joint model, the channels L).
    params : mapping
        ``{"n_layers": T, "joint": 0/1, "untied": 0/1}``.
    info : dict, optional
        Free-form provenance.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore.decoders.learned import LISTA
    >>> from cscore.problem import ProblemSpec
    >>> A = np.random.default_rng(0).normal(size=(8, 16)) / np.sqrt(8)
    >>> m = LISTA.from_ista(A, ProblemSpec(M=8, N=16, L=1), n_layers=3, lam=0.05)
    >>> m.decode(A[:, :2]).shape
    (16, 2)
    """

    ARCH = "lista"

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        params = _flags(params, ("joint", "untied"))
        extra = set(params) - {"n_layers", "joint", "untied"}
        if extra:
            raise ValueError(f"unknown arch_params {sorted(extra)}")
        _int_param(params, "n_layers", 1, MAX_LAYERS)
        return params

    @staticmethod
    def expected_shapes(spec: ProblemSpec, params: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """Entry shapes for ``spec`` and ``params``.

        Parameters
        ----------
        spec : ProblemSpec
        params : mapping
            ``n_layers`` and ``untied``.

        Returns
        -------
        dict of str to tuple
        """
        T, N, M = int(params["n_layers"]), spec.N, spec.M
        lead = (T,) if params.get("untied") else ()
        return {"B": (*lead, N, M), "S": (*lead, N, N), "theta": (T, 1)}

    @classmethod
    def from_ista(cls, A: np.ndarray, spec: ProblemSpec, *, n_layers: int, lam: float,
                  joint: bool = False, untied: bool = False,
                  info: dict[str, Any] | None = None) -> LISTA:
        """The untrained network: exactly ``n_layers`` iterations of ISTA.

        ISTA for ``min 0.5 ||y - A x||^2 + lam ||x||_1`` (the row l2,1 norm for
        a joint model) with step ``1 / ||A||_2^2``.

        Parameters
        ----------
        A : ndarray (M, N)
        spec : ProblemSpec
        n_layers : int
        lam : float
            The l1 weight (thresholds ``lam / ||A||_2^2``).
        joint, untied : bool
            See the class docstring.
        info : dict, optional

        Returns
        -------
        LISTA
        """
        A = np.asarray(A, dtype=np.float64)
        c = float(np.linalg.norm(A, 2) ** 2) if A.size and np.isfinite(A).all() else 0.0
        if not (c > 0.0 and np.isfinite(c)):
            raise ValueError("LISTA.from_ista: A must be finite and nonzero with a squared "
                             "spectral norm in the float range (ISTA's step is 1/||A||_2^2)")
        B = A.T / c
        S = np.eye(A.shape[1]) - A.T @ A / c
        T = check_positive_int("n_layers", n_layers)
        if untied:
            B, S = np.repeat(B[None], T, axis=0), np.repeat(S[None], T, axis=0)
        arrays = {"B": B, "S": S, "theta": np.full((T, 1), lam / c)}
        return cls(arrays, A, spec, {"n_layers": T, "joint": int(joint), "untied": int(untied)},
                   info)

    def _layers(self, Yt: np.ndarray, n_layers: int, w: dict[str, np.ndarray],
                keep: bool) -> list[np.ndarray]:
        B, L, _ = Yt.shape
        P, G = self._groups(B, L)
        untied = bool(self._params["untied"])
        By = None if untied else Yt @ w["B"].T
        X = np.zeros((B, L, self.N), dtype=Yt.dtype)
        outs = []
        for t in range(n_layers):
            if untied:
                R = Yt @ w["B"][t].T + X @ w["S"][t].T
            else:
                assert By is not None
                R = By + X @ w["S"].T
            Xg, _ = shrink("lista", R.reshape(P, G, -1), np.zeros(P), w["theta"][t])
            X = Xg.reshape(B, L, -1)
            if keep or t == n_layers - 1:
                outs.append(X)
        return outs


class LAMP(UnrolledModel):
    """LAMP (Borgerding, Schniter, Rangan 2017): AMP unrolled with learned B_t and shrinkage.

    Parameters
    ----------
    arrays : mapping
        ``B`` (T, N, M) and ``theta`` (T, P) (P from :data:`SHRINKAGES`); kept
        as float32.
    A : ndarray (M, N)
        The sensing matrix the model was trained for (the tied residual's A).
    spec : ProblemSpec
        Sizes (and for a joint model, the channels L).
    params : mapping
        ``{"n_layers": T, "joint": 0/1, "shrinkage": "soft" | "bg" | "pwlin"}``.
    info : dict, optional
        Free-form provenance.

    Examples
    --------
    >>> import numpy as np
    >>> from cscore.decoders.learned import LAMP
    >>> from cscore.problem import ProblemSpec
    >>> A = np.random.default_rng(0).normal(size=(8, 16)) / np.sqrt(8)
    >>> m = LAMP.from_amp(A, ProblemSpec(M=8, N=16, L=1), n_layers=3, shrinkage="bg",
    ...                   theta=(0.0, -2.0))
    >>> m.decode(A[:, :2], n_layers=2).shape
    (16, 2)
    """

    ARCH = "lamp"

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        params = _flags(params, ("joint",))
        extra = set(params) - {"n_layers", "joint", "shrinkage"}
        if extra:
            raise ValueError(f"unknown arch_params {sorted(extra)}")
        _int_param(params, "n_layers", 1, MAX_LAYERS)
        if params.get("shrinkage") not in SHRINKAGES:
            raise ValueError(f"arch_params['shrinkage'] must be one of {sorted(SHRINKAGES)}, "
                             f"got {params.get('shrinkage')!r}")
        return params

    @staticmethod
    def expected_shapes(spec: ProblemSpec, params: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
        """Entry shapes for ``spec`` and ``params``.

        Parameters
        ----------
        spec : ProblemSpec
        params : mapping
            ``n_layers`` and ``shrinkage``.

        Returns
        -------
        dict of str to tuple
        """
        T = int(params["n_layers"])
        return {"B": (T, spec.N, spec.M), "theta": (T, SHRINKAGES[str(params["shrinkage"])])}

    def _check_weights(self) -> None:
        """LAMP-bg: ``theta[:, 0] = log psi`` must keep ``psi`` in the float range."""
        if self.shrinkage == "bg":
            top = float(np.max(self._w["theta"][:, 0], initial=-np.inf))
            limit = math.log(np.finfo(np.float64).max)
            if top > limit:
                raise ValueError(f"weight 'theta': LAMP-bg's log slab variance theta[:, 0] = "
                                 f"{top:g} exceeds {limit:.2f} (its exp overflows)")

    @property
    def shrinkage(self) -> str:
        """The shrinkage family ("soft", "bg" or "pwlin")."""
        return str(self._params["shrinkage"])

    @classmethod
    def from_amp(cls, A: np.ndarray, spec: ProblemSpec, *, n_layers: int, shrinkage: str,
                 theta: Any, joint: bool = False, info: dict[str, Any] | None = None) -> LAMP:
        """The untrained network: ``n_layers`` iterations of AMP (``B_t = A^T``).

        Parameters
        ----------
        A : ndarray (M, N)
        spec : ProblemSpec
        n_layers : int
        shrinkage : {"soft", "bg", "pwlin"}
        theta : sequence of float
            The shrinkage's parameters, the same for every layer (e.g. ``(alpha,
            1.0)`` for AMP-l1, ``(log psi, logit rho)`` for matched BG-AMP).
        joint : bool, default False
        info : dict, optional

        Returns
        -------
        LAMP
        """
        A = np.asarray(A, dtype=np.float64)
        T = check_positive_int("n_layers", n_layers)
        th = np.asarray(theta, dtype=np.float64).reshape(1, -1)
        arrays = {"B": np.repeat(A.T[None], T, axis=0), "theta": np.repeat(th, T, axis=0)}
        return cls(arrays, A, spec, {"n_layers": T, "joint": int(joint), "shrinkage": shrinkage},
                   info)

    def _layers(self, Yt: np.ndarray, n_layers: int, w: dict[str, np.ndarray],
                keep: bool) -> list[np.ndarray]:
        B, L, M = Yt.shape
        P, G = self._groups(B, L)
        A, kind = w["A"], self.shrinkage
        X = np.zeros((B, L, self.N), dtype=Yt.dtype)
        V = Yt
        outs = []
        for t in range(n_layers):
            Vg = V.reshape(P, G, M)
            sigma2 = np.einsum("pgm,pgm->p", Vg, Vg) / (M * G)
            R = X + V @ w["B"][t].T
            Xg, J = shrink(kind, R.reshape(P, G, -1), sigma2, w["theta"][t], onsager=True)
            assert J is not None
            X = Xg.reshape(B, L, -1)
            if keep or t == n_layers - 1:
                outs.append(X)
            if t < n_layers - 1:
                V = Yt - X @ A.T + (J @ Vg).reshape(B, L, M) / M
        return outs
