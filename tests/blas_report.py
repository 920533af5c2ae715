"""A pytest plugin for tests/project/test_blas_kernels.py: after the session, write which OpenBLAS
kernels the process really ran (threadpoolctl's view of every loaded BLAS) to the JSON file
named by GTSTEER_BLAS_REPORT. Loaded with `-p blas_report`; does nothing without the variable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("GTSTEER_BLAS_REPORT")
    if not path:
        return
    import numpy  # noqa: F401  (numpy and scipy each load their own OpenBLAS)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    keys = ("internal_api", "filepath", "architecture", "version")
    Path(path).write_text(json.dumps([{k: info.get(k) for k in keys}
                                      for info in threadpool_info()]))
