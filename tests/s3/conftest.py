"""A real S3-compatible endpoint for the tests: moto's server mode on 127.0.0.1 (skipped, with
the reason, when moto is not installed: ``pip install "moto[server]"``). LanceDB reaches it
through the standard AWS variables, exactly as a user's shell would set them."""

from __future__ import annotations

import socket
import uuid

import pytest

KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    import logging

    server_mod = pytest.importorskip("moto.server", reason='pip install "moto[server]"')
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
