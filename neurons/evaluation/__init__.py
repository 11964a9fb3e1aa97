"""The evaluation harness behind `arena eval`: score a policy model on held-out tasks, k samples per task.

``selection`` picks the tasks (pool filter, leak refusal against a training export's manifest),
``settings`` holds what a run does and the fingerprint a resumed run must match, ``records``
owns the run directory (append-only sample and judgment records keyed by ``(task_id, sample)``,
so an interrupted run resumes), ``runner`` runs and judges the samples with the tools
in-process, ``report`` turns records into metrics, ``outputs`` writes them, ``table`` renders
them, and ``compare`` sets two runs side by side with paired intervals. The statistics
themselves are in :mod:`judging.stats`. See ``docs/evaluation.md``.
"""
