"""The in-tree build backend (_build/jetfan_build.py): the wheel and the sdist it builds carry the
core metadata of pyproject.toml, every classifier included, whether pyproject.toml is read with
tomllib (Python 3.11+) or with the backend's own reader (the older Pythons requires-python allows,
made here by hiding tomllib); and the package's sources are of the oldest Python it claims."""

from __future__ import annotations

import ast
import base64
import email.parser
import hashlib
import importlib.util
import re
import sys
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator
from unittest import mock

HERE = Path(__file__).resolve().parents[1]  # clients/python


def backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jetfan_build_under_test", HERE / "_build" / "jetfan_build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pyproject() -> dict[str, Any]:
    import tomllib  # the tests run on 3.11 or later; the package itself needs 3.9

    return tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))


def without_tomllib() -> Any:
    """As on Python 3.9 and 3.10: `import tomllib` raises ImportError."""
    return mock.patch.dict(sys.modules, {"tomllib": None})


class Metadata(unittest.TestCase):
    def setUp(self) -> None:
        self.project = pyproject()["project"]
        self.backend = backend()
        self.out = Path(tempfile.mkdtemp(prefix="jetfan-pybuild."))
        self.addCleanup(lambda: __import__("shutil").rmtree(self.out, ignore_errors=True))

    def built(self) -> Iterator[tuple[str, str]]:
        """(what, its METADATA or PKG-INFO text) of a wheel, an sdist and an editable wheel."""
        b = self.backend
        wheel = self.out / b.build_wheel(str(self.out))
        with zipfile.ZipFile(wheel) as zf:
            yield "wheel", zf.read(f"jetfan-{self.project['version']}.dist-info/METADATA").decode()
        sdist = self.out / b.build_sdist(str(self.out))
        with tarfile.open(sdist) as tf:
            member = tf.extractfile(f"jetfan-{self.project['version']}/PKG-INFO")
            assert member is not None
            yield "sdist", member.read().decode()
        editable = self.out / b.build_editable(str(self.out))
        with zipfile.ZipFile(editable) as zf:
            yield "editable", zf.read(f"jetfan-{self.project['version']}.dist-info/METADATA").decode()

    def check(self, text: str) -> None:
        p = self.project
        meta = email.parser.Parser().parsestr(text)
        self.assertEqual(meta["Metadata-Version"], "2.1")
        self.assertEqual(meta["Name"], p["name"])
        self.assertEqual(meta["Version"], p["version"])
        self.assertEqual(meta["Summary"], p["description"])
        self.assertEqual(meta["Requires-Python"], p["requires-python"])
        self.assertTrue(p["classifiers"])
        self.assertEqual(meta.get_all("Classifier"), p["classifiers"])  # all of them, in order
        if "license" in p:
            self.assertEqual(meta["License"], p["license"].get("text"))
        else:
            self.assertIsNone(meta["License"])
        self.assertEqual(meta["Keywords"], ",".join(p["keywords"]))
        self.assertEqual(meta.get_all("Project-URL"), [f"{k}, {v}" for k, v in p["urls"].items()])
        self.assertEqual(meta["Description-Content-Type"], "text/markdown")
        self.assertEqual(meta.get_payload(), (HERE / "README.md").read_text(encoding="utf-8"))

    def test_every_artifact_has_every_classifier_and_the_core_fields(self) -> None:
        for what, text in self.built():
            with self.subTest(what):
                self.check(text)

    def test_the_same_metadata_without_tomllib_as_before_python_3_11(self) -> None:
        with_tomllib = dict(self.built())
        with without_tomllib():
            self.backend = backend()
            self.assertIsNone(sys.modules["tomllib"])
            without = dict(self.built())
        for what, text in without.items():
            with self.subTest(what):
                self.check(text)
                self.assertEqual(text, with_tomllib[what])

    def test_the_wheel_holds_the_package_typed_with_a_valid_record(self) -> None:
        name = self.backend.build_wheel(str(self.out))
        self.assertEqual(name, f"jetfan-{self.project['version']}-py3-none-any.whl")
        with zipfile.ZipFile(self.out / name) as zf:
            names = set(zf.namelist())
            sources = {f.relative_to(HERE).as_posix() for f in (HERE / "jetfan").glob("*.py")}
            self.assertLessEqual(sources | {"jetfan/py.typed"}, names)
            record = zf.read(f"jetfan-{self.project['version']}.dist-info/RECORD").decode().splitlines()
            for line in record:
                path, digest, size = line.rsplit(",", 2)
                if path.endswith("/RECORD"):
                    continue
                data = zf.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), (f"sha256={want}", len(data)), path)

    def test_a_field_the_backend_does_not_write_is_refused_not_dropped(self) -> None:
        text = (HERE / "pyproject.toml").read_text(encoding="utf-8") + '\n[project.scripts]\njetfan-x = "jetfan:x"\n'
        (self.out / "pyproject.toml").write_text(text, encoding="utf-8")
        for hide in (False, True):
            with self.subTest(without_tomllib=hide):
                with without_tomllib() if hide else mock.patch.dict(sys.modules, {}):
                    b = backend()
                    b.HERE = self.out  # the project directory it reads
                    with self.assertRaisesRegex(ValueError, "scripts"):
                        b._metadata()


class Publishable(unittest.TestCase):
    """What a package index needs: the licence (Apache-2.0, the repository's) said and shipped, where
    the project lives, and the version every jetfan package shares (the repository's VERSION)."""

    def setUp(self) -> None:
        self.project = pyproject()["project"]
        self.out = Path(tempfile.mkdtemp(prefix="jetfan-pybuild."))
        self.addCleanup(lambda: __import__("shutil").rmtree(self.out, ignore_errors=True))

    def test_the_licence_is_apache_2_0_in_the_metadata_and_in_both_artifacts(self) -> None:
        self.assertEqual(self.project["license"], {"text": "Apache-2.0"})
        self.assertIn("License :: OSI Approved :: Apache Software License", self.project["classifiers"])
        licence = (HERE.parents[1] / "LICENSE").read_bytes()
        self.assertEqual((HERE / "LICENSE").read_bytes(), licence, "clients/python/LICENSE is the repository's LICENSE")
        b = backend()
        base = f"jetfan-{self.project['version']}"
        with zipfile.ZipFile(self.out / b.build_wheel(str(self.out))) as zf:
            self.assertEqual(zf.read(f"{base}.dist-info/LICENSE"), licence)
            self.assertEqual(email.parser.Parser().parsestr(zf.read(f"{base}.dist-info/METADATA").decode())["License"],
                             "Apache-2.0")
        with tarfile.open(self.out / b.build_sdist(str(self.out))) as tf:
            member = tf.extractfile(f"{base}/LICENSE")
            assert member is not None
            self.assertEqual(member.read(), licence)
            # The sdist builds a wheel by itself, as pip builds one from an index's sdist.
            tf.extractall(self.out / "unpacked")
        spec = importlib.util.spec_from_file_location("jetfan_build_from_sdist", self.out / "unpacked" / base / "_build" / "jetfan_build.py")
        assert spec and spec.loader
        rebuilt = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rebuilt)
        (self.out / "wheel").mkdir()
        self.assertEqual(rebuilt.build_wheel(str(self.out / "wheel")), f"{base}-py3-none-any.whl")

    def test_the_urls_name_the_source_and_the_issues(self) -> None:
        urls = self.project["urls"]
        for label in ("Homepage", "Source", "Issues", "Changelog"):
            self.assertTrue(urls.get(label, "").startswith("https://"), label)

    def test_the_version_is_the_repository_version(self) -> None:
        version = (HERE.parents[1] / "VERSION").read_text(encoding="utf-8").strip()
        self.assertEqual(self.project["version"], version, "pyproject.toml's version is VERSION's")
        init = (HERE / "jetfan" / "__init__.py").read_text(encoding="utf-8")
        self.assertIn(f'__version__ = "{version}"', init, "jetfan.__version__ is VERSION's")


class TomlSubset(unittest.TestCase):
    """The backend's reader for Python < 3.11 reads what tomllib reads, or refuses."""

    def test_pyproject_reads_as_with_tomllib(self) -> None:
        self.assertEqual(backend().parse_toml_subset((HERE / "pyproject.toml").read_text(encoding="utf-8")), pyproject())

    def test_what_a_pyproject_may_grow_into(self) -> None:
        import tomllib

        text = '''# a comment
[build-system]
requires = []  # none
[project]
name = "jetfan"
"version" = '0.2.0'
description = "tab\\there, \\"quoted\\", \\u00e9"
classifiers = [
    "Programming Language :: Python :: 3",  # the first
    'Framework :: AsyncIO',
    # a comment line inside
    "Typing :: Typed",
]
keywords = ["nats", "jetstream",]
license = { text = "MIT" }
dependencies = []
[project.urls]
Source = "https://example.org/jetfan"
[tool.x]
n = 12_000
ok = true
dotted.key = -3
'''
        self.assertEqual(backend().parse_toml_subset(text), tomllib.loads(text))

    def test_what_it_cannot_read_is_an_error(self) -> None:
        parse = backend().parse_toml_subset
        for text in ('a = """x"""', "[[t]]\na = 1", "a = 1979-05-27", "a = 1.5", 'a = "x" b', "a = 1\na = 2", 'a = "open'):
            with self.subTest(text), self.assertRaises(ValueError):
                parse(text)


class OldestPython(unittest.TestCase):
    def test_sources_parse_as_the_oldest_python_requires_python_allows(self) -> None:
        match = re.fullmatch(r">=\s*3\.(\d+)", pyproject()["project"]["requires-python"])
        assert match, "requires-python is >=3.N"
        oldest = (3, int(match.group(1)))
        files = [*sorted((HERE / "jetfan").glob("*.py")), HERE / "_build" / "jetfan_build.py"]
        for path in files:
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
