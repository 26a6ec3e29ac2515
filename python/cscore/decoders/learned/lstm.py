"""The public LSTM-CS model: load a trained model and decode with Algorithm 2.

The decoder is compiled (``cpp/include/cscore/lstm.hpp``); this module checks
arguments, prepares the weights once per model and wraps the result.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ... import _core
from ..._blas import single_threaded_blas
from ..._config import resolve_threads
from ..._validation import check_bool, check_positive_int
from ...problem import ProblemSpec
from ...result import DecodeResult
from ._lstm_common import WEIGHTS_DTYPES, Prepared, native_logits, round_to_half
from .base import FileArray, FileParam
from .beam import BeamOptions, beam_result, channel_tolerances, check_beam_memory
from .greedy_model import GreedyModel, GreedyOutput
from .weights import ARCH_ARRAYS, CELL_GATES, BLSTMCSWeights, LSTMCSWeights

__all__ = ["LSTMCS", "lstm_logits_native"]


def lstm_logits_native(
    weights: LSTMCSWeights, X: np.ndarray, *, dtype: type = np.float32, n_threads: int = 1
) -> np.ndarray:
    """Run the compiled LSTM forward over channels.

    Parameters
    ----------
    weights : LSTMCSWeights
    X : ndarray, shape (B, L, M)
        Inputs (max-abs normalized residuals), one sequence over channels per row.
    dtype : {numpy.float32, numpy.float64}, default float32
        Precision of the LSTM arithmetic (float32 is what the decoder uses).
    n_threads : int, default 1

    Returns
    -------
    ndarray, shape (B, L, N), of ``dtype``
        The logits ``U v + c_out`` after each channel.
    """
    return native_logits(
        "lstm", Prepared, weights, LSTMCSWeights, X, dtype, n_threads,
        hint=" (blstm_logits_native runs BLSTMCSWeights)",
    )  # fmt: skip


class LSTMCS(GreedyModel):
    """A trained LSTM-CS decoder (Palangi, Ward and Deng, 2016) and its sensing matrix.

    Parameters
    ----------
    weights : LSTMCSWeights
        LSTM weights in the layout of :mod:`cscore.decoders.learned.weights`.
    A : ndarray, shape (M, N)
        The sensing matrix the model was trained for.
    spec : ProblemSpec
        Sizes and signal model (``spec.M, spec.N`` must match ``A``).
    info : dict, optional
        Free-form provenance (training settings, data set).

    Notes
    -----
    The weights are kept (and saved) as float32, the precision of the model
    file and of the decoder's LSTM.

    Examples
    --------
    >>> import numpy as np, cscore
    >>> from cscore.decoders.learned import LSTMCSWeights
    >>> from cscore.problem import ProblemSpec
    >>> rng = np.random.default_rng(0)
    >>> M, N, L, H = 8, 16, 2, 4
    >>> w = LSTMCSWeights(W=rng.normal(size=(3 * H, M)), R=rng.normal(size=(3 * H, H)),
    ...                   b=np.zeros(3 * H), U=rng.normal(size=(N, H)), c_out=np.zeros(N))
    >>> model = cscore.LSTMCS(w, rng.normal(size=(M, N)), ProblemSpec(M=M, N=N, L=L))
    >>> model.decode(rng.normal(size=(M, L)), n_nonzero=2).shape
    (16, 2)
    """

    ARCH: ClassVar[str] = "lstm"
    #: ``cell`` and ``n_cells`` sit at the top of the metadata (files before arch_params)
    PARAMS_FIELD: ClassVar[str | None] = None
    FILE_PARAMS: ClassVar[Mapping[str, FileParam]] = {
        "cell": FileParam("str", choices=tuple(CELL_GATES)),
        "n_cells": FileParam(),
    }
    FILE_ARRAYS: ClassVar[Mapping[str, FileArray]] = ARCH_ARRAYS["lstm"]
    #: weights class this decoder takes, and the compiled kernels' name prefix
    _weights_type: ClassVar[type] = LSTMCSWeights
    _kernel: ClassVar[str] = "lstm"
    _prepared_type: ClassVar[type[Prepared]] = Prepared
    #: The LSTM's arithmetic in the compiled kernel (float64: the tests' exact
    #: comparisons with the NumPy oracle), and the problems per kernel chunk; set on
    #: a copy by :meth:`_with_kernel_options` (not decode settings).
    _lstm_dtype: type = np.float32
    _chunk: int = 64

    def __init__(
        self,
        weights: LSTMCSWeights | BLSTMCSWeights,
        A: np.ndarray,
        spec: ProblemSpec,
        info: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(weights, self._weights_type):
            raise TypeError(
                f"weights must be {self._weights_type.__name__}, got {type(weights).__name__}"
            )
        norms = self._set_spec(A, spec, info)
        weights.validate(spec.M, spec.N)
        self._weights: Any = weights.astype(np.float32)
        self._At = np.ascontiguousarray(self._A.T)
        self._norms = norms
        self._prepared: dict[str, Any] = {}

    # -- properties (A, spec, info, M, N, L: LearnedModel) --------------------
    @property
    def weights(self) -> Any:
        """The LSTM weights (float32): LSTMCSWeights, or BLSTMCSWeights for BLSTMCS."""
        return self._weights

    @property
    def n_cells(self) -> int:
        """LSTM cells H."""
        return self._weights.n_cells

    @property
    def cell(self) -> str:
        """Cell type: "paper" (no forget gate) or "lstm"."""
        return self._weights.cell

    def __repr__(self) -> str:
        s = self._spec
        return (
            f"{type(self).__name__}(M={s.M}, N={s.N}, L={s.L}, n_cells={self.n_cells}, "
            f"cell={self.cell!r}, "
            f"transform={s.transform!r}, dataset={s.dataset!r})"
        )

    # -- files (the protocol of LearnedModel) ------------------------------------
    @classmethod
    def _file_dims(cls, params: Mapping[str, Any]) -> dict[str, int]:
        """``G`` (gates of the cell type) and ``H`` (cells) of :data:`ARCH_ARRAYS`."""
        return {"G": len(CELL_GATES[params["cell"]]), "H": int(params["n_cells"])}

    @classmethod
    def _from_arrays(
        cls, arrays: dict[str, np.ndarray], A: np.ndarray, spec: ProblemSpec,
        params: dict[str, Any], info: dict[str, Any],
    ) -> LSTMCS:
        return cls(cls._weights_type(**arrays, cell=params["cell"]), A, spec, info)

    def _to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        w = self._weights
        return {k: getattr(w, k) for k in w._ARRAYS}, {"cell": w.cell, "n_cells": w.n_cells}

    def _with_kernel_options(self, *, lstm_dtype: type | None = None,
                             chunk: int | None = None) -> LSTMCS:
        """A copy (sharing the weights) whose compiled decode runs the LSTM in
        ``lstm_dtype`` over chunks of ``chunk`` problems (tests and benchmarks)."""
        out = copy.copy(self)  # shallow: the weights and their prepared layouts stay shared
        if lstm_dtype is not None:
            out._lstm_dtype = lstm_dtype
        if chunk is not None:
            out._chunk = int(chunk)
        return out

    # -- decoding -------------------------------------------------------------
    def _prep(self, dtype: type, weights_dtype: str = "float32") -> Any:
        key = f"{np.dtype(dtype).name}/{weights_dtype}"
        if key not in self._prepared:
            self._prepared[key] = self._prepared_type(self._weights, dtype, weights_dtype)
        return self._prepared[key]

    def decode(
        self,
        Y: np.ndarray,
        *,
        n_nonzero: int | None = None,
        tol: float | str | None = None,
        exclude_selected: bool = True,
        n_threads: int | None = None,
        return_result: bool = False,
        weights_dtype: str = "float32",
        beam_width: int = 0,
        beam_candidates: int = 4,
        channel_tol: float | np.ndarray | None = None,
        device: Any = None,
    ) -> np.ndarray | DecodeResult:
        """Recover sparse ``S`` from ``Y = A S`` with Algorithm 2 (LSTM-CS).

        Each greedy iteration visits channels ``j = 0..L-1``: the channel's
        residual divided by its largest absolute entry goes through one LSTM
        step (state carried from channel ``j-1``, zero at channel 0); the
        largest logit names the channel's next atom; the channel is re-fitted
        by least squares on its support (an incrementally updated QR).

        Parameters
        ----------
        Y : ndarray, shape (M, L) or (B, M, L)
            Measurements of one problem or a batch.
        n_nonzero : int, optional
            Atoms per channel (greedy iterations), ``1 <= n_nonzero <= min(M, N)``.
        tol : float, optional
            Stop a problem once the sum over channels of residual l2 norms is
            ``<= tol`` (checked before each greedy iteration).  ``tol="auto"``
            estimates each problem's noise level from the measurements
            (residual ratio thresholding on the decoder's own greedy path, see
            :mod:`cscore.decoders.stopping`; the path of each problem ends inside
            the compiled kernel, :mod:`cscore.decoders.path_stop`) and uses the
            paper's threshold with it,
            ``L * sigma_hat * sqrt(M L)``; ``extra["sigma_hat"]`` reports it.
        exclude_selected : bool, default True
            Take the argmax over atoms not yet in the channel's support.  With
            False, re-selecting an atom stops that channel.
        n_threads : int, optional
            Threads over the batch (default: :func:`cscore.get_num_threads`).
            Results do not depend on it.
        return_result : bool, default False
            Return a :class:`cscore.DecodeResult` instead of the array.
        weights_dtype : {"float32", "float16"}, default "float32"
            Precision the LSTM's matrices (W, R, U) are read in.  "float16"
            rounds them to half precision (biases stay float32; the arithmetic
            stays float32) and, with avx2 and above, streams them as half
            precision (F16C conversion): about half the memory traffic of a
            one-problem decode.  It changes results slightly, identically for
            every batch (see ``docs/performance.md`` for its measured quality);
            ValueError if a weight exceeds 65504.
        beam_width : int, default 0
            0: the greedy decode of the paper.  ``> 0``: after it, every channel
            whose residual norm is still above ``channel_tol`` is decoded again
            by a beam search with the same network, keeping ``beam_width``
            partial supports (:mod:`cscore.decoders.learned.beam`); the first
            support that explains the channel down to ``channel_tol`` replaces
            the greedy one.  Channels already explained are untouched.
            Unidirectional LSTM-CS only (ValueError for BLSTM-CS).  The search
            runs the weights the decode ran (``weights_dtype="float16"``: the
            float16-rounded matrices).  A width whose search would need more
            memory than ``CSCORE_MEMORY_LIMIT`` (default 4 GiB, see
            :mod:`cscore._limits`) is refused with a ``ValueError``.
        beam_candidates : int, default 4
            Atoms tried per partial support and step (the network's best).
        channel_tol : float or array_like (B,), optional
            Residual norm under which a channel counts as explained.  Default
            ``1.5 * sigma * sqrt(M)``, the noise level ``sigma`` read from
            ``tol`` as the paper's rule ``L * sigma * sqrt(M L)``, or each
            problem's ``sigma_hat`` with ``tol="auto"``; needed when only
            ``n_nonzero`` is given.
        device : str, optional
            None (default): the compiled CPU kernel.  A torch device
            (``"cpu"``, ``"cuda"``, ``"cuda:1"``): the same algorithm in PyTorch
            on that device (:mod:`cscore.decoders.torch_backend.lstm`, needs
            torch; ``docs/gpu.md``).  The LSTM runs in float32 there too; the
            beam rescue of ``beam_width`` stays on the CPU.

        Returns
        -------
        ndarray, shape (N, L) or (B, N, L), or DecodeResult
            float32 when ``Y`` is float32, float64 otherwise.  The result's
            ``extra["atoms"]`` holds the atoms in selection order, shape
            (..., L, k) padded with -1; with ``beam_width``,
            ``extra["rescued"]`` (..., L) marks the channels the search replaced.

        Notes
        -----
        With neither ``n_nonzero`` nor ``tol``, ``n_nonzero = max(1, M // 4)``,
        the number of steps the paper trains the LSTM for (its ``T``).  With only
        ``tol``, iterations are capped at ``min(M, N)``.  A channel whose next
        atom is linearly dependent on its support (or already in it) stops
        there; a problem whose channels all stopped reports ``"dependent"``.

        The LSTM runs in float32 over chunks of 64 problems, with cscore's own
        matrix kernel: every logit is the same chain of fused multiply-adds
        whatever the batch, so a problem decodes bit-identically alone or in
        any batch (and with any thread count).  Up to ``_core._lstm_small_max``
        problems per call (a stream's frames) take a path that vectorizes over
        the LSTM's output rows instead of over problems, on a second layout of
        the weights made once per model: the same chains, so the same bits.
        The least squares run in
        float64, on a thin QR of the support grown by one column per atom.
        ``n_threads`` workers take whole chunks; Ctrl-C stops the call within
        a fraction of a second (``KeyboardInterrupt``).  An empty batch
        ``(0, M, L)`` gives ``(0, N, L)``.  The BLAS is kept single-threaded for
        the duration of the call (a multi-threaded BLAS on these small products is several
        times slower; see ``benchmarks/results/lstm_speed.md``).
        """
        if device is not None:
            from ..torch_backend import check_device

            check_device(device)
        opts = {"exclude_selected": exclude_selected, "n_threads": n_threads,
                "weights_dtype": weights_dtype, "device": device}
        if isinstance(beam_width, (int, np.integer)) and not isinstance(beam_width, bool) \
                and beam_width == 0:
            return self._decode(Y, n_nonzero, tol, return_result, **opts)
        width = check_positive_int("beam_width", beam_width, upper=2**31 - 1,
                                   upper_desc="the compiled search's int32 width")
        return self._beam_decode(Y, n_nonzero, tol, return_result, width, beam_candidates,
                                 channel_tol, opts)

    def _beam_decode(
        self, Y: Any, n_nonzero: int | None, tol: Any, return_result: bool, width: int,
        candidates: int, channel_tol: Any, opts: dict[str, Any],
    ) -> np.ndarray | DecodeResult:
        """The greedy decode followed by the beam-search rescue (``beam_width > 0``)."""
        if type(self.weights) is not LSTMCSWeights:  # BLSTMCSWeights: no backward context
            raise ValueError("beam_width works with the unidirectional LSTM-CS only")
        candidates = check_positive_int("beam_candidates", candidates, upper=self.N,
                                        upper_desc="N of the model")
        Yf = np.asarray(Y)
        B = 1 if Yf.ndim == 2 else (Yf.shape[0] if Yf.ndim == 3 else 1)
        threads = resolve_threads(opts["n_threads"])
        if opts["weights_dtype"] not in WEIGHTS_DTYPES:
            raise ValueError(f"weights_dtype must be one of {WEIGHTS_DTYPES}, "
                             f"got {opts['weights_dtype']!r}")
        # The rescue runs the network of the decode: float16-rounded matrices too.
        network = self._prep(np.float32, opts["weights_dtype"]).args()
        check_beam_memory(width, candidates, self.M, self.N, self.L, int(network[0].shape[0]),
                          B, threads)
        res = self._decode(Y, n_nonzero, tol, True, **opts)
        assert isinstance(res, DecodeResult)
        beam = BeamOptions(width, candidates,
                           channel_tolerances(tol, channel_tol, res, self.M, self.L, B))
        out = beam_result(network, self._A, Yf, res, beam, threads)
        return out if return_result else out.x

    PATH_STOP: ClassVar[bool] = True

    def _run(
        self, Y: np.ndarray, k_max: int, tol: float, k_from_user: bool, **options: Any
    ) -> GreedyOutput:
        S, atoms, resid, n_iter, stop = self._kernel_call(Y, k_max, tol, k_from_user, None,
                                                          options)  # fmt: skip
        return S, atoms, resid, n_iter, stop

    def _run_path(
        self, Y: np.ndarray, K: int, rule: tuple[np.ndarray, np.ndarray, int, int, int],
        **options: Any,
    ) -> tuple[np.ndarray, np.ndarray]:
        out = self._kernel_call(Y, K, -1.0, True, rule, options)
        return out[1], out[5]

    def _kernel_call(
        self, Y: np.ndarray, k_max: int, tol: float, k_from_user: bool, rule: Any,
        options: dict[str, Any],
    ) -> tuple[np.ndarray, ...]:
        """The compiled decode (``rule``: the ``tol="auto"`` path end, or None)."""
        exclude = check_bool("exclude_selected", options["exclude_selected"])
        threads = resolve_threads(options["n_threads"])
        wdt = options["weights_dtype"]
        if wdt not in WEIGHTS_DTYPES:
            raise ValueError(f"weights_dtype must be one of {WEIGHTS_DTYPES}, got {wdt!r}")
        if options.get("device") is not None:
            from ..torch_backend.lstm import lstm_greedy

            w = self._weights if wdt == "float32" else round_to_half(self._weights)
            return lstm_greedy(w, self._A, self._norms, Y, k_max, tol, exclude, k_from_user,
                               options["device"], rule=rule)
        prep = self._prep(self._lstm_dtype, wdt)
        fn = getattr(_core, f"_{self._kernel}_decode_{prep.suffix}")
        extra = {} if rule is None else {"rrt": rule}
        with single_threaded_blas():
            out = fn(
                *prep.args(), self._At, self._norms, Y, k_max, tol, exclude, k_from_user,
                threads, self._chunk, **prep.panels, **extra,
            )  # fmt: skip
        return tuple(out)

