"""The issue's targets per development set, printed with whether each is met.

Cold, on every development set: the router at least ``MARGIN`` above the best of the dense
``name: description`` peer, BM25 and the per-sentence reference on R@5 and on Complete@10 (n/a
where no request needs several tools), and never below ``TODAY_R1``. On Seal-Tools, also
Complete@10 and Complete@5 at least ``SEALTOOLS_COMPLETE``. Learned: at least the
nearest-example baseline at every step. Noisy usage: the learned ranking keeps at least
``KEPT`` of its gain over cold when a tenth of the stored runs call a wrong function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from benchmarks.quality_data import Scores

MARGIN = 0.03
# The router's cold R@1 before issue 40 (f96c425): benchmarks/RESULTS.md for BFCL, APIBench and
# multi-turn; Seal-Tools measured at that commit with `--sets sealtools --no-record`.
TODAY_R1 = {"bfcl": 0.789, "apibench": 0.111, "multi_turn_base": 0.518, "sealtools": 0.961}
SEALTOOLS_COMPLETE = {10: 0.90, 5: 0.80}
KEPT = 0.9
# A learned gain below this (the bar for a layer) is a few requests: its share is noise.
MIN_GAIN = 0.01


def _check(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def cold_targets(key: str, title: str, peers: Mapping[str, Scores], cold: Scores) -> list[str]:
    """Cold: above the best peer on R@5 and Complete@10, R@1 at today's, and (Seal-Tools) Complete@k floors.

    Args:
        key: the set's key in ``TODAY_R1`` (``bfcl``, ``apibench``, ``sealtools``, ``multi_turn_base``).
        title: how lines name the set.
        peers: the dense ``name: description`` peer, BM25 and the per-sentence reference, by label.
        cold: the router cold, on the same requests.
    """
    lines = []
    best_label = max(peers, key=lambda label: peers[label].recall(5))
    best = peers[best_label].recall(5)
    lines.append(
        f"- {title}: cold R@5 {cold.recall(5):.3f} against the best peer ({best_label}) {best:.3f} "
        f"(+{MARGIN:g} wanted): {cold.recall(5) - best:+.3f}, {_check(cold.recall(5) >= best + MARGIN)}."
    )
    complete = cold.completed(10)
    if complete is None:
        lines.append(f"- {title}: cold Complete@10: n/a (no request needs several functions).")
    else:
        label = max(peers, key=lambda p: peers[p].completed(10) or 0.0)
        floor = peers[label].completed(10) or 0.0
        lines.append(
            f"- {title}: cold Complete@10 {complete:.3f} against the best peer ({label}) {floor:.3f} "
            f"(+{MARGIN:g} wanted): {complete - floor:+.3f}, {_check(complete >= floor + MARGIN)}."
        )
    today = TODAY_R1.get(key)
    if today:
        lines.append(
            f"- {title}: cold R@1 {cold.recall(1):.3f} against today's {today:.3f}: "
            f"{cold.recall(1) - today:+.3f}, {_check(cold.recall(1) >= today - 0.0005)}."
        )
    if key == "sealtools":
        for k, wanted in SEALTOOLS_COMPLETE.items():
            value = cold.completed(k)
            ok = value is not None and value >= wanted
            lines.append(f"- {title}: cold Complete@{k} {_figure(value)} (at least {wanted:.2f} wanted): {_check(ok)}.")
    return lines


def learned_targets(
    title: str, steps: Sequence[tuple[str, Scores, Scores]], *, cold_test: Scores | None = None
) -> list[str]:
    """Learned: at the nearest-example baseline at every step (and, with ``cold_test``, not below cold).

    ``steps`` holds, per step of stored runs, its label, the router's scores and the baseline's.
    """
    lines = []
    for label, router, baseline in steps:
        gaps = ", ".join(f"R@{k} {router.recall(k) - baseline.recall(k):+.3f}" for k in (1, 5, 10))
        reached = all(router.recall(k) >= baseline.recall(k) for k in (1, 5))
        lines.append(
            f"- {title}: learned, stored runs {label}, against the nearest-example baseline: {gaps}, {_check(reached)}."
        )
        if cold_test is not None:
            gaps = ", ".join(f"R@{k} {router.recall(k) - cold_test.recall(k):+.3f}" for k in (1, 5))
            steady = all(router.recall(k) >= cold_test.recall(k) for k in (1, 5))
            lines.append(
                f"- {title}: learned, stored runs {label}, against the router cold on the same requests: {gaps}, "
                f"{_check(steady)}."
            )
    return lines


def kept_gain(cold: Scores, clean: Scores, noisy: Scores, k: int) -> float | None:
    """(noisy - cold) / (clean - cold) on R@k: the share of the learned gain that wrong runs leave.

    None when learning gains less than ``MIN_GAIN`` over cold.
    """
    gain = clean.recall(k) - cold.recall(k)
    return None if gain < MIN_GAIN else (noisy.recall(k) - cold.recall(k)) / gain


def noisy_targets(title: str, cold: Scores, clean: Scores, noisy: Scores, *, wrong: int, stored: int) -> list[str]:
    """The noisy-usage figure: the learned gain over cold kept with ``wrong`` of ``stored`` runs wrong."""
    parts, verdicts = [], []
    for k in (1, 5):
        kept = kept_gain(cold, clean, noisy, k)
        figures = f"cold {cold.recall(k):.3f}, clean {clean.recall(k):.3f}, noisy {noisy.recall(k):.3f}"
        if kept is None:
            parts.append(f"R@{k} n/a (learning gains under {MIN_GAIN:g}: {figures})")
            continue
        verdicts.append(kept >= KEPT)
        parts.append(f"R@{k} {kept:.0%} ({figures})")
    verdict = _check(all(verdicts)) if verdicts else "n/a"
    return [
        f"- {title}: noisy usage ({wrong:,} of {stored:,} stored runs call a wrong function that succeeds): "
        f"gain over cold kept {'; '.join(parts)}; at least {KEPT:.0%} wanted: {verdict}."
    ]
