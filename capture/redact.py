"""Secrets out of captured text, before anything from a transcript is written.

A documented pattern set, not a detector library. ``detect-secrets`` 1.5.0 (Yelp, the
best-known one on PyPI) was tried: its last release is 2024-05; it brings ``requests`` and
PyYAML and puts three commands on the user's PATH; its scan of one line reports the secret's
*value* only loosely (``ghp`` for a whole GitHub token, and English words as "high entropy
strings" once its filters are off), so it cannot say which characters to replace; and its
import took 0.19 s of a hook's budget. The patterns below find the span of each value and
nothing else; docs/capture.md lists them.

Each value found is replaced by ``[redacted: KIND]``; the text around it stays as it was, and
the kinds found are returned (counted in the capture's status), never the values. Redacting a
redacted text again changes nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# (kind, pattern). A pattern with a group named "v" replaces only that group (the name or the
# user before it stays readable); one without replaces the whole match.
_SECRET_NAME = (r"(?P<n>[A-Za-z0-9_.-]*(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API[_-]?KEY|APIKEY|"
                r"ACCESS[_-]?KEY|PRIVATE[_-]?KEY|AUTH[_-]?KEY|CLIENT[_-]?SECRET|CREDENTIALS?|"
                r"_KEY)[A-Za-z0-9_.-]*)")
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private-key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)")),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z0-9]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi-token", re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("azure-storage-key", re.compile(r"(?i)AccountKey=(?P<v>[A-Za-z0-9+/=]{40,})")),
    ("password-in-url", re.compile(
        r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@'\"<>]{1,256}:(?P<v>[^\s@/'\"<>]{1,256})@")),
    ("bearer-token", re.compile(r"(?i)\b(?:Bearer|Basic|Token)\s+(?P<v>[A-Za-z0-9._~+/=-]{16,})")),
    # NAME=value, NAME: value, "NAME": "value" (.env, shell, YAML, JSON, TOML) where the name
    # says secret; the value must be one token of at least 6 characters (prose such as
    # "my password is long" has no assignment; "password: hunter2" does)
    ("env-assignment", re.compile(
        rf"(?i)(?<![A-Za-z0-9])[\"']?{_SECRET_NAME}[\"']?\s*(?:=|:)\s*"
        r"(?P<q>[\"']?)(?P<v>(?!\[redacted)[^\s\"'`,;{}()<>]{6,})(?P=q)")),
]
_DONE = re.compile(r"\[redacted: [a-z0-9-]+\]")


@dataclass(frozen=True)
class Redacted:
    text: str
    kinds: Counter = field(default_factory=Counter)


def _env_value_ok(match: re.Match[str]) -> bool:
    """An assignment's value that is a placeholder, a variable or a path is no secret."""
    v, name = match.group("v"), match.group("n")
    if v.isdigit():
        return False
    if not re.search(r"(?i)pass|pwd|secret|private|credential", name):
        # a name that says only *token* or *key* (max_tokens, sort_key): the value must look
        # generated (letters and digits, or long), and a bare *_KEY* name be an env-style one
        if not (re.search(r"\d", v) and re.search(r"[A-Za-z]", v)) and len(v) < 20:
            return False
        if not re.search(r"(?i)token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key", name) \
                and not name.isupper():
            return False
    if v.startswith(("$", "%", "<", "/", "./", "~")) or v.lower() in {
            "none", "null", "true", "false", "required", "optional", "changeme", "redacted",
            "xxxxxx", "******", "string", "secret", "password"}:
        return False
    return not v.endswith((".py", ".json", ".md", ".txt", ".yaml", ".yml", ".env"))


def redact(text: str) -> Redacted:
    """``text`` with every secret value replaced by ``[redacted: KIND]``."""
    kinds: Counter = Counter()
    for kind, pat in PATTERNS:
        if kind == "private-key" and "PRIVATE KEY" not in text:
            continue

        def sub(m: re.Match[str], kind: str = kind, pat: re.Pattern[str] = pat) -> str:
            if kind == "env-assignment" and not _env_value_ok(m):
                return m.group(0)
            if "v" not in pat.groupindex:
                if _DONE.fullmatch(m.group(0)):
                    return m.group(0)
                kinds[kind] += 1
                return f"[redacted: {kind}]"
            start, end = m.span("v")
            kinds[kind] += 1
            base = m.start()
            return m.group(0)[:start - base] + f"[redacted: {kind}]" + m.group(0)[end - base:]

        text = pat.sub(sub, text)
    return Redacted(text=text, kinds=kinds)
