"""Tables of the retrieval-quality benchmark, as printed and as recorded in ``RESULTS.md``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.quality_data import KS, Scores

__all__ = ["COLUMNS", "Report", "Table", "choices", "record", "targets"]

COLUMNS = (*(f"R@{k}" for k in KS), "MRR@10", "nDCG@5", "Complete@10")


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


def targets(cold: Scores, learned: Scores, alone: Scores, with_history: Mapping[str, Scores], chosen: str) -> list[str]:
    """The issue's targets beside what this run measured."""

    def check(ok: bool) -> str:
        return "met" if ok else "**not met**"

    history = with_history[chosen]
    return [
        "| target (development categories) | wanted | measured | |",
        "| --- | ---: | ---: | --- |",
        f"| cold start R@5 | >= 0.970 | {cold.recall(5):.3f} | {check(cold.recall(5) >= 0.97)} |",
        f"| cold start R@1 | >= 0.850 | {cold.recall(1):.3f} | {check(cold.recall(1) >= 0.85)} |",
        f"| with usage learning R@5 (test half) | >= 0.990 | {learned.recall(5):.3f} | "
        f"{check(learned.recall(5) >= 0.99)} |",
        f"| multi-turn with history ({chosen}) R@5 vs new turn alone | >= {alone.recall(5):.3f} | "
        f"{history.recall(5):.3f} | {check(history.recall(5) >= alone.recall(5))} |",
    ]


def _best(rows: Mapping[str, Scores], metric: str) -> str:
    best = max(rows, key=lambda label: rows[label].row()[metric] or 0.0)
    return f"{best} ({rows[best].row()[metric]:.3f})"


def choices(
    fusions: Mapping[str, Scores],
    lexical: str,
    alone: Scores,
    joined: Scores,
    history: Mapping[str, Scores],
    context: str,
    learned: Mapping[str, Scores],
    example: str,
) -> list[str]:
    """How this run's measurements back the defaults (labels name the rows of the tables)."""
    metrics = ("R@1", "R@5", "MRR@10")
    fusion_best = "; ".join(f"{m}: {_best(fusions, m)}" for m in metrics)
    chosen = fusions[lexical].row()
    steady = all(history[context].recall(k) >= alone.recall(k) for k in (1, 3, 5, 10))
    kept = "stays at or above the new turn alone at R@1, R@3, R@5 and R@10" if steady else "is the closest to it"
    deltas = "; ".join(
        f"{label}: R@1 {s.recall(1) - alone.recall(1):+.3f}, R@5 {s.recall(5) - alone.recall(5):+.3f}, "
        f"R@10 {s.recall(10) - alone.recall(10):+.3f}"
        for label, s in history.items()
    )
    return [
        "**Defaults chosen by measurement (development categories only)**",
        "",
        f"- Fusion: best {fusion_best}. The default, {lexical}, measures R@1 {chosen['R@1']:.3f}, R@5 "
        f"{chosen['R@5']:.3f}, MRR@10 {chosen['MRR@10']:.3f}; a convex mix of the cosine and the relative BM25 "
        "score also keeps `score` similarity-like (at most 1, the cosine itself when words add nothing), "
        "which `min_score` filters on, where RRF's rank sums and DBSF's per-query normalisation carry no "
        "similarity.",
        f"- Multi-turn, against the new turn alone: {deltas}; joining the history into one query instead: "
        f"R@5 {joined.recall(5) - alone.recall(5):+.3f}. BFCL's turns mostly say what they want, so history "
        "on every turn can only blur them; the default lets it in only when the new turn matches nothing "
        f'well, as a follow-up ("undo that") does: {context}, which {kept}.',
        f"- Usage learning: best R@5 {_best(learned, 'R@5')}, best R@1 {_best(learned, 'R@1')}; default {example}.",
        "",
    ]


def record(path: Path, heading: str, body: str) -> None:
    """Replace the ``heading`` section of a results file with ``body`` (appended when missing); the rest stays."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        before, after = lines, []
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        before, after = lines[:start], lines[end:]
    while before and not before[-1].strip():
        before.pop()
    section = [heading, "", *body.strip().splitlines()]
    blocks = [b for b in ("\n".join(before), "\n".join(section), "\n".join(after).strip()) if b]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
