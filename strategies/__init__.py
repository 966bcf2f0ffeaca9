"""Recall strategies (one sub-package per paper) behind a Protocol and a name registry."""
