"""Text from models, input files and run folders, made safe to print on a terminal: the
function the four command lines share (`cliconventions.terminal`), under openprose's name."""

from __future__ import annotations

from cliconventions.terminal import neutralise, one_line, printable

__all__ = ["neutralise", "one_line", "printable"]
