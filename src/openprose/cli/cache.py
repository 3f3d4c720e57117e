"""``prose cache [--clear] [--json]``: the answer cache of this project's runs
(`[vm] memo = true`, `.prose/memo/`): how many answers it holds, or forget them all."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clear", action="store_true", help="forget every remembered answer")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from openprose.project import runs_home
    from openprose.terminal import printable
    from openprose.vm.memo import MEMO_DIR, AnswerMemo

    memo = AnswerMemo(runs_home() / MEMO_DIR)
    entries = memo.entries()
    size = 0
    for path in entries:
        try:
            size += path.stat().st_size
        except OSError:
            pass  # removed meanwhile
    cleared = memo.clear() if args.clear else 0
    if args.json:
        shown = {"folder": str(memo.folder), "answers": len(entries), "bytes": size}
        print(json.dumps({**shown, "cleared": cleared} if args.clear else shown))
    elif args.clear:
        print(printable(f"cleared {cleared} remembered answer(s) from {memo.folder}"))
    else:
        print(printable(f"{len(entries)} remembered answer(s), {size} bytes, in {memo.folder}"))
        print(
            "(on with `memo = true` under [vm] in prose.toml; `prose cache --clear` forgets them)"
        )
    return 0
