"""Package-level behaviour: import, BLAS bridge, thread settings, validation helpers."""

from __future__ import annotations

import numpy as np
import pytest

import cscore
from cscore import _core
from cscore._validation import (
    as_float_array,
    check_matrix,
    check_nonnegative_float,
    check_positive_int,
    common_float_dtype,
)


def test_blas_registered():
    names = _core._blas_names()
    assert "dgemm" in names and "sgemm" in names


def test_num_threads_roundtrip():
    old = cscore.get_num_threads()
    with cscore.num_threads(1):
        assert cscore.get_num_threads() == 1
    assert cscore.get_num_threads() == old
    with pytest.raises(ValueError, match="positive"):
        cscore.set_num_threads(0)


def test_as_float_array_policy():
    assert as_float_array("y", np.arange(3), ndim=1).dtype == np.float64
    assert as_float_array("y", np.ones(3, np.float32), ndim=1).dtype == np.float32
    x = np.ones((4, 3))[:, ::2]
    assert as_float_array("y", x, ndim=2).flags.c_contiguous
    with pytest.raises(TypeError, match="y must be real"):
        as_float_array("y", np.ones(3, complex), ndim=1)
    with pytest.raises(ValueError, match="y must be 1-D"):
        as_float_array("y", np.ones((2, 2)), ndim=1)
    with pytest.raises(ValueError, match="empty"):
        as_float_array("y", np.ones(0), ndim=1)
    with pytest.raises(ValueError, match="NaN"):
        as_float_array("y", np.array([1.0, np.nan]), ndim=1)


def test_check_matrix_zero_column():
    A = np.ones((3, 4))
    A[:, 2] = 0
    with pytest.raises(ValueError, match="column 2"):
        check_matrix("A", A)


def test_scalar_checks():
    assert check_positive_int("k", np.int64(3), upper=5) == 3
    with pytest.raises(ValueError, match="k must be <= 5"):
        check_positive_int("k", 6, upper=5)
    with pytest.raises(TypeError):
        check_positive_int("k", 2.0)
    with pytest.raises(ValueError):
        check_nonnegative_float("tol", -1.0)
    assert common_float_dtype(np.ones(2, np.float32), np.ones(2, np.float32)) == np.float32
    assert common_float_dtype(np.ones(2, np.float32), np.ones(2)) == np.float64


def test_dir_lists_what_all_offers_and_not_the_imports():
    names = dir(cscore)
    assert set(cscore.__all__) <= set(names)
    for sub in ("seq", "text", "dask", "decoders", "models", "pipelines"):
        assert sub in names
        assert getattr(cscore, sub).__name__ == f"cscore.{sub}"
    # module-level imports of cscore/__init__.py are not part of its face
    for hidden in ("Any", "annotations", "importlib"):
        assert hidden not in names
    assert "train_lstm_cs" in names and callable(cscore.train_lstm_cs)


def test_import_cscore_dask_statement_works_in_a_fresh_interpreter():
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import cscore.dask, cscore.seq, cscore.text; "
            "import cscore; assert cscore.dask.decode is cscore.pipelines.distributed.decode; "
            "print(cscore.dask.__name__)")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(cscore.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "cscore.dask"


def test_rank_bm25_is_in_the_text_extra_not_a_dependency():
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(d.startswith("rank-bm25") for d in project["dependencies"])
    assert any(d.startswith("rank-bm25") for d in project["optional-dependencies"]["text"])
