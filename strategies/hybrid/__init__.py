"""``hybrid``: episodic memories + relational tuples with offline consolidation (paper 000)."""
