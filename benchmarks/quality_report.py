"""Tables of the retrieval-quality benchmark, as printed and as recorded in ``RESULTS.md``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.quality_data import KS, Scores

COLUMNS = (*(f"R@{k}" for k in KS), "MRR@10", "nDCG@5", "Complete@5", "Complete@10")


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

    def table(self, title: str, *, lead: Sequence[str] = ("method",), note: str = "") -> Table:
        """Start a new table."""
        table = Table(title, lead=lead, note=note)
        self.tables.append(table)
        return table

    def markdown(self) -> str:
        """The whole section body."""
        parts = ["\n".join(self.header), *(t.markdown() for t in self.tables), "\n".join(self.notes)]
        return "\n\n".join(p for p in parts if p.strip())


def set_targets(
    title: str,
    dense: Scores,
    lexical: Scores,
    cold: Scores,
    learned: Sequence[tuple[str, Scores, Scores]],
    *,
    cold_test: Scores | None = None,
) -> list[str]:
    """The issue's targets on one set: cold 0.02 above the better simple method; learned at the baseline.

    ``learned`` holds, per step of stored runs, its label, the router's scores and the baseline's;
    with ``cold_test`` (the router cold on the same routed requests), learning must not rank worse.
    """

    def check(ok: bool) -> str:
        return "met" if ok else "**not met**"

    lines = []
    for k in (1, 5):
        floor = max(dense.recall(k), lexical.recall(k))
        lines.append(
            f"- {title}: cold R@{k} {cold.recall(k):.3f} against the better of dense `name: description` and BM25 "
            f"{floor:.3f} (+0.02 wanted): {cold.recall(k) - floor:+.3f}, {check(cold.recall(k) >= floor + 0.02)}."
        )
    for label, router, baseline in learned:
        gaps = ", ".join(f"R@{k} {router.recall(k) - baseline.recall(k):+.3f}" for k in (1, 5, 10))
        reached = all(router.recall(k) >= baseline.recall(k) for k in (1, 5))
        lines.append(
            f"- {title}: learned, stored runs {label}, against the nearest-example baseline: {gaps}, {check(reached)}."
        )
        if cold_test is not None:
            gaps = ", ".join(f"R@{k} {router.recall(k) - cold_test.recall(k):+.3f}" for k in (1, 5))
            steady = all(router.recall(k) >= cold_test.recall(k) for k in (1, 5))
            lines.append(
                f"- {title}: learned, stored runs {label}, against the router cold on the same requests: {gaps}, "
                f"{check(steady)}."
            )
    return lines
