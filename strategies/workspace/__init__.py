"""The `workspace` strategy: TrawMem task-oriented role-adaptive workspaces (paper 002)."""
