"""A PEP 517 build backend for the jetfan package that needs nothing but the standard library, so
`pip install ./proto/python` works without a network (pip's build isolation would otherwise fetch
setuptools from PyPI). It builds a pure-Python wheel (PEP 427) of the jetfan/ package, an sdist,
and an editable wheel (PEP 660) that points at this directory."""

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

HERE = Path(__file__).resolve().parent.parent  # proto/python
PACKAGE = "jetfan"


def _project() -> dict[str, Any]:
    text = (HERE / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # older: the few plain `key = "value"` lines of [project] this needs
        section = text.split("[project]", 1)[1].split("\n[", 1)[0]
        return dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', section, re.M))
    return tomllib.loads(text)["project"]


def _metadata() -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p['description']}",
        f"Requires-Python: {p['requires-python']}",
    ]
    license_ = p.get("license")
    if isinstance(license_, dict) and "text" in license_:
        lines.append(f"License: {license_['text']}")
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
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
    members = [HERE / "pyproject.toml", HERE / "README.md", HERE / "_build" / "jetfan_build.py", *_package_files()]
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for path in members:
            sdist.add(path, arcname=f"{base}/{path.relative_to(HERE).as_posix()}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size, info.mode, info.mtime = len(data), 0o644, int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
        sdist.addfile(info, io.BytesIO(data))
    return name
