"""The S3 double keeps S3's promise that Lance's commits rely on: of several concurrent
``PutObject`` calls with ``If-None-Match: *`` on one key, exactly one succeeds and the others get
412. moto alone checks and then writes in two steps (bench/moto_s3.atomic_conditional_puts); the check
here widens that gap, so without the fix more than one writer wins (checked: all four, in the
first trial)."""

from __future__ import annotations

import threading
import time



def _race(clients: list, bucket: str, key: str) -> tuple[list[int], list[str]]:
    """Every client puts ``key`` with ``If-None-Match: *`` at once: (winners, refusal codes)."""
    from botocore.exceptions import ClientError

    won: list[int] = []
    refused: list[str] = []
    start = threading.Barrier(len(clients))

    def put(i: int) -> None:
        start.wait()
        try:
            clients[i].put_object(Bucket=bucket, Key=key, Body=f"writer {i}".encode(),
                                  IfNoneMatch="*")
            won.append(i)
        except ClientError as exc:
            refused.append(exc.response["Error"]["Code"])

    threads = [threading.Thread(target=put, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, refused


def test_one_conditional_put_of_a_key_wins(s3_env, monkeypatch):
    import boto3
    from botocore.config import Config
    from moto.s3.responses import S3Response

    checksum = S3Response._get_checksum

    def slow_checksum(self, *args, **kwargs):   # runs between moto's existence check and write
        time.sleep(0.05)
        return checksum(self, *args, **kwargs)

    monkeypatch.setattr(S3Response, "_get_checksum", slow_checksum)
    clients = [boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT"], aws_access_key_id="testing",
                            aws_secret_access_key="testing", region_name="us-east-1",
                            config=Config(retries={"max_attempts": 1})) for _ in range(4)]
    for trial in range(3):
        key = f"_versions/{trial}.manifest"
        won, refused = _race(clients, s3_env["bucket"], key)
        assert len(won) == 1, (trial, won, refused)
        assert refused == ["PreconditionFailed"] * (len(clients) - 1)
        body = clients[0].get_object(Bucket=s3_env["bucket"], Key=key)["Body"].read()
        assert body == f"writer {won[0]}".encode()          # the winner's bytes, not a later one's
