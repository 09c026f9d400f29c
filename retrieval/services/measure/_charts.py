"""The measure's charts, drawn on the server as SVG (no script, works offline). Plain functions of a measure's
variants; every text is escaped.

Each variant is named by its number (variant_number); the page's legend lists each one's settings in full.

- found_ranks_svg: per variant one bar, its questions split by the rank their answer was found at;
- scores_svg: per variant one line of dots, answers' scores against controls', the floor band drawn between.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import escape

RANK_BUCKETS = (("1", 1, 1, "#2e7d32"), ("2-3", 2, 3, "#66bb6a"), ("4-5", 4, 5, "#c0ca33"),
                ("6-10", 6, 10, "#ffb300"), ("not found", None, None, "#c62828"))  # fmt: skip
_WIDTH, _LABEL, _ROW = 640, 150, 26


def variant_number(index: int) -> str:
    """A variant's name in the charts: its number, which the page's legend spells out in full (a setting list
    cut to fit the chart's margin could not tell two variants apart)."""
    return f"variant {index + 1}"


def variant_label(variant: dict[str, Any], index: int) -> str:
    changed = variant.get("changed") or []
    settings = variant["settings"]
    said = ", ".join(f"{name}={settings[name]}" for name in changed) or "as the collection is"
    return f"{index + 1}. {said}"


def _bucket(rank: int | None) -> str:
    for name, low, high, _ in RANK_BUCKETS:
        if low is None and rank is None:
            return name
        if rank is not None and low is not None and high is not None and low <= rank <= high:
            return name
    return "not found"  # found past 10: nDCG@10 and hit@5 do not count it


def found_ranks_svg(variants: list[dict[str, Any]]) -> str:
    height = _ROW * len(variants) + 40
    plot = _WIDTH - _LABEL - 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="kb-chart" width="{_WIDTH}" height="{height}" '
             f'role="img" aria-label="found-rank distribution per variant">']  # fmt: skip
    for row, variant in enumerate(variants):
        questions = [q for q in variant["questions"] if not q["control"]]
        y = 10 + row * _ROW
        label = escape(variant_number(row))
        parts.append(f'<text x="0" y="{y + 15}" font-size="11">{label}</text>')
        x = float(_LABEL)
        for name, _, _, colour in RANK_BUCKETS:
            count = sum(1 for q in questions if _bucket(q["rank"]) == name)
            if not count:
                continue
            width = plot * count / len(questions)
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="18" fill="{colour}">'
                         f"<title>rank {name}: {count}</title></rect>")  # fmt: skip
            x += width
    legend_y = 10 + len(variants) * _ROW + 12
    x = float(_LABEL)
    for name, _, _, colour in RANK_BUCKETS:
        parts.append(f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{x + 14}" y="{legend_y}" font-size="11">rank {name}</text>')  # fmt: skip
        x += 90
    parts.append("</svg>")
    return "".join(parts)


def scores_svg(variants: list[dict[str, Any]]) -> str:
    scores = [q.get("answer_score") for v in variants for q in v["questions"]]
    scores += [q.get("best_score") for v in variants for q in v["questions"]]
    known = [s for s in scores if s is not None]
    low = min(known, default=0.0) - 0.02
    high = max(known, default=1.0) + 0.02
    plot = _WIDTH - _LABEL - 10

    def at(score: float) -> float:
        return _LABEL + plot * (score - low) / ((high - low) or 1)

    height = _ROW * len(variants) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="kb-chart" width="{_WIDTH}" height="{height}" '
             f'role="img" aria-label="answer scores against control scores, with the floor band">']  # fmt: skip
    for row, variant in enumerate(variants):
        y = 10 + row * _ROW
        parts.append(f'<text x="0" y="{y + 15}" font-size="11">{escape(variant_number(row))}</text>')
        band = (variant.get("floor") or {}).get("band")
        if band:
            separated = variant["floor"].get("separated")
            colour, what = ("#c8e6c9", "floor band") if separated else ("#ffcdd2", "overlap")
            parts.append(f'<rect x="{at(band[0]):.1f}" y="{y}" width="{max(at(band[1]) - at(band[0]), 1):.1f}" '
                         f'height="18" fill="{colour}"><title>{what} {band[0]} - {band[1]}</title></rect>')  # fmt: skip
        for q in variant["questions"]:
            score = q.get("best_score") if q["control"] else q.get("answer_score")
            if score is None:
                continue
            colour, shape = ("#c62828", "control") if q["control"] else ("#1565c0", "answer")
            parts.append(f'<circle cx="{at(score):.1f}" cy="{y + 9}" r="4" fill="{colour}" fill-opacity="0.7">'
                         f"<title>{shape} {score}</title></circle>")  # fmt: skip
    axis_y = 10 + len(variants) * _ROW + 12
    for tick in range(6):
        value = low + (high - low) * tick / 5
        parts.append(f'<text x="{at(value):.1f}" y="{axis_y}" font-size="10" text-anchor="middle">{value:.2f}</text>')
    # The legend's dots in the dots' own colours: which is an answer and which a control is the chart's point.
    parts.append(
        f'<text x="0" y="{axis_y}" font-size="10">score: <tspan fill="#1565c0">●</tspan> answer '
        '<tspan fill="#c62828">●</tspan> control</text></svg>'
    )
    return "".join(parts)
