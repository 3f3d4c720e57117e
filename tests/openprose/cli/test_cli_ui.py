"""`prose ui --url-file PATH`: the URL in a file a script waits for (a pipe from `prose ui`
never closes while it serves), the idiom of docs/ui.md run as written."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.docs.doc_blocks import ROOT


def idiom() -> str:
    """The sh block of docs/ui.md that uses --url-file."""
    text = (ROOT / "docs" / "ui.md").read_text(encoding="utf-8")
    block = text.split("```sh\nprose ui --url-file", 1)[1].split("```", 1)[0]
    return "prose ui --url-file" + block


def test_the_docs_idiom_gets_the_url_and_stops_the_server(tmp_path: Path) -> None:
    prose = f"{shlex.quote(sys.executable)} -m openprose.cli"
    script = idiom().replace("prose ui", f"{prose} ui")
    # curl may be missing: the page is fetched by Python, and the URL is kept for the test
    fetch = f"{shlex.quote(sys.executable)} -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)'"
    script = script.replace(
        'curl -s "$url" >/dev/null', f'{fetch} "$url" && echo "$url" > seen.url'
    )
    script += 'wait "$ui"; echo "exit $?"\n'
    done = subprocess.run(
        ["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip().splitlines()[-1] == "exit 0", done.stderr
    url = (tmp_path / "seen.url").read_text().strip()
    assert url.startswith("http://127.0.0.1:") and "/?token=" in url
    assert not (tmp_path / "ui.url").exists()  # removed when the server stopped


def test_the_url_file_is_whole_private_and_removed(tmp_path: Path) -> None:
    runs = tmp_path / ".prose" / "runs" / "20260101-000000-aaaaaa"
    runs.mkdir(parents=True)
    os.mkfifo(runs / "run.json")  # listing it must not wait for a writer
    url_file = tmp_path / "url"
    process = subprocess.Popen(
        [sys.executable, "-m", "openprose.cli", "ui", "--url-file", str(url_file)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not url_file.exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        assert stat.S_IMODE(url_file.stat().st_mode) == 0o600  # the token is a password
        url = url_file.read_text()
        assert url.endswith("\n") and url.count("\n") == 1
        with urllib.request.urlopen(url.strip().replace("/?", "/api/runs?"), timeout=10) as answer:
            assert [r["status"] for r in json.load(answer)] == ["damaged"]
        process.terminate()
        assert process.wait(20) == 0
    finally:
        process.kill()
    assert not url_file.exists()


def test_a_url_file_in_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openprose.cli", "ui", "--url-file", str(tmp_path / "no" / "url")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr
        == f"prose ui: --url-file {tmp_path / 'no' / 'url'}: no folder {tmp_path / 'no'}\n"
    )
