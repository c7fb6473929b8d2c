#!/usr/bin/python3
"""Checks that docker/Dockerfile's runtime stage installs exactly what the binaries need.

    docker/check_runtime_libs.py DOCKERFILE BUILD_DIR

For each binary the image copies from the build stage (jetfan in the runtime stage; the demo
controller and handler in the demo stage), run on this Debian 12 host:
  - every shared library `ldd` resolves comes from a package (`dpkg -S`) that the runtime image
    has: one its `apt-get install` names, one of their dependencies, or one of debian:bookworm-slim
    (the Essential packages, apt, and their dependencies, taken from this host's dpkg database);
  - every library the binary names itself (DT_NEEDED) comes from a package the runtime stage names,
    or from the base image: nothing rests on another package's dependencies by chance;
  - the runtime stage names no package that provides none of those libraries, and no -dev package;
  - every file COPY takes from the build stage exists at that path in BUILD_DIR, and is a target
    the build stage builds.
Prints the table it checked. Exit 0: all true; 1: a check failed (each failure says which).
"""

import os
import re
import subprocess
import sys

import dockerfile

# Packages that are in the runtime stage for another reason than a library; none today.
NOT_A_LIBRARY = {}


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def ldd(binary):
    """The resolved path of every shared object the dynamic loader maps for binary."""
    paths = []
    for line in run("ldd", binary).splitlines():
        if "not found" in line:
            raise SystemExit(f"FAILED: {binary}: {line.strip()}")
        match = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if match:
            paths.append(match.group(1))
    return paths


def needed(binary):
    return re.findall(r"\(NEEDED\).*\[(.+)\]", run("readelf", "-d", binary))


def candidates(path):
    """path as dpkg may have registered it: Debian 12 has some files under /lib, some under /usr/lib."""
    real = os.path.realpath(path)
    return list(dict.fromkeys([path, real, path.removeprefix("/usr"), real.removeprefix("/usr"),
                               "/usr" + path.removeprefix("/usr"), "/usr" + real.removeprefix("/usr")]))


def packages_of(paths):
    """path -> the package that installed it, for each of paths, from one `dpkg -S` (it is slow)."""
    every = sorted({c for p in paths for c in candidates(p)})
    result = subprocess.run(["dpkg", "-S"] + every, capture_output=True, text=True)
    owner = {}
    for line in result.stdout.splitlines():
        package, _, registered = line.partition(": ")
        owner[registered.strip()] = package.split(":")[0].split(",")[0].strip()
    found = {}
    for path in paths:
        names = [owner[c] for c in candidates(path) if c in owner]
        if not names:
            raise SystemExit(f"FAILED: no package holds {path} (dpkg -S)")
        found[path] = names[0]
    return found


def installed_packages():
    """name -> (essential, [dependency alternatives]) for every installed package on this host."""
    out = run("dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Pre-Depends}, ${Depends}\t${Provides}\t${db:Status-Abbrev}\n")
    packages, provided_by = {}, {}
    for line in out.splitlines():
        name, essential, depends, provides, status = line.split("\t")
        if not status.startswith("ii"):
            continue
        groups = []
        for group in depends.split(","):
            alternatives = [re.sub(r"[\s(:].*", "", a.strip()) for a in group.split("|")]
            alternatives = [a for a in alternatives if a]
            if alternatives:
                groups.append(alternatives)
        packages[name] = (essential == "yes", groups)
        for p in provides.split(","):
            p = re.sub(r"[\s(].*", "", p.strip())
            if p:
                provided_by.setdefault(p, []).append(name)
    return packages, provided_by


def closure(roots, packages, provided_by):
    """roots and everything apt installs for them (Depends and Pre-Depends, not Recommends). Of
    alternatives, the first that is installed here or provided by an installed package."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for alternatives in packages.get(name, (False, []))[1]:
            for a in alternatives:
                choice = a if a in packages else (provided_by.get(a) or [None])[0]
                if choice:
                    todo.append(choice)
                    break
    return seen


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    dockerfile_path, build_dir = sys.argv[1:]
    if not os.path.exists("/etc/debian_version") or not open("/etc/debian_version").read().startswith("12"):
        print("SKIPPED: this check maps libraries to Debian 12 packages and must run on Debian 12")
        return 77
    failures = []
    stages = dockerfile.read_stages(dockerfile_path)
    build = dockerfile.stage(stages, "build")
    runtime = dockerfile.stage(stages, "runtime")
    demo = dockerfile.stage(stages, "demo")
    if demo.base != "runtime":
        failures.append(f"the demo stage must build on the runtime stage, not {demo.base}")
    if demo.apt_packages():
        failures.append(f"the demo stage installs packages of its own: {demo.apt_packages()}")
    listed = runtime.apt_packages()
    print(f"runtime stage installs: {' '.join(listed)}")

    packages, provided_by = installed_packages()
    base = closure([n for n, (essential, _) in packages.items() if essential] + ["apt"], packages, provided_by)
    image = closure(listed, packages, provided_by) | base

    # The binaries the image copies from the build stage, found in this build tree.
    built_targets = set()
    for args, _ in build.all("RUN"):
        for match in re.finditer(r"--target((?:\s+[\w.-]+)+)", args):
            built_targets.update(match.group(1).split())
    binaries = []
    for stage_ in (runtime, demo):
        for source_stage, sources, _, line in stage_.copies():
            if source_stage != "build":
                continue
            for source in sources:
                relative = source.removeprefix("/build/")
                local = os.path.join(build_dir, relative)
                if not os.path.isfile(local):
                    failures.append(f"Dockerfile:{line}: COPY --from=build {source}: no {relative} in {build_dir}")
                    continue
                if os.path.basename(relative) not in built_targets:
                    failures.append(f"Dockerfile:{line}: {source} is not among the build stage's --target list")
                binaries.append(local)
    if not binaries:
        failures.append("the Dockerfile copies no binary from the build stage")

    used = set()
    print(f"{'binary':<24} {'library':<28} {'package':<18} in the image because")
    loaded = {binary: ldd(binary) for binary in binaries}
    owner = packages_of([path for paths in loaded.values() for path in paths])
    for binary in binaries:
        direct = set(needed(binary))
        for path in loaded[binary]:
            package = owner[path]
            used.add(package)
            library = os.path.basename(path)
            if package in listed:
                why = "the runtime stage installs it"
            elif package in base:
                why = "debian:bookworm-slim has it"
            elif package in image:
                why = "a dependency of an installed package"
            else:
                why = "MISSING"
                failures.append(f"{os.path.basename(binary)} loads {path} from {package}, which the runtime stage lacks")
            if library in direct and package not in listed and package not in base:
                failures.append(f"{os.path.basename(binary)} needs {library} itself; its package {package} must be "
                                f"in the runtime stage's apt-get install, not come as another package's dependency")
            print(f"{os.path.basename(binary):<24} {library:<28} {package:<18} {why}")

    for package in listed:
        if package.endswith("-dev"):
            failures.append(f"the runtime stage installs the development package {package}")
        elif package not in used and package not in NOT_A_LIBRARY:
            failures.append(f"the runtime stage installs {package}, which provides no library the binaries load")

    for failure in failures:
        print(f"FAILED: {failure}")
    if not failures:
        print(f"OK: every library of {len(binaries)} binaries comes from a package the runtime image has")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
