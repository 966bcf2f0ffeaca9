"""A real S3-compatible endpoint for the tests: moto's server mode on 127.0.0.1 (skipped, with
the reason, when moto is not installed: ``pip install "moto[server]"``), its conditional puts
atomic as S3's are (``bench/moto_s3.py``, which the benchmarks use too). LanceDB reaches it
through the standard AWS variables, exactly as a user's shell would set them."""

from __future__ import annotations

import uuid

import pytest

from trimem.bench.moto_s3 import KEYS


@pytest.fixture(scope="session")
def s3_endpoint():
    pytest.importorskip("moto.server", reason='pip install "moto[server]"')
    from trimem.bench.moto_s3 import MotoS3

    with MotoS3() as srv:
        yield srv.endpoint


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
