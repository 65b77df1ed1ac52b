"""A self-contained HTML report with inline SVG plots (no JavaScript, no dependencies).

Plots: metric values against their thresholds, the per-stratum breakdown, and the TSA confusion
matrix. Failures are listed row by row, as they are in the JSON document. A RAGAS run's rows are
listed worst first with their scores and the trace id of the agent request that answered them
(``traceId``), a link into the trace UI when a ``trace_url`` template
(``http://jaeger:16686/trace/{trace_id}``) is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

BAR_W = 360
ROW_H = 26
LABELS = {
    "context_precision": "context_precision (rank-weighted)",
    "context_precision_simple": "context_precision (simple, relevant/K)",
}


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.1f}"


def bars_svg(items: Sequence[tuple[str, float | None, float | None, bool | None]]) -> str:
    """Horizontal bars 0..1 with a threshold tick; red when the threshold is missed."""
    label_w = 250
    h = ROW_H * len(items) + 24
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + BAR_W + 70}" '
        f'height="{h}" role="img">'
    ]
    for i, (name, value, threshold, passed) in enumerate(items):
        y = 8 + i * ROW_H
        color = "#9aa0a6" if passed is None else ("#2e7d32" if passed else "#c62828")
        width = 0 if value is None else max(0.0, min(1.0, value)) * BAR_W
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" '
            f'font-size="12">{escape(LABELS.get(name, name))}</text>'
        )
        parts.append(f'<rect x="{label_w}" y="{y}" width="{BAR_W}" height="18" fill="#eee"/>')
        parts.append(
            f'<rect x="{label_w}" y="{y}" width="{width:.1f}" height="18" '
            f'fill="{color}"><title>{escape(name)} = {_fmt(value)}</title></rect>'
        )
        if threshold is not None:
            tx = label_w + max(0.0, min(1.0, threshold)) * BAR_W
            parts.append(
                f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{y - 3}" y2="{y + 21}" '
                f'stroke="#000" stroke-width="2"><title>threshold {threshold}'
                f"</title></line>"
            )
        parts.append(
            f'<text x="{label_w + BAR_W + 6}" y="{y + 15}" font-size="12">{_fmt(value)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _mix(lo: tuple[int, int, int], hi: tuple[int, int, int], t: float) -> str:
    r, g, b = (round(a + (z - a) * t) for a, z in zip(lo, hi, strict=True))
    return f"rgb({r},{g},{b})"


def confusion_svg(confusion: Mapping[str, Mapping[str, int]]) -> str:
    """Expected labels as rows, predicted as columns; green diagonal, red confusions, darker
    cells hold more cases."""
    rows = sorted(confusion)
    cols = sorted({c for r in confusion.values() for c in r} | set(rows))
    cell, left, top = 44, 190, 150
    peak = max([v for r in confusion.values() for v in r.values()] or [1])
    w, h = left + cell * len(cols) + 110, top + cell * len(rows) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img">',
        f'<text x="{left}" y="14" font-size="12">predicted →</text>',
        f'<text x="4" y="{top - 6}" font-size="12">expected ↓</text>',
    ]
    for j, c in enumerate(cols):
        x = left + j * cell + cell / 2
        parts.append(
            f'<text transform="translate({x:.0f},{top - 8}) rotate(-55)" '
            f'font-size="11">{escape(c)}</text>'
        )
    for i, r in enumerate(rows):
        y = top + i * cell
        parts.append(
            f'<text x="{left - 6}" y="{y + cell / 2 + 4:.0f}" text-anchor="end" '
            f'font-size="11">{escape(r)}</text>'
        )
        for j, c in enumerate(cols):
            n = confusion[r].get(c, 0)
            t = n / peak
            if not n:
                fill = "#f7f7f7"
            elif r == c:
                fill = _mix((200, 230, 201), (27, 94, 32), t)
            else:
                fill = _mix((255, 205, 210), (183, 28, 28), t)
            x = left + j * cell
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="{fill}"><title>{escape(r)} → {escape(c)}: {n}</title></rect>'
            )
            if n:
                ink = "#fff" if t > 0.5 else "#222"
                parts.append(
                    f'<text x="{x + cell / 2 - 1:.0f}" y="{y + cell / 2 + 4:.0f}" '
                    f'text-anchor="middle" font-size="12" fill="{ink}">{n}</text>'
                )
    parts.append("</svg>")
    return "".join(parts)


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


TRACE_ID_FIELD = "{trace_id}"


def check_trace_url(template: str) -> str:
    """A trace UI URL template must hold ``{trace_id}`` and be an http(s) URL."""
    if TRACE_ID_FIELD not in template:
        raise ValueError(f"trace URL template {template!r} has no {TRACE_ID_FIELD} in it")
    if not template.startswith(("http://", "https://")):
        raise ValueError(f"trace URL template {template!r} is not an http(s) URL")
    return template


def trace_cell(trace_id: str | None, trace_url: str | None) -> str:
    """The trace column's HTML: the id, as a link when there is a template; n/a without one."""
    if not trace_id:
        return "n/a"
    text = f"<code>{escape(trace_id)}</code>"
    if trace_url is None:
        return text
    href = trace_url.replace(TRACE_ID_FIELD, trace_id)
    return f'<a href="{escape(href, quote=True)}">{text}</a>'


def _worst_first(doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Rows ordered by the run's first metric, worst first (rows without it last)."""
    first = next(iter(doc["metrics"]), None)
    if first is None:
        return list(rows)
    high_is_bad = doc["metrics"][first]["direction"] == "max"

    def key(row: Mapping[str, Any]) -> tuple[int, float]:
        value = row["scores"].get(first)
        if value is None:
            return (1, 0.0)
        return (0, -value if high_is_bad else value)

    return sorted(rows, key=key)


def rows_table(doc: Mapping[str, Any], trace_url: str | None = None) -> str:
    """Every row of a ``ragas`` or ``retrieval`` run: id, stratum, its scores and its trace."""
    names = [n for n in doc["metrics"] if any(n in r["scores"] for r in doc["rows"])]
    traced = doc["kind"] == "ragas" or any(r.get("traceId") for r in doc["rows"])
    head = ["row", "stratum", *(LABELS.get(n, n) for n in names)] + (["trace"] if traced else [])
    body = []
    for r in _worst_first(doc, doc["rows"]):
        cells = [escape(str(r["id"])), escape(str(r.get("stratum", "")))]
        cells += [_fmt(r["scores"].get(n)) for n in names]
        if traced:
            cells.append(trace_cell(r.get("traceId"), trace_url))
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table class=rows><tr>{header}</tr>{''.join(body)}</table>"


def _section(doc: Mapping[str, Any], trace_url: str | None = None) -> str:
    title = (
        f"{doc['kind'].upper()} — agent {doc['agent']}, dataset {doc['dataset']}, "
        f"split {doc['split']}"
    )
    gate = doc["gate"]
    verdict = (
        "<p class=ok>Gate passed</p>"
        if gate["passed"]
        else "<p class=bad>Gate FAILED: " + "; ".join(escape(r) for r in gate["reasons"]) + "</p>"
    )
    items = [
        (name, m["value"], m["threshold"], m["passed"])
        for name, m in doc["metrics"].items()
        if name != "latency_seconds"  # seconds, not a 0..1 score: in the table below
    ]
    out = [
        f"<h2>{escape(title)}</h2>",
        f"<p>created {escape(doc['created'])}</p>",
        verdict,
        "<h3>Metrics against thresholds</h3>",
        bars_svg(items),
        _table(
            ["metric", "value", "threshold", "direction", "rows scored", "failed rows"],
            [
                (n, _fmt(m["value"]), m["threshold"], m["direction"], m["rows"], m["failed_rows"])
                for n, m in doc["metrics"].items()
            ],
        ),
    ]
    if doc["kind"] == "retrieval":
        lat = doc.get("latency") or {}
        out.append(
            "<h3>Latency per call</h3>"
            + _table(
                ["calls", "p50 (ms)", "p99 (ms)", "K"],
                [
                    (
                        lat.get("calls", 0),
                        _ms(lat.get("p50_seconds")),
                        _ms(lat.get("p99_seconds")),
                        (doc.get("config") or {}).get("k", ""),
                    )
                ],
            )
        )
    if doc["kind"] in ("ragas", "retrieval"):
        for stratum, values in sorted(doc.get("per_stratum", {}).items()):
            out.append(f"<h3>Stratum: {escape(stratum)}</h3>")
            out.append(
                bars_svg(
                    [
                        (n, v, doc["metrics"][n]["threshold"], None)
                        for n, v in values.items()
                        if n != "latency_seconds"
                    ]
                )
            )
        if doc.get("rows"):
            out.append(f"<h3>Rows, worst first ({len(doc['rows'])})</h3>")
            out.append(rows_table(doc, trace_url))
        if doc.get("skipped"):
            out.append(f"<h3>Skipped ({len(doc['skipped'])})</h3>")
            out.append(
                _table(
                    ["row", "metric", "reason", "detail"],
                    [(f["row_id"], f["metric"], f["reason"], f["detail"]) for f in doc["skipped"]],
                )
            )
        if doc["failures"]:
            out.append(f"<h3>Failed rows ({len(doc['failures'])})</h3>")
            out.append(
                _table(
                    ["row", "metric", "reason", "detail"],
                    [(f["row_id"], f["metric"], f["reason"], f["detail"]) for f in doc["failures"]],
                )
            )
    else:
        s = doc["summary"]
        out.append("<h3>Per tool</h3>")
        out.append(
            bars_svg([(t, v["tsa"], s["threshold"], None) for t, v in s["per_tool"].items()])
        )
        if s.get("per_stratum"):
            out.append("<h3>Per stratum</h3>")
            out.append(
                bars_svg([(k, v["tsa"], s["threshold"], None) for k, v in s["per_stratum"].items()])
            )
        out.append("<h3>Confusion matrix</h3>")
        out.append(confusion_svg(s["confusion"]))
        wrong = [c for c in doc["cases"] if not c["passed"]]
        out.append(f"<h3>Cases not passed ({len(wrong)})</h3>")
        traced = any(c.get("traceId") for c in doc["cases"])
        head = ["case", "expected", "predicted", "why"] + (["trace"] if traced else [])
        body = []
        for c in wrong:
            cells = [escape(str(x)) for x in (c["id"], c["expected"], c["predicted"])]
            cells.append(escape("; ".join(c["reasons"])))
            if traced:
                cells.append(trace_cell(c.get("traceId"), trace_url))
            body.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
        header = "".join(f"<th>{escape(h)}</th>" for h in head)
        out.append(f"<table><tr>{header}</tr>{''.join(body)}</table>")
    usage = doc.get("usage") or {}
    out.append("<h3>Usage</h3>" + _table(list(usage), [list(usage.values())]))
    return "\n".join(out)


CSS = (
    "body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
    "font-size:13px;text-align:left}.ok{color:#2e7d32;font-weight:bold}"
    ".bad{color:#c62828;font-weight:bold}"
)


def render(
    docs: Sequence[Mapping[str, Any]],
    title: str = "sleuth evaluation report",
    trace_url: str | None = None,
) -> str:
    """The documents as one page; ``trace_url`` (with ``{trace_id}``) links each row's trace."""
    body = "\n<hr>\n".join(_section(d, trace_url) for d in docs)
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>\n{body}\n"
        "</body></html>\n"
    )


def comparison_svg(entries: Sequence[Mapping[str, Any]]) -> str:
    """B − A per metric: a dot at the mean difference and a bar over its confidence interval,
    around a zero line; green when the interval excludes 0 in the better direction, red in the
    worse one, grey when it includes 0. Each metric on its own scale (its largest |bound|)."""
    label_w, half, row = 250, 180, 26
    h = row * len(entries) + 24
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + 2 * half + 150}" '
        f'height="{h}" role="img">'
    ]
    zero = label_w + half
    parts.append(f'<line x1="{zero}" x2="{zero}" y1="2" y2="{h - 4}" stroke="#999"/>')
    for i, e in enumerate(entries):
        y = 8 + i * row
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" '
            f'font-size="12">{escape(e["metric"])}</text>'
        )
        if e["difference"] is None:
            continue
        lo, hi, d = e["low"], e["high"], e["difference"]
        span = max(abs(lo), abs(hi), abs(d)) or 1.0
        x = [zero + v / span * (half - 10) for v in (lo, d, hi)]
        better = (d < 0) if e.get("lower_is_better") else (d > 0)
        color = "#9aa0a6" if lo <= 0 <= hi else ("#2e7d32" if better else "#c62828")
        parts.append(
            f'<line x1="{x[0]:.1f}" x2="{x[2]:.1f}" y1="{y + 9}" y2="{y + 9}" '
            f'stroke="{color}" stroke-width="4"/>'
        )
        parts.append(f'<circle cx="{x[1]:.1f}" cy="{y + 9}" r="5" fill="{color}"/>')
        parts.append(
            f'<text x="{label_w + 2 * half + 6}" y="{y + 13}" font-size="12">'
            f"{d:+.3f} (p {e['p_value']:.4f})</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def render_comparison(doc: Mapping[str, Any], title: str = "sleuth A/B comparison") -> str:
    """The comparison document as one self-contained page."""
    rows = [
        (
            e["metric"],
            e["n"],
            _fmt(e["mean_a"]),
            _fmt(e["mean_b"]),
            "n/a" if e["difference"] is None else f"{e['difference']:+.4f}",
            "n/a" if e["low"] is None else f"[{e['low']:+.4f}, {e['high']:+.4f}]",
            "n/a" if e["p_value"] is None else f"{e['p_value']:.4f}",
        )
        for e in doc["metrics"]
    ]
    warnings = "".join(f"<p class=bad>{escape(w)}</p>" for w in doc["warnings"])
    method = _table(list(doc["method"]), [list(doc["method"].values())])
    body = (
        f"<h2>{escape(doc['of'])}: dataset {escape(str(doc['dataset']))}, split "
        f"{escape(str(doc['split']))}</h2>{warnings}"
        + comparison_svg(doc["metrics"])
        + _table(["metric", "pairs", "A", "B", "B − A", "interval", "p"], rows)
        + "<h3>Method</h3>"
        + method
        + "<h3>Configurations</h3>"
        + _table(
            ["run", "created", "config"],
            [
                ("A", doc["a"]["created"], doc["a"]["config"]),
                ("B", doc["b"]["created"], doc["b"]["config"]),
            ],
        )
    )
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>\n{body}\n</body></html>\n"
    )
