"""Retrieval configurations compared on the generated contracts corpus, with significance.

    .venv/bin/python bench/retrieval.py [--documents 2000 --questions 300 --seed 7]
        [--threshold 0.45] [--chunking 400/80] [--workdir DIR]

1. ``sleuth eval synth-corpus`` writes the corpus and its golden set (deterministic for a seed);
2. ``sleuth ingest`` embeds it with the local model into a Qdrant local-mode folder (dense and
   sparse vectors, default chunking 800/150) — kept in ``--workdir`` and reused when the corpus is
   the same, because it is the slow part (the numpy model, about 5 chunks/s on a loaded 2-core
   machine);
3. ``sleuth eval retrieval`` runs each configuration's ToolBinding over the ``dev`` split
   (top K = 5): dense; hybrid (RRF); hybrid + a relevance cut-off (``--threshold``);
4. ``sleuth eval compare`` pairs them: hybrid vs dense, cut-off vs hybrid.

``--chunking SIZE/OVERLAP`` adds the runbook's "review the chunking" action: the corpus ingested a
second time with that chunking (its own Qdrant folder, its ToolBinding's ``chunking`` set to
match), evaluated with hybrid retrieval and compared with hybrid at the default 800/150.
Relevance is by evidence sentence, so the same golden rows score both chunkings.

Prints a markdown table (means, latency p50/p99) and the comparison lines; writes
bench/results/retrieval.json and the result documents next to it. Latency is per call in this
process: embedding the query (local model) + Qdrant local mode + scoring; local mode scores
sparse vectors in Python, so hybrid's latency here is not a Qdrant server's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SLEUTH = [sys.executable, "-m", "sleuth.core.cli"]
COLLECTION = "contracts"
METRICS = ("context_precision_id", "context_recall_id", "mrr", "ndcg")


def _run(args: list[str], log: Path | None = None) -> str:
    proc = subprocess.run([*SLEUTH, *args], capture_output=True, text=True, check=False)
    if log is not None:
        log.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode not in (0, 1):  # 1: a threshold gate missed, the result is still written
        raise SystemExit(f"sleuth {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def _binding(vector: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "ToolBinding",
        "metadata": {"name": "contracts-clauses"},
        "spec": {
            "agentRef": {"name": "contracts"},
            "type": "vector_search",
            "vectorSearch": {
                "embedded": {"claimName": "contracts-qdrant"},
                "collection": COLLECTION,
                "topK": 5,
                **vector,
            },
        },
    }


def _ingest(work: Path, store: Path, chunking: dict[str, int] | None) -> dict[str, float]:
    """Ingest the corpus into ``store`` unless it already holds this corpus at this chunking."""
    marker = store.with_name(store.name + ".ingested")
    digest = hashlib.sha256(json.dumps(chunking).encode())
    for path in sorted((work / "corpus" / "docs").iterdir()):
        digest.update(path.read_bytes())
    if marker.exists() and marker.read_text() == digest.hexdigest():
        return {}
    flags = [] if chunking is None else ["--chunk-size", str(chunking["size"])]
    flags += [] if chunking is None else ["--overlap", str(chunking["overlap"])]
    t = time.perf_counter()
    _run(
        [
            "ingest",
            str(work / "corpus" / "docs"),
            "--collection",
            COLLECTION,
            "--qdrant-path",
            str(store),
            "--recreate",
            "--quiet",
            *flags,
        ],
        work / f"ingest-{store.name}.log",
    )
    marker.write_text(digest.hexdigest())
    return {f"ingest_{store.name}_s": time.perf_counter() - t}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threshold", type=float, default=0.45)
    parser.add_argument("--chunking", help="a second chunking to compare, SIZE/OVERLAP")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    work = args.workdir or Path.home() / ".cache" / "sleuth" / (
        f"bench-retrieval-{args.documents}-{args.questions}-{args.seed}"
    )
    work.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    t = time.perf_counter()
    _run(
        [
            "eval",
            "synth-corpus",
            "--out",
            str(work / "corpus"),
            "--documents",
            str(args.documents),
            "--questions",
            str(args.questions),
            "--seed",
            str(args.seed),
        ]
    )
    timings["generate_s"] = time.perf_counter() - t
    store = work / "qdrant"
    timings.update(_ingest(work, store, None))
    stores = {}
    chunking: dict[str, int] | None = None
    if args.chunking:
        size, overlap = (int(x) for x in args.chunking.split("/"))
        chunking = {"size": size, "overlap": overlap}
        stores["hybrid-chunk"] = work / f"qdrant-{size}-{overlap}"
        timings.update(_ingest(work, stores["hybrid-chunk"], chunking))
    configs = {
        "dense": {},
        "hybrid": {"hybrid": {"fusion": "rrf"}},
        "hybrid-cutoff": {"hybrid": {"fusion": "rrf"}, "scoreThreshold": args.threshold},
    }
    if chunking is not None:
        configs["hybrid-chunk"] = {"hybrid": {"fusion": "rrf"}, "chunking": chunking}
    docs: dict[str, dict[str, Any]] = {}
    for name, knobs in configs.items():
        binding = work / f"{name}.yaml"
        binding.write_text(yaml.safe_dump(_binding(knobs)), encoding="utf-8")
        out = RESULTS / f"retrieval-{name}.json"
        t = time.perf_counter()
        _run(
            [
                "eval",
                "retrieval",
                "--binding",
                str(binding),
                "--golden",
                str(work / "corpus" / "golden.jsonl"),
                "--qdrant-path",
                str(stores.get(name, store)),
                "--split",
                "dev",
                "--dataset",
                "synth-contracts",
                "--out",
                str(out),
                "--no-progress",
            ],
            work / f"{name}.log",
        )
        timings[f"{name}_s"] = time.perf_counter() - t
        docs[name] = json.loads(out.read_text(encoding="utf-8"))
    pairs = [("dense", "hybrid"), ("hybrid", "hybrid-cutoff"), ("dense", "hybrid-cutoff")]
    if chunking is not None:
        pairs.append(("hybrid", "hybrid-chunk"))
    comparisons: dict[str, list[str]] = {}
    for a, b in pairs:
        text = _run(
            [
                "eval",
                "compare",
                str(RESULTS / f"retrieval-{a}.json"),
                str(RESULTS / f"retrieval-{b}.json"),
                "--out",
                str(RESULTS / f"compare-{a}-vs-{b}.json"),
            ]
        )
        comparisons[f"{b} vs {a}"] = [ln for ln in text.splitlines() if ln.startswith("B − A")]

    print("| configuration | precision | recall | MRR | nDCG@5 | p50 ms | p99 ms | rows |")
    print("|---|---|---|---|---|---|---|---|")
    for name, doc in docs.items():
        m, lat = doc["metrics"], doc["latency"]
        cells = " | ".join(f"{m[k]['value']:.3f}" for k in METRICS)
        print(
            f"| {name} | {cells} | {lat['p50_seconds'] * 1000:.0f} | "
            f"{lat['p99_seconds'] * 1000:.0f} | {m['mrr']['rows']} |"
        )
    for title, lines in comparisons.items():
        print(f"\n{title} (B = {title.split(' vs ')[0]}, A = {title.split(' vs ')[1]}):")
        for line in lines:
            print(f"  {line}")
    print("\n" + json.dumps({k: round(v, 1) for k, v in timings.items()}))
    (RESULTS / "retrieval.json").write_text(
        json.dumps(
            {
                "args": {k: str(v) for k, v in vars(args).items()},
                "timings": timings,
                "comparisons": comparisons,
                "means": {
                    n: {k: d["metrics"][k]["value"] for k in d["metrics"]} for n, d in docs.items()
                },
                "latency": {n: d["latency"] for n, d in docs.items()},
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
