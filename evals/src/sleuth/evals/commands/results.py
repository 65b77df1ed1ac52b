"""``sleuth eval report`` and ``sleuth eval compare``: what is done with result files."""

from __future__ import annotations

from sleuth.evals.commands.options import CompareOptions, ReportOptions
from sleuth.evals.commands.outcome import EXIT_GATE, EXIT_OK
from sleuth.evals.compare import compare
from sleuth.evals.report import html, prometheus
from sleuth.evals.report.merge import merge
from sleuth.evals.report.results import read_document, write_document


def run_report(options: ReportOptions) -> int:
    """Render result files again (``--merge``: the shards of one run, merged first); the exit
    code is 1 when any gate failed."""
    outputs = options.outputs
    docs = [read_document(p) for p in options.results]
    if options.merge:
        docs = [merge(docs)]
        if outputs.out:
            write_document(docs[0], outputs.out)
    if outputs.html:
        outputs.html.write_text(html.render(docs, trace_url=outputs.trace_url), encoding="utf-8")
    if outputs.prom:
        outputs.prom.write_text(prometheus.exposition(docs), encoding="utf-8")
    if outputs.pushgateway:
        prometheus.push(docs, outputs.pushgateway)
    failed = [d for d in docs if not d["gate"]["passed"]]
    for d in docs:
        print(
            f"{d['kind']} {d['agent']}/{d['dataset']}/{d['split']}: gate "
            + ("passed" if d["gate"]["passed"] else "FAILED")
        )
    return EXIT_GATE if failed else EXIT_OK


def run_compare(options: CompareOptions) -> int:
    """B − A per metric, paired by row, printed (and written with ``--out`` / ``--html``)."""
    a, b = read_document(options.a), read_document(options.b)
    metrics = list(options.metrics) if options.metrics is not None else None
    doc = compare(
        a,
        b,
        metrics,
        resamples=options.resamples,
        confidence=options.confidence,
        seed=options.seed,
    )
    for warning in doc["warnings"]:
        print(warning)
    print(f"A = {options.a}, B = {options.b}; {doc['of']} on {doc['dataset']}/{doc['split']}")
    for line in doc["lines"]:
        print(line)
    if options.out:
        write_document(doc, options.out)
    if options.html:
        options.html.write_text(html.render_comparison(doc), encoding="utf-8")
    return EXIT_OK
