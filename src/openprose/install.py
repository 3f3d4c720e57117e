"""How to install an optional extra, said the way that works where openprose is installed."""

from __future__ import annotations

from pathlib import Path


def install_command(extra: str) -> str:
    """``pip install 'openprose[EXTRA]'``; inside a source checkout (an editable install, where
    that would fetch a release instead) ``pip install -e '.[EXTRA]'`` or the checkout's path."""
    checkout = Path(__file__).resolve().parents[2]  # {checkout}/src/openprose/install.py
    if (checkout / "pyproject.toml").is_file() and (checkout / "src" / "openprose").is_dir():
        where = "." if checkout == Path.cwd().resolve() else str(checkout)
        return f"pip install -e '{where}[{extra}]'"
    return f"pip install 'openprose[{extra}]'"
