"""pytest setup: a fresh compile cache per session (LUMINAL_C_CACHE), so a test sees only
its own cache hits, and the models' module importable."""
import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session", autouse=True)
def _cache(tmp_path_factory):
    d = tmp_path_factory.mktemp("luminal_c_cache")
    os.environ["LUMINAL_C_CACHE"] = str(d)
    yield d
