"""Carrying memory in and out: the versioned JSONL export format, its import, a Markdown
rendering, and importers for files users already hold (the official MCP memory server's
``memory.json``, ChatGPT and Claude conversation exports). See docs/export-format.md."""
