"""Batches: run one program over every case of a data set (`prose batch`, `openprose.batch`).

Modules: `cases` reads the inputs file, `store` keeps the batch folder, `job` turns a case
into a run, `driver` runs a batch with an executor (`in_process` or `on_ray`), `progress`
shows it. Public API: `run_batch`, `resume_batch`, `BatchResult`, `BatchError`.
"""

from openprose.batches.driver import (
    INVALID_LINES,
    BatchError,
    BatchResult,
    BatchStats,
    resume_batch,
    run_batch,
)

__all__ = ["INVALID_LINES", "BatchError", "BatchResult", "BatchStats", "resume_batch", "run_batch"]
