"""A local S3 double for the object-storage benchmarks and tests: moto's server mode on 127.0.0.1,
with conditional writes made atomic as S3's are (needs ``pip install "moto[server]"``).

LanceDB reaches it through the standard AWS variables (:func:`env_for`), exactly as a user's
shell would set them for an S3-compatible store."""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}

_PUT_LOCK = threading.RLock()
_ATOMIC = False   # moto's S3Response patched in this process


def atomic_conditional_puts() -> None:
    """Make moto's conditional writes atomic, as S3's are.

    moto 5.2 checks ``If-None-Match: *`` (does the key exist?) and then writes, in two steps of
    a request thread with nothing held between them, so two concurrent puts of one key can both
    succeed. Lance commits a table version by putting its manifest with that header; with the
    race open, two processes committing the same version both "win" and one acknowledged write
    vanishes (seen in CI: 115 of 120 rows). AWS S3 lets exactly one conditional put win, so the
    double serialises PutObject and the POST that completes a multipart upload. Hand-written:
    moto has no option for it."""
    from moto.s3.responses import S3Response

    global _ATOMIC
    with _PUT_LOCK:
        if _ATOMIC:
            return
        for name in ("put_object", "_key_response_post"):
            original = getattr(S3Response, name)

            def serialised(self, *args, _original=original, **kwargs):
                with _PUT_LOCK:
                    return _original(self, *args, **kwargs)

            setattr(S3Response, name, serialised)
        _ATOMIC = True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoS3:
    """moto's threaded server on a free loopback port, puts atomic; ``endpoint`` once started."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        atomic_conditional_puts()
        logging.getLogger("werkzeug").setLevel(logging.WARNING)   # one line per request otherwise
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._srv = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)

    def __enter__(self) -> MotoS3:
        self._srv.start()
        return self

    def __exit__(self, *exc) -> None:
        self._srv.stop()

    def client(self, **config: Any):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing", region_name="us-east-1", **config)

    def env_for(self) -> dict[str, str]:
        """The variables a trimem process needs to reach this endpoint."""
        return dict(KEYS, AWS_ENDPOINT=self.endpoint)

    def probe_conditional(self, bucket: str) -> str:
        """Does the endpoint refuse an overwrite with ``If-None-Match: *``?"""
        s3 = self.client()
        s3.put_object(Bucket=bucket, Key="probe", Body=b"1")
        try:
            s3.put_object(Bucket=bucket, Key="probe", Body=b"2", IfNoneMatch="*")
        except s3.exceptions.ClientError as exc:
            return f"refused ({exc.response['Error']['Code']})"
        finally:
            s3.delete_object(Bucket=bucket, Key="probe")
        return "overwrite allowed (conditional put NOT honoured)"
