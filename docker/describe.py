#!/usr/bin/python3
"""Prints what docker/Dockerfile and docker/compose.yaml say, as bash assignments for the scripts
beside it to eval (nothing here checks anything; the scripts run the real thing with it).

    docker/describe.py DOCKER_DIR

For each Dockerfile stage S (non-word characters as _): stage_S_base, _packages (what `apt-get install`
adds), _runs (its other RUN commands), _args (ARG defaults as NAME=VALUE), _copies (FROM SOURCE
DEST triples; FROM is - for the build context), _targets (the --target list of its cmake --build),
and, inherited from a stage it builds on, _user, _env (NAME=VALUE), _entrypoint (argv, of the exec
form) and _cmd (argv), _healthcheck (the shell command of HEALTHCHECK CMD, or NONE), _stopsignal;
stages lists them in order. LABELs are not read (packaging/check_metadata.py reads the labels).
For each compose service V: service_V_target (its build stage, or none), _entrypoint and _command
(argv; _has_entrypoint / _has_command say whether they are set), _user, _env, _volumes (SOURCE:
TARGET[:ro], a bind's source made absolute), _read_only, _restart, _stop_grace_period; services
lists them in order (none, and compose_unread says why, without python3-yaml). Exits 1, naming the
line, on what it cannot read.
"""

import json
import os
import re
import shlex
import sys

try:
    import yaml
except ImportError:  # the Dockerfile's part is still printed
    yaml = None


def fail(message):
    sys.exit(f"docker/describe.py: {message}")


def logical_lines(path):
    """(text, line) per instruction: continuations joined, comment and empty lines dropped."""
    lines, pending, start = [], "", None
    for number, raw in enumerate(open(path, encoding="utf-8"), 1):
        text = raw.rstrip("\n")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        start = start or number
        if text.endswith("\\"):
            pending += text[:-1]
            continue
        lines.append(((pending + text).strip(), start))
        pending, start = "", None
    if pending:
        fail(f"{path}:{start}: the file ends inside a continued line")
    return lines


APT_RUN = re.compile(r"apt-get update && apt-get install -y --no-install-recommends ([\w.+\- ]+) "
                     r"&& rm -rf /var/lib/apt/lists/\*")


def stages(path):
    result = {}
    current = None
    for text, line in logical_lines(path):
        keyword, _, args = text.partition(" ")
        keyword, args = keyword.upper(), re.sub(r"\s+", " ", args.strip())
        if keyword == "FROM":
            match = re.fullmatch(r"(\S+) AS (\S+)", args, re.IGNORECASE) or fail(f"{path}:{line}: FROM {args}")
            base, name = match.groups()
            current = dict(result[base]) if base in result else dict(user="root", env=[], entrypoint=[], cmd=[],
                                                                      healthcheck="", stopsignal="SIGTERM")
            current.update(name=name, base=base, packages=[], runs=[], args=[], copies=[], targets=[])
            result[name] = current
        elif current is None:
            fail(f"{path}:{line}: {keyword} before the first FROM")
        elif keyword == "RUN":
            if "apt-get" in args:  # only the one form below, so that a change cannot be misread
                match = APT_RUN.fullmatch(args) or fail(f"{path}:{line}: an apt-get RUN must read `{APT_RUN.pattern}`")
                current["packages"] += match.group(1).split()
            else:
                current["runs"].append(args)
            for match in re.finditer(r"--target((?: [\w.-]+)+)", args):
                current["targets"] += match.group(1).split()
        elif keyword == "ARG":
            current["args"].append(args if "=" in args else args + "=")
        elif keyword == "COPY":
            words = shlex.split(args)
            source = words.pop(0)[len("--from="):] if words[0].startswith("--from=") else "-"
            if len(words) < 2 or words[0].startswith("--"):
                fail(f"{path}:{line}: COPY {args}")
            current["copies"] += [x for s in words[:-1] for x in (source, s, words[-1])]
        elif keyword == "USER":
            current["user"] = args
        elif keyword == "ENV":
            current["env"] = [e for e in current["env"] if e.split("=")[0] != args.split("=")[0]] + [args]
        elif keyword == "ENTRYPOINT":
            # As Docker does, a stage's ENTRYPOINT drops the CMD it inherited.
            current["entrypoint"], current["cmd"] = json.loads(args), []
        elif keyword == "CMD":
            current["cmd"] = json.loads(args)
        elif keyword == "HEALTHCHECK":
            current["healthcheck"] = "NONE" if args == "NONE" else re.sub(r"^(--\S+ )*CMD ", "", args)
        elif keyword == "STOPSIGNAL":
            current["stopsignal"] = args
        elif keyword not in ("WORKDIR", "EXPOSE", "LABEL"):
            fail(f"{path}:{line}: {keyword} is not understood here")
    return result


def words(value):
    return [] if value is None else shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def emit(name, value):
    name = re.sub(r"\W", "_", name)
    if isinstance(value, list):
        print(f"{name}=({' '.join(shlex.quote(str(v)) for v in value)})")
    else:
        print(f"{name}={shlex.quote(str(value))}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    docker_dir = os.path.abspath(sys.argv[1])
    dockerfile = os.path.join(docker_dir, "Dockerfile")
    parsed = stages(dockerfile)
    emit("stages", list(parsed))
    for name, stage in parsed.items():
        for key in ("base", "packages", "runs", "args", "copies", "targets", "user", "env", "entrypoint", "cmd",
                    "healthcheck", "stopsignal"):
            emit(f"stage_{name}_{key}", stage[key])
    if yaml is None:
        emit("services", [])
        emit("compose_unread", "python3-yaml (Debian package) is not installed: compose.yaml is not read")
        return
    compose = yaml.safe_load(open(os.path.join(docker_dir, "compose.yaml"), encoding="utf-8"))
    emit("services", list(compose["services"]))
    for name, service in compose["services"].items():
        build = service.get("build") or {}
        if build:
            path = os.path.normpath(os.path.join(docker_dir, build.get("context", "."), build.get("dockerfile", "Dockerfile")))
            if path != dockerfile or build.get("target") not in parsed:
                fail(f"compose.yaml: {name} builds {build.get('target')!r} from {path}, not a stage of {dockerfile}")
        volumes = []
        for volume in service.get("volumes", []):
            source, _, rest = volume.partition(":")
            if source.startswith((".", "/")):
                source = os.path.normpath(os.path.join(docker_dir, source))
            elif source not in (compose.get("volumes") or {}):
                fail(f"compose.yaml: {name} mounts {source}, which is no bind and no named volume")
            volumes.append(f"{source}:{rest}")
        environment = service.get("environment", {})
        if isinstance(environment, dict):
            environment = [f"{k}={v}" for k, v in environment.items()]
        emit(f"service_{name}_target", build.get("target", "none"))
        emit(f"service_{name}_has_entrypoint", "entrypoint" in service)
        emit(f"service_{name}_entrypoint", words(service.get("entrypoint")))
        emit(f"service_{name}_has_command", "command" in service)
        emit(f"service_{name}_command", words(service.get("command")))
        emit(f"service_{name}_user", service.get("user", ""))
        emit(f"service_{name}_env", environment)
        emit(f"service_{name}_volumes", volumes)
        emit(f"service_{name}_read_only", bool(service.get("read_only", False)))
        emit(f"service_{name}_restart", service.get("restart", "no"))
        emit(f"service_{name}_stop_grace_period", service.get("stop_grace_period", "10s"))


if __name__ == "__main__":
    main()
