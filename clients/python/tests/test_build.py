"""The package as an index gets it: an sdist built by the backend pyproject.toml names (flit_core,
from Debian 12's flit package), which builds a wheel by itself, as pip builds one from an index's
sdist, typed and licensed. (examples/examples-test.sh python installs the package with pip into a
fresh venv offline and runs the README's handler with it.) And the package's sources are of the
oldest Python it claims."""

from __future__ import annotations

import ast
import email.parser
import re
import subprocess
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]  # clients/python
# Debian's python3, which sees the flit package's flit_core (scripts/deps.sh installs it); the tests
# themselves may run on another Python.
BUILD_PYTHON = "/usr/bin/python3"


def pyproject() -> dict[str, Any]:
    import tomllib  # the tests run on 3.11 or later; the package itself needs 3.9

    return tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))


def hook(source: Path, name: str, out: Path) -> str:
    """Calls the PEP 517 hook NAME (build_sdist, build_wheel) of pyproject.toml's backend in SOURCE,
    as a front-end does; returns the file it made in OUT."""
    backend = pyproject()["build-system"]["build-backend"]
    code = f"import sys, {backend} as b; print(b.{name}(sys.argv[1]))"
    done = subprocess.run([BUILD_PYTHON, "-c", code, str(out)], cwd=source, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"{name} in {source}: {done.stderr}")
    return done.stdout.strip().splitlines()[-1]


class Package(unittest.TestCase):
    def test_the_sdist_ships_the_licence_and_builds_a_typed_wheel(self) -> None:
        project = pyproject()["project"]
        base = f"{project['name']}-{project['version']}"
        out = Path(tempfile.mkdtemp(prefix="jetfan-pybuild."))
        self.addCleanup(lambda: __import__("shutil").rmtree(out, ignore_errors=True))
        licence = (HERE / "LICENSE").read_bytes()

        sdist = out / hook(HERE, "build_sdist", out)
        self.assertEqual(sdist.name, f"{base}.tar.gz")
        with tarfile.open(sdist) as tf:
            member = tf.extractfile(f"{base}/LICENSE")
            self.assertIsNotNone(member, "the sdist ships LICENSE")
            assert member is not None
            self.assertEqual(member.read(), licence)
            tf.extractall(out / "unpacked")
        (out / "wheel").mkdir()
        wheel = out / "wheel" / hook(out / "unpacked" / base, "build_wheel", out / "wheel")
        self.assertEqual(wheel.name, f"{base}-py3-none-any.whl")
        with zipfile.ZipFile(wheel) as zf:
            self.assertIn("jetfan/py.typed", zf.namelist())
            self.assertEqual(zf.read(f"{base}.dist-info/LICENSE"), licence)
            meta = email.parser.Parser().parsestr(zf.read(f"{base}.dist-info/METADATA").decode())
        self.assertEqual((meta["Name"], meta["Version"], meta["Requires-Python"]),
                         (project["name"], project["version"], project["requires-python"]))
        self.assertEqual(meta.get_all("Classifier"), project["classifiers"])


class OldestPython(unittest.TestCase):
    def test_sources_parse_as_the_oldest_python_requires_python_allows(self) -> None:
        match = re.fullmatch(r">=\s*3\.(\d+)", pyproject()["project"]["requires-python"])
        assert match, "requires-python is >=3.N"
        oldest = (3, int(match.group(1)))
        for path in sorted((HERE / "jetfan").glob("*.py")):
            with self.subTest(path.name):
                tree = ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=oldest)
                # Annotations such as list[str] or "X | None" are evaluated on 3.9 without this.
                annotated = any(
                    isinstance(node, ast.AnnAssign)
                    or (isinstance(node, ast.arg) and node.annotation is not None)
                    or (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None)
                    for node in ast.walk(tree)
                )
                future = any(
                    isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(alias.name == "annotations" for alias in node.names)
                    for node in tree.body
                )
                self.assertTrue(future or not annotated, f"{path.name}: from __future__ import annotations")


if __name__ == "__main__":
    unittest.main()
