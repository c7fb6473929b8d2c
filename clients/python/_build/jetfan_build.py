"""A PEP 517 build backend for the jetfan package that needs nothing but the standard library, so
`pip install ./clients/python` works without a network (pip's build isolation would otherwise fetch
setuptools from PyPI). It builds a pure-Python wheel (PEP 427) of the jetfan/ package, an sdist,
and an editable wheel (PEP 660) that points at this directory; each carries LICENSE (in the wheel,
as dist-info/LICENSE).

The core metadata (METADATA, PKG-INFO) comes from pyproject.toml's [project], read with tomllib, or
on Python < 3.11 (requires-python allows 3.9) with the small TOML reader below: the same fields on
every version, classifiers and all; a field or a construct it does not handle is an error, not a
field left out."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent.parent  # clients/python
PACKAGE = "jetfan"


def _project() -> dict[str, Any]:
    text = (HERE / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # older (the package supports 3.9): the part of TOML that pyproject.toml uses
        return parse_toml_subset(text).get("project", {})
    return tomllib.loads(text)["project"]


# --- A TOML subset, for Python < 3.11 (no tomllib): tables ([a.b]), key = value with bare or quoted
# keys, and values that are strings (basic and literal, one line), integers, booleans, arrays (over
# several lines, with comments and a trailing comma) and inline tables. Anything else is a
# ValueError, never silently left out: a field that went missing would vanish from the metadata.

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_INTEGER = re.compile(r"[+-]?[0-9](?:_?[0-9])*")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def fail(self, what: str) -> ValueError:
        line = self.text.count("\n", 0, self.pos) + 1
        return ValueError(f"pyproject.toml line {line}: {what} (jetfan_build reads a TOML subset on Python < 3.11)")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def blank(self, newlines: bool) -> None:
        """Skips spaces and tabs, and with `newlines` line ends and comments too."""
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in " \t" or (newlines and c in "\r\n"):
                self.pos += 1
            elif newlines and c == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            else:
                return

    def end_of_line(self) -> None:
        self.blank(False)
        if self.peek() == "#":
            end = self.text.find("\n", self.pos)
            self.pos = len(self.text) if end < 0 else end
        if self.peek() not in ("", "\n", "\r"):
            raise self.fail(f"unexpected {self.peek()!r} after a value")

    def key(self) -> list[str]:
        parts = []
        while True:
            self.blank(False)
            c = self.peek()
            if c in "\"'":
                parts.append(self.string())
            else:
                match = _BARE_KEY.match(self.text, self.pos)
                if not match:
                    raise self.fail("a key expected")
                parts.append(match.group())
                self.pos = match.end()
            self.blank(False)
            if self.peek() != ".":
                return parts
            self.pos += 1

    def string(self) -> str:
        quote = self.peek()
        if self.text.startswith(quote * 3, self.pos):
            raise self.fail("multi-line strings are not supported")
        self.pos += 1
        out = []
        while True:
            c = self.peek()
            if c in ("", "\n"):
                raise self.fail("unterminated string")
            self.pos += 1
            if c == quote:
                return "".join(out)
            if c == "\\" and quote == '"':
                e = self.peek()
                self.pos += 1
                if e in _ESCAPES:
                    out.append(_ESCAPES[e])
                elif e in "uU":
                    width = 4 if e == "u" else 8
                    digits = self.text[self.pos : self.pos + width]
                    if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
                        raise self.fail("bad unicode escape")
                    out.append(chr(int(digits, 16)))
                    self.pos += width
                else:
                    raise self.fail(f"unknown escape \\{e}")
            else:
                out.append(c)

    def value(self) -> Any:
        self.blank(False)
        c = self.peek()
        if c in "\"'":
            return self.string()
        if c == "[":
            self.pos += 1
            items = []
            while True:
                self.blank(True)
                if self.peek() == "]":
                    self.pos += 1
                    return items
                items.append(self.value())
                self.blank(True)
                if self.peek() == ",":
                    self.pos += 1
                elif self.peek() != "]":
                    raise self.fail("',' or ']' expected in an array")
        if c == "{":
            self.pos += 1
            table: dict[str, Any] = {}
            self.blank(False)
            if self.peek() == "}":
                self.pos += 1
                return table
            while True:
                key = self.key()
                if self.peek() != "=":
                    raise self.fail("'=' expected")
                self.pos += 1
                _put(table, key, self.value(), self)
                self.blank(False)
                if self.peek() == "}":
                    self.pos += 1
                    return table
                if self.peek() != ",":
                    raise self.fail("',' or '}' expected in an inline table")
                self.pos += 1
        for word, meaning in (("true", True), ("false", False)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return meaning
        match = _INTEGER.match(self.text, self.pos)
        if match and self.text[match.end() : match.end() + 1] in ("", " ", "\t", "\n", "\r", ",", "]", "}", "#"):
            self.pos = match.end()
            return int(match.group().replace("_", ""))
        raise self.fail("a value this reader does not support")


def _put(table: dict[str, Any], key: list[str], value: Any, reader: _Reader) -> None:
    for part in key[:-1]:
        table = table.setdefault(part, {})
        if not isinstance(table, dict):
            raise reader.fail(f"{part} is not a table")
    if key[-1] in table:
        raise reader.fail(f"{'.'.join(key)} is defined twice")
    table[key[-1]] = value


def parse_toml_subset(text: str) -> dict[str, Any]:
    """What tomllib.loads(text) gives, for the subset described above; ValueError for the rest."""
    reader = _Reader(text)
    document: dict[str, Any] = {}
    table = document
    while True:
        reader.blank(True)
        if not reader.peek():
            return document
        if reader.peek() == "[":
            reader.pos += 1
            if reader.peek() == "[":
                raise reader.fail("arrays of tables are not supported")
            path = reader.key()
            if reader.peek() != "]":
                raise reader.fail("']' expected")
            reader.pos += 1
            reader.end_of_line()
            table = document
            for part in path:
                table = table.setdefault(part, {})
            continue
        key = reader.key()
        if reader.peek() != "=":
            raise reader.fail("'=' expected")
        reader.pos += 1
        _put(table, key, reader.value(), reader)
        reader.end_of_line()


# --- Core metadata (version 2.1) from [project]

# The [project] fields this backend writes into the metadata. Any other is refused rather than left
# out (dynamic fields, entry points, optional dependencies, authors... are not supported).
_FIELDS = {"name", "version", "description", "readme", "requires-python", "classifiers", "license",
           "dependencies", "keywords", "urls"}


def _metadata() -> str:
    p = _project()
    unknown = sorted(set(p) - _FIELDS)
    if unknown:
        raise ValueError(f"pyproject.toml [project] has fields jetfan_build does not write: {', '.join(unknown)}")
    if p.get("readme") not in (None, "README.md"):
        raise ValueError("jetfan_build writes README.md as the description: readme = \"README.md\"")
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
    ]
    if "description" in p:
        lines.append(f"Summary: {p['description']}")
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    license_ = p.get("license")
    if license_ is not None:
        if isinstance(license_, dict) and "text" in license_:
            text = license_["text"]
        elif isinstance(license_, dict) and "file" in license_:
            text = (HERE / license_["file"]).read_text(encoding="utf-8")
        else:
            raise ValueError("license is {text = \"...\"} or {file = \"...\"} for jetfan_build")
        lines.append("License: " + "\n       ".join(text.strip().splitlines()))  # continuation lines
    if p.get("keywords"):
        lines.append(f"Keywords: {','.join(p['keywords'])}")
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    lines += [f"Project-URL: {label}, {url}" for label, url in p.get("urls", {}).items()]
    lines += ["Description-Content-Type: text/markdown", "", (HERE / "README.md").read_text(encoding="utf-8")]
    return "\n".join(lines)


def _name_version() -> str:
    p = _project()
    return f"{p['name']}-{p['version']}"


def _package_files() -> list[Path]:
    root = HERE / PACKAGE
    return sorted(f for f in root.rglob("*") if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".typed"))


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: dict[str, bytes], tag: str = "py3-none-any") -> str:
    dist_info = f"{_name_version()}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: jetfan_build\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    files[f"{dist_info}/top_level.txt"] = f"{PACKAGE}\n".encode()
    files[f"{dist_info}/LICENSE"] = (HERE / "LICENSE").read_bytes()
    record = [_record_line(path, data) for path, data in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{_name_version()}-{tag}.whl"
    # A fixed timestamp (or SOURCE_DATE_EPOCH): the same sources give the same wheel.
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]
    with zipfile.ZipFile(Path(directory) / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return name


# --- PEP 517


def get_requires_for_build_wheel(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, {f.relative_to(HERE).as_posix(): f.read_bytes() for f in _package_files()})


def build_editable(wheel_directory: str, config_settings: Optional[dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, {f"_{PACKAGE}_editable.pth": f"{HERE}\n".encode()})


def build_sdist(sdist_directory: str, config_settings: Optional[dict[str, Any]] = None) -> str:
    base = _name_version()
    name = f"{base}.tar.gz"
    members = [HERE / "pyproject.toml", HERE / "README.md", HERE / "LICENSE", HERE / "_build" / "jetfan_build.py",
               *_package_files()]
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for path in members:
            sdist.add(path, arcname=f"{base}/{path.relative_to(HERE).as_posix()}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size, info.mode, info.mtime = len(data), 0o644, int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
        sdist.addfile(info, io.BytesIO(data))
    return name
