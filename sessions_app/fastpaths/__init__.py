"""The shortcuts the turn log's hot path takes around the ORM and DRF, in one place.

Each one does what a plain ORM or DRF call would do, faster, and each has a parity test
against that plain path in tests/sessions_app/test_fastpaths.py (the planned rendering
also in test_turn_batch_parity.py), so a field added to a model or a serializer cannot
silently drift. Only the turn recording services and views use them (import-linter
contract `fastpaths`). The shortcuts, each with its reason below:

1. `rows_insert`: INSERT … RETURNING with fixed SQL, instead of `save()`/`bulk_create`.
2. `rows_copy` (with `rows_next_ids`): COPY for many rows, instead of `bulk_create`.
3. `sessions_select_for_turns`: the session lock read as one fixed statement with its
   cart and whether it holds budget reservations, rows turned into instances with the
   ORM's own converters (`from_db`).
4. `sessions_save_counters`: one fixed UPDATE of the counters the turns moved, instead
   of `save(update_fields=…)` per session.
5. `turn_steps_preloaded`: the steps just written served as the turn's prefetched
   `steps`, instead of a query when the response lists them.
6. `planned_representation`: a serializer's `to_representation`, planned once.
7. `shared_serializer`: one stateless serializer instance per class, instead of one per
   request.
8. `instance_new`: a new model instance from keyword values with the field plan worked
   out once, instead of `Model(**values)` walking the model's fields per call.
"""

from sessions_app.fastpaths.instances import instance_new
from sessions_app.fastpaths.rendering import (
    planned_representation,
    shared_serializer,
    turn_steps_preloaded,
)
from sessions_app.fastpaths.rows import (
    copy_statement,
    insert_statement,
    rows_copy,
    rows_insert,
    rows_next_ids,
)
from sessions_app.fastpaths.sessions import (
    SessionRead,
    save_counters_statement,
    save_one_counters_statement,
    session_lock_statement,
    sessions_save_counters,
    sessions_select_for_turns,
)

__all__ = [
    "SessionRead",
    "copy_statement",
    "insert_statement",
    "instance_new",
    "planned_representation",
    "rows_copy",
    "rows_insert",
    "rows_next_ids",
    "save_counters_statement",
    "save_one_counters_statement",
    "session_lock_statement",
    "sessions_save_counters",
    "sessions_select_for_turns",
    "shared_serializer",
    "turn_steps_preloaded",
]
