"""Checking a finished :func:`cscore.decode_file` run: :func:`verify_output`.

``cscore decode --verify OUT`` prints :meth:`VerifyReport.summary` and exits
non-zero unless :attr:`VerifyReport.ok`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ._run import Run, array_problem
from .inputs import fingerprint, open_input
from .lock import lock_holder
from .manifest import MANIFEST_NAME, read_manifest

__all__ = ["VerifyReport", "verify_output"]


@dataclass
class VerifyReport:
    """What :func:`verify_output` found.

    Attributes
    ----------
    output : str
        The checked output.
    n_chunks : int
        Chunks of the run.
    complete : bool
        Whether the manifest says the run finished.
    damaged : list of int
        Recorded chunks whose data does not match their checksum (or cannot be read).
    unverifiable : list of int
        Recorded chunks without a checksum (a run of an older cscore).
    missing : list of int
        Chunks not recorded.
    problem : str or None
        The array's metadata disagrees with the record, or cannot be read.
    input_changed : bool or None
        Whether the input given differs from the run's (None: no input given).
    """

    output: str
    n_chunks: int
    complete: bool
    damaged: list[int] = field(default_factory=list)
    unverifiable: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    problem: str | None = None
    input_changed: bool | None = None

    @property
    def ok(self) -> bool:
        """True when the run is finished and every chunk matches its checksum."""
        bad = self.damaged or self.unverifiable or self.missing or self.problem
        return bool(self.complete and not bad and self.input_changed is not True)

    def summary(self) -> str:
        """A few lines for people: the verdict, then each defect."""
        def nums(xs: list[int]) -> str:
            return ", ".join(map(str, xs[:20])) + (", ..." if len(xs) > 20 else "")

        lines = [f"{self.output}: " + ("OK" if self.ok else "DAMAGED or unfinished")
                 + f" ({self.n_chunks} chunks)"]  # fmt: skip
        if self.problem:
            lines.append(f"  {self.problem}")
        for what, xs in (("damaged (checksum mismatch or unreadable)", self.damaged),
                         ("without a checksum (older cscore)", self.unverifiable),
                         ("not finished", self.missing)):  # fmt: skip
            if xs:
                lines.append(f"  {len(xs)} chunk(s) {what}: {nums(xs)}")
        if not self.complete and not self.missing:
            lines.append("  the manifest does not say the run completed")
        if self.input_changed:
            lines.append("  the input differs from the one the run decoded")
        return "\n".join(lines)


def verify_output(
    output: str | os.PathLike[str], input: str | os.PathLike[str] | None = None
) -> VerifyReport:
    """Check a run of :func:`decode_file`: every chunk against its recorded checksum.

    Parameters
    ----------
    output : path
        The output zarr array of the run.
    input : path, optional
        Also check that this input is the one the run decoded (its fingerprint).

    Returns
    -------
    VerifyReport
        ``report.ok`` is True when the run finished and nothing is damaged.

    Raises
    ------
    ValueError
        ``output`` is not a cscore run, its manifest is damaged, or a live run
        is writing it (holds its lock).
    """
    import zarr

    out = Path(output)
    if not (out / MANIFEST_NAME).is_file():
        raise ValueError(f"{out} is not a cscore decode run (no {MANIFEST_NAME})")
    who = lock_holder(out)
    if who is not None:
        raise ValueError(f"output {out} is being written by {who}; verify it after that run")
    run = Run(out, read_manifest(out / MANIFEST_NAME))
    rep = VerifyReport(str(out), run.n_chunks, bool(run.manifest["complete"]))
    rep.missing = [i for i in range(run.n_chunks) if i not in run.done]
    rep.unverifiable = sorted(run.done - set(run.sums))
    try:
        run.arr = zarr.open_array(str(out), mode="r")
        rep.problem = array_problem(run.arr, run.manifest)
    except Exception as exc:  # whatever zarr raises on missing or damaged metadata
        rep.problem = f"the output array cannot be opened ({type(exc).__name__}: {exc})"
    if rep.problem is None:
        rep.damaged = [i for i in sorted(run.done) if i in run.sums and not run.chunk_ok(i)]
    if input is not None:
        inp = open_input(Path(input))
        rep.input_changed = fingerprint(inp, run.chunk) != run.manifest["input_sha256"]
    return rep
