"""The one front door to the engine (`docs/ARCHITECTURE.md`): what a front end — the TUI, `bulkhead -p`, the
sub-commands, an ACP agent, a recovery proxy — may import of `app.engine`. Nothing else of the engine is
imported by `app.ui` or `app.commands` (the import-linter contract "front ends reach the engine through its
front door").

- `app.engine.api` (this module): a session — `SessionApi`, `open_session` and the records it returns
  (`app/engine/api/session.py`). Importing it brings in no engine internals: the TUI's first frame pays only for
  what it draws.
- `app.engine.api.<part>`: the engine's services a front end uses outside a session, one module each, imported
  where they are used (so the TUI does not pay for the command line's and the command line not for the TUI's).
"""

# A session is the front door's default: `app.engine.api` names what `app.engine.api.session` exports.
from app.engine.api.session import *  # noqa: F403
from app.engine.api.session import __all__ as __all__
