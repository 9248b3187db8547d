"""`pip install ./python` needs nothing from a package index: the build backend (build_backend/samplecheck_build.py)
is standard library only. The wheel it builds holds the package and the pytest11 entry point; pip installs it with
--no-index (skipped where this python has no pip)."""
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _backend():
    sys.path.insert(0, os.path.join(ROOT, "build_backend"))
    try:
        import samplecheck_build
        return samplecheck_build
    finally:
        sys.path.pop(0)


def test_the_wheel_holds_the_package_its_metadata_and_the_pytest_plugin(tmp_path):
    backend = _backend()
    assert backend.get_requires_for_build_wheel() == []
    wheel = backend.build_wheel(str(tmp_path))
    assert wheel == "samplecheck-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / wheel) as z:
        names = set(z.namelist())
        assert {"samplecheck/__init__.py", "samplecheck/_relay.py", "samplecheck/pytest_plugin.py",
                "samplecheck-0.1.0.dist-info/RECORD"} <= names
        assert not any("__pycache__" in n for n in names)
        entry = z.read("samplecheck-0.1.0.dist-info/entry_points.txt").decode()
        assert entry == "[pytest11]\nsamplecheck.pytest_plugin = samplecheck.pytest_plugin\n"
        z.extractall(tmp_path / "site")
    done = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, %r); import samplecheck; "
                           "print(samplecheck.__file__)" % str(tmp_path / "site")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0 and str(tmp_path / "site") in done.stdout.decode(), done.stderr


def test_pip_installs_it_offline(tmp_path):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("no pip for %s (Debian: python3-pip)" % sys.executable)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir",
                           "--disable-pip-version-check", "--target", str(tmp_path / "t"), ROOT],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert done.returncode == 0, done.stdout.decode()
    assert (tmp_path / "t" / "samplecheck" / "serving.py").is_file()
