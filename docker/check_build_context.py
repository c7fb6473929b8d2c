#!/usr/bin/python3
"""Checks that the Dockerfile's build stage can configure from the build context Docker sends.

    docker/check_build_context.py REPO_ROOT

First, statically, that the build stage installs what configuring needs, since this host has every
package and so cannot show a missing one (a debian:bookworm-slim image has none of them):
  - every find_package, pkg_check_modules and find_program that is REQUIRED in the CMakeLists.txt
    files, and the tools the build stage runs (cmake, ninja for -G Ninja, g++ for the CXX project),
    maps to a Debian package (CMAKE_NAMES below; a name it lacks fails, so that a new dependency
    cannot slip by);
  - each such package is in build_packages in scripts/deps.sh and in the build stage's apt-get
    install, and the two lists are the same; the build stage installs nothing else.
Then copies the files of this tree that docker/Dockerfile.dockerignore lets through (git's view of
the tree: tracked and untracked, without what .gitignore ignores) to a temp dir, checks that every
file a COPY takes from the context is there, and runs the build stage's `cmake -S . -B /build ...`
on it (with /build in the temp dir). Compiling is left out: the normal build compiles the same
sources. Exit 0: all true; 1: something is not (each failure, or cmake's output, says why); 77:
not a git tree (the static checks have run and passed).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import dockerfile

# What the CMake files find, by the name they use, and the Debian 12 package that provides it.
CMAKE_NAMES = {
    "find_package(Threads)": "g++",  # libc6-dev, a dependency of g++
    "find_package(Boost)": "libboost-dev",
    "find_package(spdlog)": "libspdlog-dev",
    "find_package(yaml-cpp)": "libyaml-cpp-dev",
    "find_package(nlohmann_json)": "nlohmann-json3-dev",
    "find_package(PkgConfig)": "pkg-config",
    "find_package(Catch2)": "catch2",
    "find_package(Python3)": "python3",
    "pkg_check_modules(libnats)": "libnats-dev",
    "pkg_check_modules(libsystemd)": "libsystemd-dev",
    "project(LANGUAGES CXX)": "g++",
    "cmake": "cmake",
    "cmake -G Ninja": "ninja-build",
}
# Separate CMake projects in the tree, not part of the build stage's configure.
OTHER_PROJECTS = ("clients/cpp/install_test/",)


def cmake_calls(root):
    """(name as in CMAKE_NAMES, file) for every REQUIRED find_package and pkg_check_modules, and
    find_program, and the project's languages, in the CMakeLists.txt files the top-level configure reads."""
    found = []
    for directory, subdirs, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        subdirs[:] = [d for d in subdirs if not d.startswith((".", "build")) and d != "node_modules"]
        if "CMakeLists.txt" not in files or (relative + "/").startswith(OTHER_PROJECTS):
            continue
        path = os.path.normpath(os.path.join(relative, "CMakeLists.txt"))
        text = "\n".join(l.split("#", 1)[0] for l in open(os.path.join(directory, "CMakeLists.txt"), encoding="utf-8"))
        for function, args in re.findall(r"\b(find_package|find_program|pkg_check_modules|project)\s*\(([^)]*)\)", text):
            words = args.split()
            if function == "project":
                languages = words[words.index("LANGUAGES") + 1:] if "LANGUAGES" in words else ["C", "CXX"]
                found += [(f"project(LANGUAGES {language})", path) for language in languages]
            elif "REQUIRED" not in words:
                continue
            elif function == "find_package":
                found.append((f"find_package({words[0]})", path))
            elif function == "find_program":  # find_program(VAR name ... REQUIRED)
                found.append((f"find_program({words[1] if words[1] != 'NAMES' else words[2]})", path))
            else:  # pkg_check_modules(PREFIX [options] modules...)
                keywords = {"REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH",
                            "NO_CMAKE_ENVIRONMENT_PATH"}
                found += [(f"pkg_check_modules({re.split(r'[<>=]', m)[0]})", path)
                          for m in words[1:] if m not in keywords]
    return found


def bash_array(text, name, arrays):
    """The words of `name=(...)` in a bash script (comments dropped), with "${other[@]}" expanded
    from arrays; None if there is no such assignment."""
    match = re.search(rf"^{name}=\(", text, re.MULTILINE)
    if not match:
        return None
    body = ""
    for line in text[match.end():].splitlines():
        code = line.split("#", 1)[0]
        if ")" in code:
            body += code[:code.index(")")]
            break
        body += code + " "
    words = []
    for word in shlex.split(body):
        reference = re.fullmatch(r"\$\{(\w+)\[@\]\}", word)
        words += arrays.get(reference.group(1), []) if reference else [word]
    return words


def deps_sh_lists(path):
    """build_packages and packages of scripts/deps.sh."""
    text = open(path, encoding="utf-8").read()
    build = bash_array(text, "build_packages", {}) or []
    return build, bash_array(text, "packages", {"build_packages": build}) or []


def check_build_packages(root, build):
    failures = []
    build_deps, every_deps = deps_sh_lists(os.path.join(root, "scripts", "deps.sh"))
    installed = build.apt_packages()
    if not build_deps:
        failures.append("scripts/deps.sh has no build_packages=(...) list")
    configure = " ".join(args for args, _ in build.all("RUN"))
    needed = [(name, path) for name, path in cmake_calls(root)]
    needed.append(("cmake", "the build stage's RUN"))
    if re.search(r"-G\s*Ninja", configure):
        needed.append(("cmake -G Ninja", "the build stage's RUN"))
    print(f"{'needed by':<28} {'as':<34} package")
    for name, where in needed:
        package = CMAKE_NAMES.get(name)
        print(f"{where:<28} {name:<34} {package or '?'}")
        if package is None:
            failures.append(f"{where}: {name}: no Debian package known for it; add it to CMAKE_NAMES in "
                            f"docker/check_build_context.py, to build_packages in scripts/deps.sh and to the build stage")
            continue
        if package not in build_deps:
            failures.append(f"{where}: {name} needs {package}, which build_packages in scripts/deps.sh lacks")
        if package not in installed:
            failures.append(f"{where}: {name} needs {package}, which the Dockerfile's build stage does not install")
    for package in build_deps:
        if package not in installed:
            failures.append(f"the build stage lacks {package} (build_packages in scripts/deps.sh has it)")
    for package in installed:
        if package not in build_deps:
            failures.append(f"the build stage installs {package}, which build_packages in scripts/deps.sh does not list"
                            + ("" if package in every_deps else " (nor does packages)"))
    print(f"build stage installs: {' '.join(installed)}")
    return failures


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
    stages = dockerfile.read_stages(os.path.join(docker_dir, "Dockerfile"))
    build = dockerfile.stage(stages, "build")
    failures = check_build_packages(root, build)
    if failures:
        for failure in failures:
            print(f"FAILED: {failure}")
        return 1
    regexes = [to_regex(p) for p in ignore_patterns(os.path.join(docker_dir, "Dockerfile.dockerignore"))]
    git = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True)
    if git.returncode != 0:
        print(f"SKIPPED: {root} is not a git work tree, so its own files cannot be told from build output")
        return 77
    listed = git.stdout.decode().split("\0")
    files = [f for f in listed if f and os.path.isfile(os.path.join(root, f)) and not excluded(f, regexes)]
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
