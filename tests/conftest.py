"""Shared fixtures: seeded generators, tiny problem factories, data paths."""

from __future__ import annotations

import importlib.util
import inspect
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

#: ../shared/data relative to the repository root (absent on a user's machine).
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

HAS_TORCH = importlib.util.find_spec("torch") is not None

TORCH_REASON = "needs PyTorch (pip install cscore-decoders[train])"

requires_torch = pytest.mark.skipif(not HAS_TORCH, reason=TORCH_REASON)


def _needs_torch(item: pytest.Item) -> bool:
    """Whether a test needs PyTorch: ``@requires_torch``, ``@pytest.mark.torch``, or
    ``pytest.importorskip("torch")`` in its body."""
    if item.get_closest_marker("torch") is not None:
        return True
    if any(m.kwargs.get("reason") == TORCH_REASON for m in item.iter_markers("skipif")):
        return True
    try:
        source = inspect.getsource(item.function)  # type: ignore[attr-defined]
    except (AttributeError, OSError, TypeError):
        return False
    return 'importorskip("torch"' in source


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that needs PyTorch ``torch``: ``pytest -m torch`` runs exactly
    those (CI's second flow, after installing torch), ``-m "not torch"`` the rest."""
    for item in items:
        if _needs_torch(item):
            item.add_marker(pytest.mark.torch)


def shared_data(*parts: str) -> Path:
    """Path under ../shared/data, skipping the test when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data not found at {path}")
    return path


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator; each test gets the same stream."""
    return np.random.default_rng(20161122)


def make_problem(
    rng: np.random.Generator,
    M: int = 30,
    N: int = 60,
    L: int = 1,
    k: int = 5,
    *,
    joint: bool = True,
    sigma: float = 0.0,
    unit_norm: bool = True,
    dtype: type = np.float64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random sparse problem ``(A, S, Y)`` with ``Y = A S (+ noise)``.

    ``joint`` gives every channel the same support; otherwise each channel draws
    its own.  ``S`` is (N, L) and ``Y`` is (M, L).
    """
    A = rng.standard_normal((M, N))
    if unit_norm:
        A /= np.linalg.norm(A, axis=0)
    S = np.zeros((N, L))
    shared = rng.choice(N, k, replace=False)
    for j in range(L):
        supp = shared if joint else rng.choice(N, k, replace=False)
        vals = rng.standard_normal(k)
        vals += np.sign(vals) * 0.5  # keep magnitudes away from zero
        S[supp, j] = vals
    Y = A @ S + sigma * rng.standard_normal((M, L))
    return A.astype(dtype), S.astype(dtype), Y.astype(dtype)


@pytest.fixture
def problem_factory(rng):
    """Factory fixture: ``problem_factory(M=.., N=.., L=.., k=..)``."""

    def factory(**kw):
        return make_problem(rng, **kw)

    return factory


@pytest.fixture(autouse=True)
def _sigint_handler_unchanged(request):
    """Every test leaves Python's Ctrl-C handler as it found it.

    A test (or a library it drives) that leaves SIGINT ignored would make every
    later Ctrl-C test meaningless; the offender is named on stderr and the
    handler restored.
    """
    before = signal.getsignal(signal.SIGINT)
    yield
    if threading.current_thread() is threading.main_thread():
        after = signal.getsignal(signal.SIGINT)
        if after is not before:
            signal.signal(signal.SIGINT, before)
            import warnings

            warnings.warn(f"{request.node.nodeid} left the SIGINT handler {after!r} "
                          f"(was {before!r}); restored", RuntimeWarning, stacklevel=1)
