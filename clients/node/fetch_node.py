#!/usr/bin/env python3
"""Fetches a Node.js binary and npm from the npm registry into DIR, without a node or npm to start
from (env.sh uses it where the machine has no Node 20): the official binary as the package
node-linux-<arch> ships it, and npm's own package, which bundles its dependencies. Each tarball is
checked against the registry's sha512 integrity before anything is unpacked. Afterwards
DIR/bin holds node, npm and npx.

  fetch_node.py DIR NODE_VERSION NPM_VERSION"""

import base64
import hashlib
import io
import json
import os
import platform
import shutil
import sys
import tarfile
import urllib.request

REGISTRY = os.environ.get("npm_config_registry", "https://registry.npmjs.org").rstrip("/")


def fetch(package, version):
    """The package's tarball, checked against the integrity the registry gives for it."""
    with urllib.request.urlopen(f"{REGISTRY}/{package}/{version}", timeout=60) as answer:
        dist = json.load(answer)["dist"]
    with urllib.request.urlopen(dist["tarball"], timeout=300) as answer:
        data = answer.read()
    algorithm, _, expected = dist["integrity"].partition("-")
    if algorithm != "sha512" or base64.b64encode(hashlib.sha512(data).digest()).decode() != expected:
        sys.exit(f"fetch_node.py: {package}@{version}: the tarball does not match the registry's integrity")
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")


def unpack(archive, into):
    """Unpacks the tarball's package/ directory as `into`, refusing any path that leaves it."""
    root = os.path.realpath(into)
    for member in archive.getmembers():
        if not member.name.startswith("package/") or not (member.isfile() or member.isdir()):
            continue
        target = os.path.realpath(os.path.join(into, member.name[len("package/"):]))
        if not target.startswith(root + os.sep):
            sys.exit(f"fetch_node.py: {member.name} would land outside {into}")
        if member.isdir():
            os.makedirs(target, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with archive.extractfile(member) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
        os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    directory, node_version, npm_version = sys.argv[1:]
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    staging = directory + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    unpack(fetch(f"node-linux-{arch}", node_version), os.path.join(staging, "node"))
    unpack(fetch("npm", npm_version), os.path.join(staging, "npm"))
    bin_dir = os.path.join(staging, "bin")
    os.makedirs(bin_dir)
    os.symlink("../node/bin/node", os.path.join(bin_dir, "node"))
    for tool in ("npm", "npx"):
        path = os.path.join(bin_dir, tool)
        with open(path, "w") as script:
            script.write(f'#!/bin/sh\nexec "$(dirname "$0")/node" "$(dirname "$0")/../npm/bin/{tool}-cli.js" "$@"\n')
        os.chmod(path, 0o755)
    shutil.rmtree(directory, ignore_errors=True)
    os.rename(staging, directory)  # whole or not at all: a run cut short leaves only the .partial


if __name__ == "__main__":
    main()
