"""A real S3-compatible endpoint for the tests: moto's server mode on 127.0.0.1 (skipped, with
the reason, when moto is not installed: ``pip install "moto[server]"``). LanceDB reaches it
through the standard AWS variables, exactly as a user's shell would set them."""

from __future__ import annotations

import socket
import threading
import uuid

import pytest

KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_PUT_LOCK = threading.RLock()


_ATOMIC = False   # moto's S3Response patched in this process


def atomic_conditional_puts() -> None:
    """Make moto's conditional writes atomic, as S3's are.

    moto 5.2 checks ``If-None-Match: *`` (does the key exist?) and then writes, in two steps of
    a request thread with nothing held between them, so two concurrent puts of one key can both
    succeed. Lance commits a table version by putting its manifest with that header; with the
    race open, two processes committing the same version both "win" and one acknowledged write
    vanishes (seen in CI: 115 of 120 rows). AWS S3 lets exactly one conditional put win, so the
    double serialises PutObject and the POST that completes a multipart upload."""
    from moto.s3.responses import S3Response

    global _ATOMIC
    if _ATOMIC:
        return
    for name in ("put_object", "_key_response_post"):
        original = getattr(S3Response, name)

        def serialised(self, *args, _original=original, **kwargs):
            with _PUT_LOCK:
                return _original(self, *args, **kwargs)

        setattr(S3Response, name, serialised)
    _ATOMIC = True


@pytest.fixture(scope="session")
def s3_endpoint():
    import logging

    server_mod = pytest.importorskip("moto.server", reason='pip install "moto[server]"')
    atomic_conditional_puts()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)   # one line per request otherwise
    port = _free_port()
    srv = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    srv.start()
    yield f"http://127.0.0.1:{port}"
    srv.stop()


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch) -> dict:
    """A fresh bucket; the environment a trimem process needs to use it."""
    import boto3

    bucket = f"trimem-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket=bucket)
    env = dict(KEYS, AWS_ENDPOINT=s3_endpoint, TRIMEM_HOME=f"s3://{bucket}/trimem")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env | {"bucket": bucket}
