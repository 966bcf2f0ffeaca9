"""The store imports lancedb with the REST namespace client's validators deferred (lance.py)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import trimem.storage.db
import pydantic
from pydantic._internal import _config
import lance_namespace_urllib3_client.models as m

print(m.DescribeTableRequest.__pydantic_complete__)            # deferred by the import
print(m.DescribeTableRequest.model_validate({"id": ["a"]}).id)  # and built when used
print(_config.config_defaults["defer_build"])                  # the default is put back

class Later(pydantic.BaseModel):
    x: int

print(Later.__pydantic_complete__)                              # later models build at once
"""


def test_namespace_client_validators_wait_for_first_use_and_the_default_is_restored():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.split() == ["False", "['a']", "False", "True"], out.stdout + out.stderr


def test_the_block_restores_the_default_when_the_import_fails():
    from pydantic._internal import _config

    from trimem.storage.lance import deferred_validators

    try:
        with deferred_validators():
            assert _config.config_defaults.get("defer_build") is True
            raise ImportError("a failing import")
    except ImportError:
        pass
    assert _config.config_defaults.get("defer_build") is False
