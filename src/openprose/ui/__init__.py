"""`prose ui`: a local web page showing the project's runs as they go.

The server (`openprose.ui.server`) reads run folders through the same digest `prose show`
prints (`openprose.record.runview`) and answers approvals through the code `prose approve`
uses; the page is plain HTML, CSS and JavaScript shipped in `static/`. See docs/ui.md.
"""

from openprose.ui.server import PortInUse, UIServer, serve

__all__ = ["PortInUse", "UIServer", "serve"]
