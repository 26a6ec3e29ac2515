"""Warnings raised by decoders during a benchmark, caught and counted per decoder.

A decoder that warns (T-MSBL reaching ``max_iter``, say) would otherwise print a
raw ``RuntimeWarning`` line per batch through the progress bar.  The experiments
take a :class:`WarningTally`: every warning raised inside :meth:`WarningTally.catch`
is recorded under the decoder's label instead of being shown, and the run
reports the counts (:meth:`WarningTally.summary`, :meth:`WarningTally.table`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["WarningTally"]


class WarningTally:
    """Warnings counted per decoder label, with the first message of each.

    Attributes
    ----------
    counts : dict
        Label -> number of warnings caught (labels in order of their first warning).
    first : dict
        Label -> ``"Category: message"`` of the first warning caught.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.first: dict[str, str] = {}

    @contextmanager
    def catch(self, label: str) -> Iterator[None]:
        """Record (and hide) every warning raised in the ``with`` block under ``label``.

        Every warning counts, repeats included (the ``"always"`` filter).

        Parameters
        ----------
        label : str
            The decoder (or decoder run) the block belongs to.

        Yields
        ------
        None
        """
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        for w in caught:
            self.counts[label] = self.counts.get(label, 0) + 1
            self.first.setdefault(label, f"{w.category.__name__}: {w.message}")

    @property
    def total(self) -> int:
        """Number of warnings caught, all labels together."""
        return sum(self.counts.values())

    def summary(self) -> str:
        """One line: ``"none"`` or ``"tmsbl 4, omp (auto) 1"``.

        Returns
        -------
        str
        """
        if not self.counts:
            return "none"
        return ", ".join(f"{label} {n}" for label, n in self.counts.items())

    def table(self) -> str:
        """The counts as a Markdown table (decoder, warnings, first message).

        Returns
        -------
        str
            ``"None."`` when nothing was caught.
        """
        if not self.counts:
            return "None."
        lines = ["| decoder | warnings | first message |", "|---|---|---|"]
        for label, n in self.counts.items():
            msg = " ".join(self.first[label].split()).replace("|", "\\|")
            lines.append(f"| {label} | {n} | {msg} |")
        return "\n".join(lines)
