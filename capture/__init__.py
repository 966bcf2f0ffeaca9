"""Capture through the host's own hooks: the conversation a host keeps on disk becomes memory
without the model calling ``remember`` (``trimem hook``), and a new session starts with a
budgeted memory of its project. Sits between ``server/`` and ``tools/``, like ``transfer/``."""

# the agent CLIs whose local session logs `trimem import --from HOST` reads (capture/agentlog.py);
# here, so that the CLI can list them without importing a reader on every command's start
AGENT_LOGS = ("codex", "gemini")
