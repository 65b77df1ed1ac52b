"""A scoring run's results: written where its options say, summarised, and reported as its part
of an EvalSchedule's status (``--status``)."""

from __future__ import annotations

import sys
from typing import Any

from sleuth.evals import status as st
from sleuth.evals.commands.options import Outputs, StatusOptions
from sleuth.evals.commands.outcome import EXIT_GATE, EXIT_INPUT, EXIT_OK, EXIT_STATUS, publish
from sleuth.evals.report import html, prometheus
from sleuth.evals.report.console import print_summary
from sleuth.evals.report.results import write_document
from sleuth.evals.report.runfolders import ensure_parents, prune_runs
from sleuth.evals.statuswriter import StatusWriter, api_client


class StatusReport:
    """This process's part of a scheduled run, written to ``--status`` (a no-op without it)."""

    def __init__(self, options: StatusOptions, command: st.Kind, shard: str | None) -> None:
        self.options = options
        self.command = command
        self.shard = shard
        self.run_id = options.run_id

    def prepare(self) -> int | None:
        """Before the run: settle its run id and check the EvalSchedule is there (a typo in
        ``--status`` fails in a second, not after an hour of scoring). None: go on."""
        target = self.options.target
        if target is None:
            return None
        if not self.run_id:
            if self.options.expect_parts > 1:
                print(
                    f"sleuth eval: error: --expect-parts {self.options.expect_parts} needs "
                    f"--run-id (or {st.RUN_ID_ENV}), the same for every part of the run",
                    file=sys.stderr,
                )
                return EXIT_INPUT
            self.run_id = "manual-" + st.now_rfc3339().replace(":", "").replace("-", "").lower()
        try:
            StatusWriter(api_client(self.options.kubeconfig), target).read()
        except st.StatusError as exc:
            print(f"sleuth eval: error: EvalSchedule {target}: {exc}", file=sys.stderr)
            return EXIT_STATUS
        return None

    def publish(
        self, code: int, *, doc: dict[str, Any] | None = None, error: str | None = None
    ) -> int:
        """Write this part; ``code`` is the eval's own exit code. A failed write turns a 0 into
        3 and leaves any other code as it is."""
        target = self.options.target
        if target is None or not self.run_id:
            return code
        finished = st.now_rfc3339()
        expected = self.options.expect_parts
        if doc is not None:
            part = st.part_from_document(doc, finished_at=finished)
            run = st.RunContext(self.run_id, expected, doc.get("dataset"), doc.get("split"))
        else:
            part = st.failed_part(self.command, self.shard, error or "failed", finished_at=finished)
            run = st.RunContext(self.run_id, expected)
        try:
            new = StatusWriter(api_client(self.options.kubeconfig), target).write_part(part, run)
        except st.StatusError as exc:
            print(
                f"sleuth eval: error: part {part.name} of run {run.run_id} was not written to "
                f"EvalSchedule {target}: {exc}",
                file=sys.stderr,
            )
            return code or EXIT_STATUS
        progress = new["currentRun"]
        line = (
            f"status: part {part.name} ({part.outcome}) of run {run.run_id} written to "
            f"EvalSchedule {target}: {len(progress['parts'])}/{progress['expectedParts']} parts"
        )
        if new.get("lastRunId") == run.run_id and len(progress["parts"]) >= run.expected_parts:
            line += f"; run {new['lastRunOutcome']}"
        print(line)
        if code == EXIT_GATE and doc is not None and part.outcome == "Succeeded":
            # A scheduled part that scored is a success even when a score misses its threshold:
            # the scores are in the status and the EvalSchedule's PrometheusRules judge them.
            # Failing the pod would make the Job retry the whole run (judge calls on the serving
            # GPUs) and show a failed Job for a run that did its work.
            print("gate: thresholds missed; reported through the EvalSchedule, not the exit code")
            return EXIT_OK
        return code


def emit(doc: dict[str, Any], outputs: Outputs, report: StatusReport | None = None) -> int:
    """Write a run's document where ``outputs`` say, print its summary, report its part; the
    exit code is the gate's."""
    ensure_parents([outputs.out, outputs.prom, outputs.html])
    if outputs.out:
        write_document(doc, outputs.out)
    if outputs.prom:
        outputs.prom.write_text(prometheus.exposition([doc]), encoding="utf-8")
    if outputs.pushgateway:
        prometheus.push([doc], outputs.pushgateway)
    if outputs.html:
        outputs.html.write_text(html.render([doc], trace_url=outputs.trace_url), encoding="utf-8")
    if outputs.keep_runs is not None and outputs.out is not None:
        for folder in prune_runs(outputs.out.parent, outputs.keep_runs):
            print(f"reports: removed {folder.name} (--keep-runs {outputs.keep_runs})")
    print_summary(doc)
    return publish(report, EXIT_OK if doc["gate"]["passed"] else EXIT_GATE, doc=doc)
