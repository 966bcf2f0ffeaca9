"""Credentials of many kinds, made up for planting in transcripts, and the sentences that carry them.

The values are assembled when this module runs (never written out whole in the repository, so
no scanner mistakes the fixtures for leaks) from a seeded generator: each run plants the same
ones. The capture tests and ``bench/capture.py`` plant them in user messages, assistant replies
and tool results, then look for every value in what was stored, recalled, exported and viewed.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

_ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Planted:
    kind: str        # the kind capture/redact.py should report
    value: str       # the secret itself: must be found nowhere after capture
    sentence: str    # how a person or a tool would show it


def _r(rng: random.Random, n: int, chars: str = _ALNUM) -> str:
    return "".join(rng.choice(chars) for _ in range(n))


def planted(seed: int = 7) -> list[Planted]:
    rng = random.Random(seed)
    up = string.ascii_uppercase + string.digits
    key_body = "\n".join(_r(rng, 64, _ALNUM + "+/") for _ in range(4))
    pem = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + key_body + "\n-----END RSA " + "PRIVATE KEY-----"
    jwt = "eyJ" + _r(rng, 20) + ".eyJ" + _r(rng, 30) + "." + _r(rng, 40)
    items = [
        ("anthropic-key", "sk-" + "ant-api03-" + _r(rng, 40), "my key is {v} please keep it"),
        ("openai-key", "sk-" + "proj-" + _r(rng, 48), "export OPENAI_KEY_VALUE here: {v}"),
        ("aws-access-key", "AKIA" + _r(rng, 16, up), "the access key id {v} is for staging"),
        ("github-token", "ghp" + "_" + _r(rng, 36), "clone with {v} as the password"),
        ("gitlab-token", "glpat" + "-" + _r(rng, 20), "CI uses {v} for the registry"),
        ("slack-token", "xoxb" + "-" + _r(rng, 12, string.digits) + "-" + _r(rng, 24),
         "the bot token {v} posts to #ops"),
        ("slack-webhook", "https://hooks.slack.com/" + "services/T" + _r(rng, 8, up) + "/B"
         + _r(rng, 8, up) + "/" + _r(rng, 24), "alerts go to {v}"),
        ("stripe-key", "sk" + "_live_" + _r(rng, 24), "charge with {v} only in prod"),
        ("google-api-key", "AIza" + _r(rng, 35, _ALNUM + "_-"), "maps key: {v}"),
        ("npm-token", "npm" + "_" + _r(rng, 36), "publish using {v}"),
        ("huggingface-token", "hf" + "_" + _r(rng, 34), "download with {v}"),
        ("jwt", jwt, "the session cookie was {v}"),
        ("private-key", pem, "here is the deploy key:\n{v}\nuse it once"),
        ("password-in-url", _r(rng, 14), "connect to postgres://admin:{v}@db.internal:5432/app"),
        ("env-assignment", _r(rng, 18), "DATABASE_PASSWORD={v}"),
        ("bearer-token", _r(rng, 32), "curl -H 'Authorization: Bearer {v}' https://api.example"),
        ("azure-storage-key", _r(rng, 86, _ALNUM + "+/") + "==",
         "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};EndpointSuffix=x"),
    ]
    return [Planted(kind=k, value=v, sentence=s.format(v=v)) for k, v, s in items]
