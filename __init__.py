"""trimem: local-first long-term memory for LLM agents, over MCP."""

__version__ = "0.1.0"
