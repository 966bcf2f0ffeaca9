"""Carrying memory in and out: the versioned JSONL export format, its import, a Markdown
rendering, and importers for files users already hold (the official MCP memory server's
``memory.json``, ChatGPT and Claude conversation exports). See docs/export-format.md."""

# the kinds of other tools' files `trimem import --from` reads (transfer/foreign.py); here, so
# that the CLI can list them without importing the format models on every command's start
FOREIGN = ("memory-json", "chatgpt", "claude")
