"""What each ``sleuth eval`` command does with its typed options (parsers: :mod:`sleuth.evals.cli`).

- :mod:`~sleuth.evals.commands.options` — the options of every command (dataclasses);
- :mod:`~sleuth.evals.commands.dispatch` — options → the command, guarded;
- :mod:`~sleuth.evals.commands.outcome` — exit codes, the outputs of a run, its part in an
  EvalSchedule's status;
- :mod:`~sleuth.evals.commands.inputs` — the split guard, the shard and the labels of a run;
- one module per command family: ``tsa``, ``ragas``, ``retrieval``, ``results`` (report,
  compare), ``golden`` (build-golden, synth-corpus).
"""
