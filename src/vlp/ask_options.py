"""What `vlp ask`'s command line offers. Kept apart from :mod:`vlp.ask` so that building
the `vlp` parser (every command, `vlp validate` included) does not load the asking
machinery."""

from __future__ import annotations

from vlp.schema import MESSAGE_TYPES

#: Types a model can answer as. A session_context persists a session: not a model's answer.
ASKABLE_TYPES = tuple(t for t in MESSAGE_TYPES if t != "session_context")
MAX_REASKS = 1
