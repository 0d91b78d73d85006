"""Tables of the retrieval-quality benchmark, as printed and as recorded in ``RESULTS.md``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.quality_data import KS, Scores

COLUMNS = (*(f"R@{k}" for k in KS), "MRR@10", "nDCG@5", "Complete@5", "Complete@10")
# The per-set summary: what the targets read.
SUMMARY = ("R@1", "R@5", "R@10", "MRR@10", "Complete@5", "Complete@10")


@dataclass
class Table:
    """A titled table of methods (rows) by metrics, with optional leading text columns."""

    title: str
    lead: Sequence[str] = ("method",)
    rows: list[tuple[Sequence[str], Scores]] = field(default_factory=list)
    columns: Sequence[str] = COLUMNS
    note: str = ""

    def add(self, scores: Scores, *lead: str) -> Scores:
        """Add a row; returns its scores."""
        self.rows.append((lead, scores))
        return scores

    def markdown(self) -> str:
        """The table in Markdown, with the question count as the last column."""
        head = [*self.lead, *self.columns, "questions"]
        lines = [f"**{self.title}**", "", "| " + " | ".join(head) + " |"]
        lines.append("| " + " | ".join(["---"] * len(self.lead) + ["---:"] * (len(self.columns) + 1)) + " |")
        for lead, scores in self.rows:
            figures = scores.row()
            cells = [_cell(figures.get(c)) for c in self.columns]
            lines.append("| " + " | ".join([*lead, *cells, f"{scores.count:,}"]) + " |")
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@dataclass
class Report:
    """Everything one run measured, in recording order."""

    header: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(
        self, title: str, *, lead: Sequence[str] = ("method",), note: str = "", columns: Sequence[str] = COLUMNS
    ) -> Table:
        """Start a new table."""
        table = Table(title, lead=lead, note=note, columns=columns)
        self.tables.append(table)
        return table

    def markdown(self) -> str:
        """The whole section body."""
        parts = ["\n".join(self.header), *(t.markdown() for t in self.tables), "\n".join(self.notes)]
        return "\n\n".join(p for p in parts if p.strip())
