"""An evaluation told: the table of figures, the functions most often missed, and machine-readable JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.evaluate.metrics import COMPLETE_SHARE, KS, Figures, complete_at, misses, recall_at, smallest_complete
from router.evaluate.run import Evaluation

# Functions listed under the table, and the requests shown for each.
MISSED_SHOWN = 5
REQUESTS_SHOWN = 3
_WIDTH = 72


@dataclass(frozen=True)
class Gate:
    """``--min-recall X --k K``: the router's R@K must reach X."""

    min_recall: float
    k: int

    def recall(self, evaluation: Evaluation) -> float:
        """The router's R@K."""
        return recall_at(evaluation.methods[evaluation.router], self.k)

    def passed(self, evaluation: Evaluation) -> bool:
        """Whether the router's R@K reaches the floor."""
        return self.recall(evaluation) >= self.min_recall

    def verdict(self, evaluation: Evaluation) -> str:
        """One line saying the figure, the floor and whether it passed."""
        recall = self.recall(evaluation)
        if self.passed(evaluation):
            return f"R@{self.k} of the {evaluation.router} is {recall:.2f}, at or above the floor {self.min_recall:.2f}"
        return f"R@{self.k} of the {evaluation.router} is {recall:.2f}, below the floor {self.min_recall:.2f}"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _WIDTH else flat[: _WIDTH - 3] + "..."


def _rank(rank: int | None, depth: int) -> str:
    if rank is None:
        return f"not in the top {depth}"
    return "pinned" if rank == 0 else f"rank {rank}"


def table(evaluation: Evaluation, *, k: int | None = None, gate: Gate | None = None) -> str:
    """The report as text: figures per method, most missed functions, the ``max_functions`` to pick.

    A function counts as missed outside the top ``k`` (routing's ``max_functions`` by default).
    """
    namespaces = sorted({c.namespace or "" for c in evaluation.cases})
    lines = [
        f"{len(evaluation.cases)} cases in {len(namespaces)} catalog{'s' * (len(namespaces) != 1)} "
        f"({', '.join(namespaces)}; {evaluation.functions} functions), routing as configured "
        f"(max_functions {evaluation.max_functions})",
        "",
    ]
    labels = list(evaluation.methods)
    width = max(len(label) for label in labels)
    heads = [f"R@{k}" for k in KS] + [f"all@{k}" for k in KS] + ["MRR"]
    lines.append(" " * width + "".join(f"{h:>8}" for h in heads))
    for label, ranked in evaluation.methods.items():
        figures = Figures.of(ranked)
        values = [figures.recall[k] for k in KS] + [figures.complete[k] for k in KS] + [figures.mrr]
        lines.append(f"{label:<{width}}" + "".join(f"{v:>8.2f}" for v in values))
    lines += ["", *_missed(evaluation, k or evaluation.max_functions), "", _recommendation(evaluation)]
    if gate is not None:
        lines += ["", f"gate: {gate.verdict(evaluation)}"]
    lines += [f"note: {note}" for note in evaluation.notes]
    return "\n".join(lines)


def _missed(evaluation: Evaluation, k: int) -> list[str]:
    found = misses(evaluation.methods[evaluation.router], k)
    if not found:
        return [f"The {evaluation.router} returned every needed function in its top {k}."]
    lines = [f"Most often missed by the {evaluation.router} (not in its top {k}):"]
    for name, missed in list(found.items())[:MISSED_SHOWN]:
        namespace = evaluation.cases[missed[0].case].namespace
        lines.append(f"  {name} ({namespace}): missed by {len(missed)} case{'s' * (len(missed) != 1)}")
        for miss in missed[:REQUESTS_SHOWN]:
            case = evaluation.cases[miss.case]
            lines.append(f"    {_rank(miss.rank, evaluation.depth):<18} {case.where}: {_one_line(case.request)}")
        if len(missed) > REQUESTS_SHOWN:
            lines.append(f"    and {len(missed) - REQUESTS_SHOWN} more")
    if len(found) > MISSED_SHOWN:
        lines.append(f"  and {len(found) - MISSED_SHOWN} more functions (--json lists them all)")
    return lines


def _recommendation(evaluation: Evaluation) -> str:
    ranked = evaluation.methods[evaluation.router]
    best = smallest_complete(ranked, evaluation.depth)
    share = f"{COMPLETE_SHARE:.0%}"
    now = evaluation.max_functions
    current = f"the current {now} completes {complete_at(ranked, now):.0%}"
    if best is None:
        return f"max_functions: none up to {evaluation.depth} returns every needed function for {share}; {current}"
    return (
        f"max_functions: {best} returns every needed function for {complete_at(ranked, best):.0%} of cases "
        f"(the least that reaches {share}); {current}"
    )


def as_json(evaluation: Evaluation, *, k: int | None = None, gate: Gate | None = None) -> dict[str, Any]:
    """The report for machines: figures per method, every miss, each case's ranks, the gate."""
    router = evaluation.methods[evaluation.router]
    k = k or evaluation.max_functions
    methods = {}
    for label, ranked in evaluation.methods.items():
        figures = Figures.of(ranked)
        methods[label] = {
            **{f"R@{at}": round(v, 4) for at, v in figures.recall.items()},
            **{f"all@{at}": round(v, 4) for at, v in figures.complete.items()},
            "MRR": round(figures.mrr, 4),
        }
    missed = [
        {
            "function": name,
            "namespace": evaluation.cases[found[0].case].namespace,
            "missed": len(found),
            "cases": [
                {"where": evaluation.cases[m.case].where, "request": evaluation.cases[m.case].request, "rank": m.rank}
                for m in found
            ],
        }
        for name, found in misses(router, k).items()
    ]
    return {
        "cases": [
            {
                "where": case.where,
                "namespace": case.namespace,
                "request": case.request,
                "expected": list(case.expected),
                "ranks": {label: dict(ranked[i]) for label, ranked in evaluation.methods.items()},
            }
            for i, case in enumerate(evaluation.cases)
        ],
        "functions": evaluation.functions,
        "depth": evaluation.depth,
        "router": evaluation.router,
        "methods": methods,
        "missed": {"k": k, "functions": missed},
        "max_functions": {
            "current": evaluation.max_functions,
            "current_complete": round(complete_at(router, evaluation.max_functions), 4),
            "recommended": smallest_complete(router, evaluation.depth),
            "complete_share": COMPLETE_SHARE,
        },
        "gate": None
        if gate is None
        else {
            "k": gate.k,
            "min_recall": gate.min_recall,
            "recall": round(gate.recall(evaluation), 4),
            "passed": gate.passed(evaluation),
        },
        "notes": evaluation.notes,
    }
