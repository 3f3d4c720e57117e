"""`replay:RUN`: a run id (or a unique prefix of one) named as the file to replay, resolved to
its run's journal. It lives here, above the providers, because finding a run means reading
the project's run folders and batch logs; the replay provider reads only the file it is given."""

from __future__ import annotations

from pathlib import Path

from openprose.providers.base import ProviderConfigError
from openprose.providers.replay import replay_file
from openprose.record.journal import JOURNAL_FILE
from openprose.record.logged_runs import resolve_run
from openprose.record.runstore import AmbiguousRun, RunBusy

__all__ = ["replay_source"]


def replay_source(
    path: Path, project_dir: Path | None = None, *, exclude: Path | None = None
) -> Path:
    """The file to replay: a cassette or journal file, a run folder, or a run id (or a
    unique prefix of one) under `.prose/runs/` of `project_dir` (default: the cwd).

    `exclude` is a run folder that is never a candidate for an id or prefix: the run that
    will replay (a resumed run must not replay itself). A prefix matching several runs is
    an error listing them all, never a guess."""
    path = Path(path)
    if path.exists() or path.is_symlink() or len(path.parts) != 1:
        return replay_file(path)
    try:
        run = resolve_run(
            project_dir or Path.cwd(), path.name, marker=JOURNAL_FILE, exclude=exclude
        )
    except (AmbiguousRun, RunBusy) as error:
        raise ProviderConfigError(f"replay: {error}") from None
    if run is not None:
        return run / JOURNAL_FILE
    return path  # read_cassette reports it missing
