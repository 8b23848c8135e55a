"""A failure as a front end shows it: the classified `Failure`, its kinds (payload, transient) and
`explain(failure)`, the sentence that says what happened and what to do (`app.engine.failures`). Used by
the inspector's Requests panel (`app.ui.explain`); the command line's classify/explain may share it."""

from app.engine.failures import PAYLOAD_KINDS, TRANSIENT_KINDS, Failure, explain

__all__ = ["PAYLOAD_KINDS", "TRANSIENT_KINDS", "Failure", "explain"]
