"""Run-time instruction-set choice (cpp/include/cscore/cpu.hpp): the CSCORE_ISA
override and its deprecated alias CSCORE_DISABLE_AVX2, as reported by
``cscore._config.instruction_set()``, and the kernels' generic path against the
default one.  The core reads the environment once per process, so every setting
runs in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cscore
from cscore import _core
from cscore._config import instruction_set

LEVELS = ("generic", "avx2", "avx512")
SUPPORTED = _core.cpu_isa_supported()


def _capped(level: str) -> str:
    """``level`` capped by what this CPU supports."""
    return LEVELS[min(LEVELS.index(level), LEVELS.index(SUPPORTED))]


def _run(code: str, env_vars: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with only ``env_vars`` as ISA settings."""
    env = {k: v for k, v in os.environ.items() if k not in ("CSCORE_ISA", "CSCORE_DISABLE_AVX2")}
    env.update(env_vars)
    # The directory that holds the cscore package under test (in-tree or installed).
    pkg_parent = os.path.dirname(os.path.dirname(cscore.__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


_REPORT = (
    "import json, cscore, cscore._config as c; "
    "print(json.dumps([c.instruction_set(), cscore._core.cpu_isa_supported()]))"
)


def test_in_process_api():
    assert instruction_set() in LEVELS
    assert instruction_set() == _core.cpu_isa()
    assert SUPPORTED in LEVELS
    assert LEVELS.index(instruction_set()) <= LEVELS.index(SUPPORTED)


@pytest.mark.parametrize(
    ("env_vars", "expected"),
    [
        ({}, "avx512"),
        ({"CSCORE_ISA": ""}, "avx512"),
        ({"CSCORE_ISA": "auto"}, "avx512"),
        ({"CSCORE_ISA": "AUTO"}, "avx512"),
        ({"CSCORE_ISA": "generic"}, "generic"),
        ({"CSCORE_ISA": " Generic "}, "generic"),
        ({"CSCORE_ISA": "avx2"}, "avx2"),
        ({"CSCORE_ISA": "AVX2"}, "avx2"),
        ({"CSCORE_ISA": "avx512"}, "avx512"),
        # the deprecated alias: any non-empty value but "0" means generic
        ({"CSCORE_DISABLE_AVX2": "1"}, "generic"),
        ({"CSCORE_DISABLE_AVX2": "yes"}, "generic"),
        ({"CSCORE_DISABLE_AVX2": "0"}, "avx512"),
        ({"CSCORE_DISABLE_AVX2": ""}, "avx512"),
        # CSCORE_ISA, when set, wins over the alias
        ({"CSCORE_ISA": "avx2", "CSCORE_DISABLE_AVX2": "1"}, "avx2"),
        ({"CSCORE_ISA": "", "CSCORE_DISABLE_AVX2": "1"}, "generic"),
    ],
)
def test_reported_instruction_set(env_vars, expected):
    proc = _run(_REPORT, env_vars)
    active, supported = json.loads(proc.stdout)
    assert supported == SUPPORTED
    # never above what the CPU supports
    assert active == _capped(expected)
    assert "RuntimeWarning" not in proc.stderr


@pytest.mark.parametrize("value", ["garbage", "sse4", "avx-512"])
def test_unknown_value_is_auto_and_reported(value):
    proc = _run(_REPORT, {"CSCORE_ISA": value, "CSCORE_DISABLE_AVX2": "1"})
    active, _ = json.loads(proc.stdout)
    assert active == SUPPORTED
    assert "RuntimeWarning" in proc.stderr
    assert f"CSCORE_ISA={value!r}" in proc.stderr


# Decodes seeded problems with OMP, SOMP and LSTM-CS and saves the outputs (and
# whether each LSTM-CS problem decodes the same alone as in the batch).
_DECODE = r"""
import sys
import numpy as np
import cscore
from cscore._config import instruction_set
from cscore.decoders.learned import lstm_logits_native

out_file = sys.argv[1]
rng = np.random.default_rng(20161122)
M, N, k = 30, 64, 4
A = rng.standard_normal((M, N))
A /= np.linalg.norm(A, axis=0)


def sparse(B, N, L, k):
    S = np.zeros((B, N, L))
    for b in range(B):
        rows = rng.choice(N, k, replace=False)
        S[b, rows] = rng.standard_normal((k, L)) + 0.5
    return S


Y1 = A @ sparse(12, N, 1, k)[:, :, 0].T + 0.01 * rng.standard_normal((M, 12))  # 12 problems
Ys = np.einsum("mn,bnl->bml", A, sparse(5, N, 4, k)) + 0.01 * rng.standard_normal((5, M, 4))
omp = cscore.omp(A, Y1, n_nonzero=9)
omp_tol = cscore.omp(A, Y1, tol=0.05)
omp32 = cscore.omp(A.astype(np.float32), Y1.astype(np.float32), n_nonzero=4)
somp = cscore.somp(A, Ys, n_nonzero=6)
somp_tol = cscore.somp(A, Ys, tol=0.2)

model = cscore.pretrained("mnist-m72")
Am = np.asarray(model.A)
S = sparse(7, Am.shape[1], model.spec.L, 10)
Yl = np.einsum("mn,bnl->bml", Am, S) + 0.005 * rng.standard_normal((7, Am.shape[0], S.shape[2]))
Yl = Yl.astype(np.float32)
res = model.decode(Yl, n_nonzero=10, return_result=True)
alone = [model.decode(Yl[b], n_nonzero=10) for b in range(len(Yl))]
lstm_batch_independent = all(np.array_equal(a, res.x[b]) for b, a in enumerate(alone))
# The LSTM's logits themselves (the decoded values come from float64 least squares).
X = rng.standard_normal((37, 5, Am.shape[0])).astype(np.float32)
logits = lstm_logits_native(model.weights, X)
logits_alone = np.concatenate([lstm_logits_native(model.weights, X[b : b + 1]) for b in range(37)])

np.savez(
    out_file,
    isa=instruction_set(),
    omp=omp,
    omp_tol=omp_tol,
    omp32=omp32,
    somp=somp,
    somp_tol=somp_tol,
    lstm=res.x,
    lstm_atoms=res.extra["atoms"],
    lstm_batch_independent=lstm_batch_independent,
    logits=logits,
    logits_batch_independent=np.array_equal(logits, logits_alone),
)
"""


def _decode(tmp_path: Path, name: str, env_vars: dict[str, str]) -> Any:
    out = tmp_path / f"{name}.npz"
    _run(_DECODE, env_vars, str(out))
    return np.load(out)


def test_generic_path_agrees_with_default(tmp_path):
    default = _decode(tmp_path, "default", {"CSCORE_ISA": "auto"})
    generic = _decode(tmp_path, "generic", {"CSCORE_ISA": "generic"})
    alias = _decode(tmp_path, "alias", {"CSCORE_DISABLE_AVX2": "1"})
    assert str(default["isa"]) == SUPPORTED
    assert str(generic["isa"]) == "generic"
    assert str(alias["isa"]) == "generic"

    # The alias is the same setting.
    for key in generic.files:
        np.testing.assert_array_equal(alias[key], generic[key], err_msg=key)

    # Greedy decoders (float64): same supports, values to rounding.
    for key in ("omp", "omp_tol", "somp", "somp_tol"):
        np.testing.assert_array_equal(generic[key] != 0, default[key] != 0, err_msg=key)
        np.testing.assert_allclose(generic[key], default[key], rtol=1e-10, atol=1e-12, err_msg=key)
    np.testing.assert_array_equal(generic["omp32"] != 0, default["omp32"] != 0)
    np.testing.assert_allclose(generic["omp32"], default["omp32"], rtol=1e-4, atol=1e-5)

    # LSTM-CS (float32 LSTM; multiply and add instead of FMA on the generic path):
    # same atoms in the same order, values to float32 rounding; and a problem
    # decodes the same alone as in the batch on both paths.
    np.testing.assert_array_equal(generic["lstm_atoms"], default["lstm_atoms"])
    assert (default["lstm_atoms"] >= 0).sum() > 0
    np.testing.assert_allclose(generic["lstm"], default["lstm"], rtol=1e-4, atol=1e-6)
    for out in (default, generic):
        assert bool(out["lstm_batch_independent"])
        assert bool(out["logits_batch_independent"])
    z_def, z_gen = default["logits"], generic["logits"]
    np.testing.assert_allclose(z_gen, z_def, rtol=1e-4, atol=1e-4 * np.abs(z_def).max())
    if SUPPORTED != "generic":
        # The override reaches the LSTM kernel: multiply-add rounds differently.
        assert not np.array_equal(z_gen, z_def)


@pytest.mark.skipif(SUPPORTED != "avx512", reason="the CPU has no AVX-512")
def test_avx512_path_equals_avx2_path(tmp_path):
    # The AVX-512 LSTM kernel does the AVX2 kernel's arithmetic on wider vectors:
    # CSCORE_ISA=avx2 (which skips it) must give the same bits.
    default = _decode(tmp_path, "default", {})
    avx2 = _decode(tmp_path, "avx2", {"CSCORE_ISA": "avx2"})
    assert str(avx2["isa"]) == "avx2"
    for key in default.files:
        if key != "isa":
            np.testing.assert_array_equal(avx2[key], default[key], err_msg=key)
