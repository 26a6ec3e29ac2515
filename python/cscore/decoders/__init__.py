"""Every decoder of cscore, and THE registry every consumer reads.

Families, one module each: :mod:`~cscore.decoders.greedy` (OMP, SOMP),
:mod:`~cscore.decoders.bcs` (BCS, MT-BCS), :mod:`~cscore.decoders.sbl` (T-SBL,
T-MSBL), :mod:`~cscore.decoders.amp` (AMP, VAMP),
:mod:`~cscore.decoders.learned` (LSTM-CS, BLSTM-CS, NWSOMP, CDSN-CS, LISTA, LAMP);
:mod:`~cscore.decoders.stopping` holds the noise-blind stopping rule
(``tol="auto"``).  The registrations below are the list of built-in decoders;
adding a decoder is one module and one :func:`register_decoder` call.
"""

from __future__ import annotations

from typing import Any

from ._decoder import Decoder, decoder
from .amp import VAMPSolver, amp, vamp
from .bcs import bcs, mtbcs
from .greedy import omp, somp
from .learned import BLSTMCS, CDSNCS, LAMP, LISTA, LSTMCS, NWSOMP
from .registry import (
    INPUT_KINDS,
    STOPPING_RULES,
    DecoderSpec,
    decoder_names,
    decoder_specs,
    decoder_table,
    get_decoder_spec,
    register_decoder,
    unregister_decoder,
)
from .sbl import tmsbl, tsbl

__all__ = [
    "BLSTMCS",
    "CDSNCS",
    "INPUT_KINDS",
    "LAMP",
    "LISTA",
    "LSTMCS",
    "NWSOMP",
    "STOPPING_RULES",
    "Decoder",
    "DecoderSpec",
    "VAMPSolver",
    "amp",
    "bcs",
    "decoder",
    "decoder_names",
    "decoder_specs",
    "decoder_table",
    "get_decoder_spec",
    "mtbcs",
    "omp",
    "register_decoder",
    "somp",
    "tmsbl",
    "tsbl",
    "unregister_decoder",
    "vamp",
]

#: The greedy decoders take every stopping rule
_GREEDY = STOPPING_RULES
#: OMP and SOMP take dense, sparse and operator A (docs/operators.md), real or complex
_ANY_A = INPUT_KINDS


def _lstm_cs_beam(model: Any, Y: Any, **settings: Any) -> Any:
    """LSTM-CS with the beam-search rescue on (``beam_width`` 8 unless given).

    The rescue needs a noise level (``tol`` or ``channel_tol``); with only
    ``n_nonzero`` this is the greedy LSTM-CS decode.
    """
    if settings.get("tol") is not None or settings.get("channel_tol") is not None:
        settings.setdefault("beam_width", 8)
    return model.decode(Y, **settings)


# complex_ok: these three take complex64/complex128 data (docs/complex.md)
register_decoder("omp", omp, layout="columns", stopping=_GREEDY, inputs=_ANY_A,
                 description="OMP on each channel independently")
register_decoder("somp", somp, stopping=_GREEDY, inputs=_ANY_A,
                 description="simultaneous OMP, joint support")
register_decoder("bcs", bcs, layout="columns", stopping=(),
                 description="Bayesian CS (Ji et al. 2008) per channel")
register_decoder("mtbcs", mtbcs, stopping=(), scale_free=False,
                 description="multitask BCS (Ji et al. 2009)")
register_decoder("tsbl", tsbl, stopping=(), scale_free=False,
                 description="T-SBL (Zhang & Rao 2011)")
register_decoder("tmsbl", tmsbl, stopping=(), complex_ok=True, scale_free=False,
                 description="T-MSBL (Zhang & Rao 2011)")
register_decoder("amp", amp, stopping=(), inputs=("dense", "sparse", "operator"),
                 description="AMP (Donoho et al. 2009), EM-learned Bernoulli-Gaussian or l1 "
                             "denoiser, joint rows for MMV")
register_decoder("vamp", vamp, stopping=(),
                 description="VAMP (Rangan et al. 2019), same denoisers, one SVD of A per matrix")
register_decoder("lstm-cs", model_type=LSTMCS, stopping=_GREEDY,
                 description="LSTM-CS (Palangi et al. 2016), per-channel supports")
register_decoder("lstm-cs-beam", _lstm_cs_beam, model_type=LSTMCS, stopping=_GREEDY,
                 description="LSTM-CS, then a beam search (width 8) re-decodes the channels "
                             "it leaves unexplained")
register_decoder("blstm-cs", model_type=BLSTMCS, stopping=_GREEDY,
                 description="bidirectional LSTM-CS (Palangi's thesis 4.6)")
register_decoder("nwsomp", model_type=NWSOMP, stopping=_GREEDY,
                 description="NWSOMP (Palangi et al. 2013), learned SOMP")
register_decoder("cdsn-cs", model_type=CDSNCS, stopping=_GREEDY,
                 description="CDSN-CS (Palangi's thesis 4.7), per-channel")
# unrolled networks (decoders/learned/unrolled.py): a fixed number of layers, no stopping rule
register_decoder("lista", model_type=LISTA, stopping=(), scale_free=False,
                 description="LISTA (Gregor & LeCun 2010), learned ISTA, T layers")
register_decoder("lamp", model_type=LAMP, stopping=(), scale_free=False,
                 description="LAMP (Borgerding et al. 2017), learned AMP, T layers")
