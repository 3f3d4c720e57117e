"""``prose answer RUN [ID] TEXT``: answer a waiting run's question (an `ask` statement); an
option may be chosen by its number or its text. ``prose resume RUN`` then continues it."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "%(prog)s [-h] [-q] [-v] RUN [ID] TEXT"
    parser.add_argument("run_ref", metavar="RUN", help="run id (or unique prefix) or run folder")
    parser.add_argument(
        "words",
        nargs="+",
        metavar="TEXT",
        help="the question's id (see `prose show`; needed only when several wait) and the "
        "answer: its text, or an option's number",
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from openprose.project import runs_home
    from openprose.record.logged_runs import resolve_run
    from openprose.record.runstore import RUNS_DIR, AmbiguousRun, DamagedRun, RunBusy
    from openprose.session.answers import answer_question
    from openprose.terminal import neutralise, one_line
    from openprose.vm.questions import AnswerError
    from openprose.vm.replies import pending_questions

    home = runs_home()  # where `prose resume` and `show` look too
    try:
        run_dir = resolve_run(home, args.run_ref)
        if run_dir is None:
            print(f"prose: no run {args.run_ref!r} under {home / RUNS_DIR}", file=sys.stderr)
            return 2
        question_id, text = _split(args.words, {q.id for q in pending_questions(run_dir)})
        answered = answer_question(run_dir, text, question_id)
    except (AmbiguousRun, DamagedRun, RunBusy, AnswerError) as error:
        print(f"prose: {error}", file=sys.stderr)
        return 2
    said = f"answered {answered['id']}: {one_line(answered['question'])} -> {answered['answer']!r}"
    print(neutralise(said))
    print(f"continue with: prose resume {run_dir.name}")
    return 0


def _split(words: list[str], waiting: set[str]) -> tuple[str | None, str]:
    """`[ID] TEXT`: the first word is an id when more follow and it names a waiting
    question; the rest is the answer (words unquoted are joined with spaces)."""
    if len(words) > 1 and words[0] in waiting:
        return words[0], " ".join(words[1:])
    return None, " ".join(words)
