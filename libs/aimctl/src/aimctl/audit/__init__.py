"""Audit and replay (docs/design.md#audit-history): read the change events, status reports and
decisions kept in the limits-retention streams, filtered by kind, namespace, name, source and time,
in time order, optionally following new ones; render them as a table or JSON lines; describe one
object.

- :mod:`aimctl.audit.query` — kind names, time bounds, the server-side subject filters
- :mod:`aimctl.audit.history` — :class:`History`, the async reader (ephemeral consumers only)
- :mod:`aimctl.audit.render` — table and JSON output
- :mod:`aimctl.audit.describe` — one object's conditions and history
"""

from aimctl.audit.history import History, Record
from aimctl.audit.query import Query, parse_time, resolve_kind

__all__ = ["History", "Query", "Record", "parse_time", "resolve_kind"]
