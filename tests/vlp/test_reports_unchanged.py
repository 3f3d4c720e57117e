"""`vlp validate` reports stay byte-identical to those of the code before the issue-11 fast
path, on generated corpora: valid messages of every shape, invalid and broken lines,
threads full of cross-message problems and correction chains (tests/vlp/corpora.py).

The digests in golden_reports.json were taken from that code; a change that alters any
report, its exit code or its line count fails here. `python -m tests.vlp.corpora` prints
the digests of the current code, for a deliberate change of output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.vlp.corpora import CORPORA, VARIANTS, chunked_report, report_digest, run_cli

GOLDEN = json.loads(Path(__file__).with_name("golden_reports.json").read_text())


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_reports_are_those_of_before(
    corpus: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.ndjson").write_bytes(CORPORA[corpus]())
    for variant, argv in VARIANTS.items():
        assert report_digest(*run_cli(argv)) == GOLDEN[f"{corpus}/{variant}"], variant
    assert report_digest(0, chunked_report("corpus.ndjson")) == GOLDEN[f"{corpus}/chunked"]
