"""The numerical solver tests, rerun under several OpenBLAS kernel families (issue 38).

OpenBLAS picks its kernels by CPU, so a float from LP/MILP/nashpy/numpy can differ in its last
bits from one machine to the next; a test that depends on those bits passes on one CPU and fails
on another (nashpy's support enumeration found no equilibrium in two games under SkylakeX). This
file reruns the solver test files in subprocesses with OPENBLAS_CORETYPE set to each family this
CPU can execute but did not pick, and checks from inside each run (threadpoolctl) that OpenBLAS
really used it. Only the subprocesses get the variable; the rest of the suite, these solver tests
included, runs on the detected kernels.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The tests whose numbers come from LP/MILP (HiGHS), scipy.optimize (SLSQP), Qhull, nashpy or
#: numpy's linear algebra: every meta-solver, and one PSRO run that drives them on a real
#: meta-game (about a minute per kernel family on 2 cores). The other solver tests (CFR,
#: metrics) run OpenSpiel's C++ and scipy.stats, which do not call BLAS.
SOLVER_TESTS = [
    "tests/solvers/test_meta_solvers.py",
    "tests/runs/test_psro_cli.py::test_rd_meta_strategy_far_from_equilibrium_is_not_converged",
]

#: OPENBLAS_CORETYPE value -> the CPU flag it needs (None: every x86-64 CPU).
FAMILIES = {"Prescott": None, "Haswell": "avx2", "SkylakeX": "avx512f"}

#: The names threadpoolctl reports for each family. numpy's and scipy's OpenBLAS are built
#: without the oldest targets, which they serve with the Prescott kernels under the first
#: alias's name (OPENBLAS_VERBOSE=2 prints "Core: Katmai" for OPENBLAS_CORETYPE=Prescott).
REPORTED = {"Prescott": {"prescott", "katmai"}, "Haswell": {"haswell"}, "SkylakeX": {"skylakex"}}

if platform.machine().lower() not in {"x86_64", "amd64"}:
    pytest.skip(f"OpenBLAS kernel families are checked on x86-64 only; this machine is "
                f"{platform.machine()}", allow_module_level=True)


def _cpu_flags() -> set[str] | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _run_solver_tests(tmp_path: Path, coretype: str | None) -> list[dict]:
    """Run SOLVER_TESTS in a fresh interpreter under `coretype` (None: OpenBLAS's own pick);
    return the BLAS libraries that process loaded, as the blas_report plugin saw them."""
    report = tmp_path / "blas.json"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    env["GTSTEER_BLAS_REPORT"] = str(report)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "tests"), str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "blas_report", "-p",
         "no:cacheprovider", "-m", "not slow", *SOLVER_TESTS],
        check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (f"solver tests fail under OPENBLAS_CORETYPE={coretype}:\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return json.loads(report.read_text())


def _openblas(libs: list[dict], package: str) -> dict | None:
    """The OpenBLAS that `package` (numpy or scipy) bundles, if the process loaded it."""
    for lib in libs:
        if lib["internal_api"] == "openblas" and package in Path(lib["filepath"]).parent.name:
            return lib
    return None


def _detected_architecture() -> str | None:
    """The kernels numpy's OpenBLAS picked in this process, when nothing forced them."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return None
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_info

    lib = _openblas(threadpool_info(), "numpy")
    return None if lib is None else lib.get("architecture")


def test_the_suite_runs_the_solver_tests_on_the_detected_kernels() -> None:
    """The detected kernels need no subprocess: the suite itself runs SOLVER_TESTS on them (so
    each family test below skips that family). This keeps that true: every entry names a test
    file, and a test in it, that the suite collects."""
    for entry in SOLVER_TESTS:
        path, _, name = entry.partition("::")
        text = (ROOT / path).read_text(encoding="utf-8")
        assert Path(path).name.startswith("test_") and (not name or f"def {name}(" in text), entry


@pytest.mark.parametrize("family", list(FAMILIES))
def test_solver_tests_pass_under_each_kernel_family(tmp_path: Path, family: str) -> None:
    flag = FAMILIES[family]
    flags = _cpu_flags()
    if flag is not None and flags is None:
        pytest.skip(f"no /proc/cpuinfo to tell whether this CPU has {flag} for {family}")
    if flag is not None and flag not in flags:
        pytest.skip(f"this CPU has no {flag}, so OpenBLAS's {family} kernels cannot run here")
    detected = _detected_architecture()
    if detected is not None and detected.lower() in REPORTED[family]:
        pytest.skip(f"OpenBLAS's detected kernels here are {detected}: the suite's own run "
                    f"of the solver tests is that family's")
    libs = _run_solver_tests(tmp_path, family)
    numpy_blas = _openblas(libs, "numpy")
    if numpy_blas is None:
        pytest.skip(f"numpy does not use OpenBLAS here: {libs}")
    for lib in (numpy_blas, _openblas(libs, "scipy")):
        if lib is not None:  # a core OpenBLAS does not know falls back to the detected one
            assert str(lib["architecture"]).lower() in REPORTED[family], (family, lib)
