#!/usr/bin/python3
"""One version and one licence for everything jetfan publishes, as each package says it:
    packaging/check_metadata.py SOURCE_DIR JETFAN_BIN BUILD_DIR

- VERSION (MAJOR.MINOR.PATCH) is what `jetfan --version` prints, the newest release of CHANGELOG.md
  (an "## Unreleased" section above it gathers what the next release will hold) and the newest entry of
  the Debian changelog, the version of clients/node/package.json and of its lockfile, of
  clients/python/pyproject.toml and jetfan.__version__, and of the built jetfan-client.pc;
- the licence is Apache-2.0: LICENSE is its text (and each client directory holds the same file,
  which its package ships), the Debian copyright file says it in the machine-readable format,
  package.json's license and pyproject.toml's license say it, the C++ client's CMake package and
  pkg-config file carry its SPDX id, CPack is given LICENSE, and the container image's OCI labels
  say it (and the version);
- each client package and the image point at the same repository.
Exit 0: all true; 1: not, one FAILED line per difference. Standard library only."""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

SPDX = "Apache-2.0"
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def first_match(path, pattern, what):
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(pattern, line)
        if match:
            return match.group(1)
    failures.append(f"{path}: no {what}")
    return None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, jetfan, build = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    version = (source / "VERSION").read_text(encoding="utf-8").strip()
    check(re.fullmatch(r"\d+\.\d+\.\d+", version), f"VERSION is {version!r}, not MAJOR.MINOR.PATCH")

    said = {}
    printed = subprocess.run([jetfan, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    said["jetfan --version"] = printed.removeprefix("jetfan ")
    said["CHANGELOG.md's newest entry"] = first_match(source / "CHANGELOG.md", r"## (?!Unreleased\b)(\S+)",
                                                      "## VERSION heading")
    said["packaging/changelog's newest entry"] = first_match(source / "packaging/changelog", r"jetfan \(([^)]+)\)",
                                                             "entry")
    node = json.loads((source / "clients/node/package.json").read_text(encoding="utf-8"))
    lock = json.loads((source / "clients/node/package-lock.json").read_text(encoding="utf-8"))
    said["clients/node/package.json"] = node.get("version")
    said["clients/node/package-lock.json"] = lock.get("version")
    said["clients/node/package-lock.json's root package"] = lock["packages"][""].get("version")
    python = tomllib.loads((source / "clients/python/pyproject.toml").read_text(encoding="utf-8"))["project"]
    said["clients/python/pyproject.toml"] = python.get("version")
    said["jetfan.__version__"] = first_match(source / "clients/python/jetfan/__init__.py",
                                             r'__version__ = "([^"]+)"', "__version__")
    said["jetfan-client.pc"] = first_match(build / "clients/cpp/jetfan-client.pc", r"Version: (\S+)", "Version:")
    for where, what in said.items():
        check(what == version, f"{where} says version {what!r}; VERSION says {version}")

    licence = (source / "LICENSE").read_text(encoding="utf-8")
    check(licence.lstrip().startswith("Apache License\n") and "Version 2.0, January 2004" in licence
          and "END OF TERMS AND CONDITIONS" in licence, "LICENSE is not the Apache License 2.0")
    for copy in ("clients/node/LICENSE", "clients/python/LICENSE"):
        check((source / copy).is_file() and (source / copy).read_text(encoding="utf-8") == licence,
              f"{copy} is not the same file as LICENSE")
    copyright_text = (source / "packaging/copyright").read_text(encoding="utf-8")
    check(copyright_text.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"),
          "packaging/copyright is not in the machine-readable format")
    licences = set(re.findall(r"^License: (\S+)", copyright_text, re.MULTILINE))
    check(licences == {SPDX}, f"packaging/copyright names the licences {sorted(licences)}, not {SPDX} alone")
    check(f'"/usr/share/common-licenses/{SPDX}"' in copyright_text,
          f"packaging/copyright does not point at /usr/share/common-licenses/{SPDX}")
    check(node.get("license") == SPDX, f"package.json's license is {node.get('license')!r}")
    check(lock["packages"][""].get("license") == SPDX, "package-lock.json's root package has no license Apache-2.0")
    check(not node.get("private"), "package.json is private: it cannot be published")
    check(python.get("license") == {"text": SPDX}, f"pyproject.toml's license is {python.get('license')!r}")
    for path in (source / "clients/cpp/jetfan_client-config.cmake", build / "clients/cpp/jetfan-client.pc"):
        check(f"SPDX-License-Identifier: {SPDX}" in path.read_text(encoding="utf-8"), f"{path} has no SPDX id {SPDX}")
    cpack = (build / "CPackConfig.cmake").read_text(encoding="utf-8")
    check(f'set(CPACK_RESOURCE_FILE_LICENSE "{source.resolve()}/LICENSE")' in cpack,
          "CPack is not given LICENSE (CPACK_RESOURCE_FILE_LICENSE)")

    dockerfile = (source / "docker/Dockerfile").read_text(encoding="utf-8")
    labels = dict(re.findall(r'(org\.opencontainers\.image\.[a-z.]+)="([^"]*)"', dockerfile))
    check(labels.get("org.opencontainers.image.version") == version,
          f"docker/Dockerfile's label org.opencontainers.image.version is not {version}")
    check(labels.get("org.opencontainers.image.licenses") == SPDX,
          f"docker/Dockerfile's label org.opencontainers.image.licenses is not {SPDX}")

    homepage = first_match(source / "CMakeLists.txt", r'set\(JETFAN_HOMEPAGE "([^"]+)"\)', "JETFAN_HOMEPAGE")
    check(node.get("homepage") == homepage, f"package.json's homepage is not {homepage}")
    check(node.get("repository", {}).get("url") == f"git+{homepage}.git", f"package.json's repository is not {homepage}")
    check(python.get("urls", {}).get("Source") == homepage, f"pyproject.toml's Source URL is not {homepage}")
    check(labels.get("org.opencontainers.image.source") == homepage, f"docker/Dockerfile's source label is not {homepage}")

    for failure in failures:
        print(f"FAILED: {failure}")
    if failures:
        return 1
    print(f"OK: version {version} and licence {SPDX} everywhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
