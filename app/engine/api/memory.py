"""Memory and instructions through the front door (`/memory`, `/memory review`): the instruction files in the
system prompt (`Instructions`, each an `InstructionFile`) and a fact the memory worker suggests (`Fact`),
answered with `UiSession.accept_fact` / `reject_fact`. Frozen records of the engine, named here for a front end.
"""

from app.engine.instructions import InstructionFile, Instructions
from app.engine.memory.journal import Fact

__all__ = ["Fact", "InstructionFile", "Instructions"]
