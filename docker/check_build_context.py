#!/usr/bin/python3
"""Checks that the Dockerfile's build stage can configure from the build context Docker sends.

    docker/check_build_context.py REPO_ROOT

Copies the files of this tree that docker/Dockerfile.dockerignore lets through (git's view of the
tree: tracked and untracked, without what .gitignore ignores) to a temp dir, checks that every
file a COPY takes from the context is there, and runs the build stage's `cmake -S . -B /build ...`
on it (with /build in the temp dir). Compiling is left out: the normal build compiles the same
sources. Exit 0: it configures; 1: it does not (cmake's output says why); 77: not a git tree.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import dockerfile


def ignore_patterns(path):
    patterns = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("!"):
            raise SystemExit(f"FAILED: {path}: exceptions (!{line[1:]}) are not understood by this check")
        patterns.append(os.path.normpath(line.lstrip("/")))
    return patterns


def to_regex(pattern):
    """Docker's dockerignore matching: '**' any number of directories, '*' and '?' within one."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            if pattern.startswith("/", i):
                out += "/?"
                i += 1
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def excluded(path, regexes):
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    return any(r.match(p) for r in regexes for p in prefixes)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = os.path.abspath(sys.argv[1])
    docker_dir = os.path.join(root, "docker")
    regexes = [to_regex(p) for p in ignore_patterns(os.path.join(docker_dir, "Dockerfile.dockerignore"))]
    git = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True)
    if git.returncode != 0:
        print(f"SKIPPED: {root} is not a git work tree, so its own files cannot be told from build output")
        return 77
    listed = git.stdout.decode().split("\0")
    files = [f for f in listed if f and os.path.isfile(os.path.join(root, f)) and not excluded(f, regexes)]
    stages = dockerfile.read_stages(os.path.join(docker_dir, "Dockerfile"))
    build = dockerfile.stage(stages, "build")
    failures = []
    with tempfile.TemporaryDirectory(prefix="jetfan-context.") as temp:
        context = os.path.join(temp, "src")
        for f in files:
            os.makedirs(os.path.dirname(os.path.join(context, f)), exist_ok=True)
            shutil.copy2(os.path.join(root, f), os.path.join(context, f))
        print(f"build context: {len(files)} of {len(listed) - 1} files")
        for stage_ in stages:
            for source_stage, sources, _, line in stage_.copies():
                for source in sources if source_stage is None else []:
                    if source != "." and not os.path.exists(os.path.join(context, source)):
                        failures.append(f"Dockerfile:{line}: COPY {source}: not in the build context")
        configures = []
        for args, line in build.all("RUN"):
            for command in args.split("&&"):
                words = shlex.split(command)
                if words[:2] == ["cmake", "-S"]:
                    configures.append([w.replace("/build", os.path.join(temp, "build")) for w in words])
        if not configures:
            failures.append("the build stage runs no `cmake -S`")
        for words in configures:
            print("in the context:", " ".join(words))
            result = subprocess.run(words, cwd=context, capture_output=True, text=True)
            if result.returncode != 0:
                print(result.stdout[-3000:], result.stderr[-3000:])
                failures.append(f"the build stage's cmake configure fails on the build context (exit {result.returncode})")
    for failure in failures:
        print(f"FAILED: {failure}")
    if not failures:
        print("OK: the build stage configures from the build context")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
