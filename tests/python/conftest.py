"""conftest.py - shared fixtures of the Python tests: the library, a context, the
algorithm to force, the conformance data, and a summary printed after the run.

Environment (ctest sets the first two):
  CONVFIND_LIB               path of the shared library (libconvfind.so); required.
  CONVFIND_CONFORMANCE_DIR   the ONNX conformance data (default: tests/conformance in
                             this repository); when it is missing the conformance tests
                             fail with a reason that contains "CONFORMANCE DATA MISSING".
  CONVFIND_ALGO              run only this algorithm (convfind_plan_create_with_algorithm)
                             instead of the default plan plus every registered one;
                             problems a forced algorithm reports UNSUPPORTED for are
                             skipped and counted.
  CONVFIND_TEST_THREADS      threads of the test context (default 2, so the work is split).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import convfind_ctypes as cf  # noqa: E402

_SUMMARY_KEY = pytest.StashKey[list]()


def pytest_configure(config):
    config.stash[_SUMMARY_KEY] = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = config.stash.get(_SUMMARY_KEY, [])
    if lines:
        terminalreporter.section("convfind summary")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def summary(pytestconfig):
    """Append lines here to have them printed at the end of the run, passed or not."""
    return pytestconfig.stash[_SUMMARY_KEY]


@pytest.fixture(scope="session")
def lib():
    path = os.environ.get("CONVFIND_LIB")
    if not path:
        pytest.fail("CONVFIND_LIB is not set: point it at libconvfind.so (ctest sets it)")
    if not os.path.exists(path):
        pytest.fail(f"CONVFIND_LIB={path} does not exist")
    return cf.Library(path)


@pytest.fixture(scope="session")
def ctx(lib, tmp_path_factory):
    threads = int(os.environ.get("CONVFIND_TEST_THREADS", "2"))
    db = tmp_path_factory.mktemp("convfind_db") / "decisions.sqlite"
    with lib.context(num_threads=threads, find_policy="heuristic", db_path=str(db)) as c:
        yield c


@pytest.fixture(scope="session")
def algorithms(lib):
    """The plans every case runs with: None is the context's own choice, a name forces
    that algorithm.  CONVFIND_ALGO=NAME runs only NAME; otherwise the default plan and
    every algorithm of the CPU backend, whose context these tests run on, so a newly
    registered one is tested without any change here.  A CUDA-enabled build lists the
    CUDA module's algorithms too; forced on a CPU context they could run nothing (the GPU
    tests cover them)."""
    name = os.environ.get("CONVFIND_ALGO") or None
    if name is None:
        return [None] + [a for a in lib.algorithms() if a.startswith("cpu.")]
    if name not in lib.algorithms():
        pytest.fail(f"CONVFIND_ALGO={name} is not an algorithm of this build "
                    f"(have: {', '.join(lib.algorithms())})")
    return [name]


def conformance_dir():
    """(path of the conformance data folder, whether it exists)."""
    path = os.environ.get("CONVFIND_CONFORMANCE_DIR")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "conformance")
    path = os.path.abspath(path)
    return path, os.path.isdir(path)
