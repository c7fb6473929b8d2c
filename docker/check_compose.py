#!/usr/bin/python3
"""Checks that docker/compose.yaml, docker/Dockerfile, the config they use, the README, the
operations manual (docs/OPERATING.md) and the systemd units agree on commands, paths and ids, since
no container engine runs here to show it.

    docker/check_compose.py REPO_ROOT BUILD_DIR

- the jetfan service reads the config it mounts ($JETFAN_CONFIG), and that config passes the real
  `jetfan check`; its path is the one the README and docs/OPERATING.md serve
  (/etc/jetfan/builder.yaml) and the unit's for builder;
- the socket path is the same in that config, config/jetfan.example.yaml, the README's example
  config and its socat example, jetfan@.socket for instance builder, and every handler service's
  command; the handlers mount jetfan's socket volume at the socket's directory, run with the
  image's jetfan gid, and the socket mode lets that group connect; every handler they name is
  declared in the config;
- the controller's command fits jetfan-demo-controller's own usage (run here) and creates the
  stream and durable the config binds, on subjects that carry the config's key prefix, at the URL
  the config connects to, which is the nats service with JetStream on;
- the handler commands fit jetfan-example-handler's usage (run here);
- jetfan's stop_grace_period outlasts the config's drain_timeout; the image's CMD and HEALTHCHECK
  use $JETFAN_CONFIG; the demo stage turns jetfan's health check off;
- the HEALTHCHECK runs a jetfan command whose options are all in that command's usage line in the
  real `jetfan <command> --help`, and the real binary accepts its command line as written (with a
  copy of the config whose control socket nobody serves, it must exit 69: nothing answers, which
  is not 64, a bad command line);
- every build section names this Dockerfile and one of its stages.
Exit 0: all agree; 1: something does not (each failure says what); 77: python3-yaml is missing.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile
from urllib.parse import urlparse

try:
    import yaml
except ImportError:
    print("SKIPPED: python3-yaml (Debian package) is not installed")
    sys.exit(77)

import dockerfile

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
    return condition


def seconds(duration):
    match = re.fullmatch(r"(\d+)(ms|s|m|h)", str(duration).strip())
    if not match:
        raise ValueError(f"cannot read the duration {duration!r}")
    return int(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def usage_of(binary):
    """The usage lines a binary prints when run without arguments (it must exit 64)."""
    result = subprocess.run([binary], capture_output=True, text=True)
    expect(result.returncode == 64, f"{binary} without arguments exits {result.returncode}, not 64")
    name = os.path.basename(binary)
    return [line.split(name, 1)[1].strip() for line in result.stderr.splitlines() if name in line]


def fits(usage, args):
    """Whether args fit a usage line such as 'URL setup STREAM SUBJECTS DURABLE [ACK_WAIT_MS]'."""
    words = usage.split()
    required = [w for w in words if not w.startswith("[")]
    if not len(required) <= len(args) <= len(words):
        return False
    return all(a == w for a, w in zip(args, words) if w.islower())  # lower-case words are literal


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    root, build = (os.path.abspath(p) for p in sys.argv[1:])
    docker_dir = os.path.join(root, "docker")
    compose = yaml.safe_load(open(os.path.join(docker_dir, "compose.yaml"), encoding="utf-8"))
    services = compose["services"]
    stages = dockerfile.read_stages(os.path.join(docker_dir, "Dockerfile"))
    runtime = dockerfile.stage(stages, "runtime")
    jetfan_gid = dockerfile.arg_default(runtime, "JETFAN_GID")

    # Every build section: this Dockerfile, one of its stages.
    for name, service in services.items():
        if "build" in service:
            b = service["build"]
            path = os.path.normpath(os.path.join(docker_dir, b.get("context", "."), b.get("dockerfile", "Dockerfile")))
            expect(path == os.path.join(docker_dir, "Dockerfile"), f"{name}: builds from {path}")
            expect(b.get("target") in [s.name for s in stages], f"{name}: no stage {b.get('target')!r}")

    # jetfan and its config.
    jetfan = services["jetfan"]
    expect(jetfan["build"]["target"] == "runtime", "jetfan: must run the runtime stage")
    config_path = jetfan.get("environment", {}).get("JETFAN_CONFIG")
    expect(config_path == "/etc/jetfan/builder.yaml",
           f"jetfan: JETFAN_CONFIG is {config_path}, not the README's /etc/jetfan/builder.yaml")
    mounts = [m.split(":") for m in jetfan.get("volumes", [])]
    config_mount = [m for m in mounts if m[1] == config_path]
    if not expect(config_mount, f"jetfan: nothing is mounted at {config_path}"):
        return report()
    config_file = os.path.normpath(os.path.join(docker_dir, config_mount[0][0]))
    checked = subprocess.run([os.path.join(build, "daemon", "jetfan"), "check", "--config", config_file],
                             capture_output=True, text=True)
    expect(checked.returncode == 0, f"jetfan check --config {config_file}: {checked.stderr.strip()}")
    config = yaml.safe_load(open(config_file, encoding="utf-8"))
    socket_path = config["socket"]["path"]
    socket_dir = os.path.dirname(socket_path)

    # The socket path everywhere.
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    operating = open(os.path.join(root, "docs", "OPERATING.md"), encoding="utf-8").read()
    example = yaml.safe_load(open(os.path.join(root, "config", "jetfan.example.yaml"), encoding="utf-8"))
    unit_socket = open(os.path.join(root, "systemd", "jetfan@.socket"), encoding="utf-8").read()
    unit_service = open(os.path.join(root, "systemd", "jetfan@.service"), encoding="utf-8").read()
    listen = re.search(r"^ListenStream=(\S+)", unit_socket, re.MULTILINE).group(1).replace("%i", "builder")
    exec_start = re.search(r"^ExecStart=(.+)$", unit_service, re.MULTILINE).group(1).replace("%i", "builder")
    readme_socket = re.search(r"^socket:\n\s+path: (\S+)", readme, re.MULTILINE)
    for where, text in [("README.md", readme), ("docs/OPERATING.md", operating)]:
        expect(f"jetfan serve --config {config_path}" in text, f"{where}: no `jetfan serve --config {config_path}`")
    expect(exec_start.endswith(f"serve --config {config_path}"), f"jetfan@.service runs `{exec_start}` for builder")
    for where, path in [("config/jetfan.example.yaml", example["socket"]["path"]),
                        ("README's config", readme_socket and readme_socket.group(1)),
                        ("jetfan@.socket for builder", listen)]:
        expect(path == socket_path, f"{where} names the socket {path}, {config_file} names {socket_path}")
    expect(f"UNIX-CONNECT:{socket_path}" in readme, f"README's socat example does not connect to {socket_path}")
    mode = int(str(config["socket"].get("mode", "0660")), 8)
    expect(mode & 0o060 == 0o060, f"socket.mode {oct(mode)} does not let group jetfan connect")
    socket_volume = [m[0] for m in mounts if m[1] == socket_dir]
    expect(socket_volume and socket_volume[0] in compose.get("volumes", {}),
           f"jetfan: no named volume at {socket_dir}")
    drain = seconds(config.get("delivery", {}).get("drain_timeout", "10s"))
    expect(seconds(jetfan.get("stop_grace_period", "10s")) > drain,
           f"jetfan: stop_grace_period {jetfan.get('stop_grace_period', '10s')} does not outlast drain_timeout {drain}s")

    # The handlers.
    handler_usage = usage_of(os.path.join(build, "examples", "jetfan-example-handler"))
    declared = {h["name"] for h in config["handlers"]}
    served = set()
    for name, service in services.items():
        if service.get("entrypoint") != ["jetfan-example-handler"]:
            continue
        args = service["command"]
        expect(any(fits(u, args) for u in handler_usage), f"{name}: {args} does not fit usage {handler_usage}")
        expect(args[0] == socket_path, f"{name}: connects to {args[0]}, jetfan serves {socket_path}")
        expect(args[1] in declared, f"{name}: handler {args[1]} is not declared in {config_file}")
        served.add(args[1])
        volumes = [m.split(":") for m in service.get("volumes", [])]
        expect([socket_volume[0] if socket_volume else None, socket_dir] in [v[:2] for v in volumes],
               f"{name}: does not mount jetfan's socket volume at {socket_dir}")
        gid = str(service.get("user", "")).partition(":")[2]
        expect(gid == jetfan_gid, f"{name}: runs with group {gid or 'of the image'}, jetfan's gid is {jetfan_gid}")
        expect(service["build"]["target"] == "demo", f"{name}: the example handler is in the demo stage")
    expect(served == declared, f"handler services {sorted(served)} differ from the declared {sorted(declared)}")

    # The controller and the nats server.
    controller = services["controller"]
    controller_usage = usage_of(os.path.join(build, "examples", "jetfan-demo-controller"))
    args = controller["command"]
    expect(controller.get("entrypoint") == ["jetfan-demo-controller"], "controller: not jetfan-demo-controller")
    expect(any(fits(u, args) for u in controller_usage if " setup " in u),
           f"controller: {args} does not fit usage {controller_usage}")
    if len(args) >= 5:
        url, _, stream, subjects, durable = args[:5]
        expect(url in config["nats"]["servers"], f"controller: {url} is not among the config's servers")
        expect(stream == config["consumer"]["stream"], f"controller: creates stream {stream}, jetfan binds {config['consumer']['stream']}")
        expect(durable == config["consumer"]["durable"], f"controller: creates {durable}, jetfan binds {config['consumer']['durable']}")
        expect(subjects == config["key"]["strip_prefix"] + ">",
               f"controller: subjects {subjects} are not the key prefix {config['key']['strip_prefix']!r} + '>'")
        depends = controller.get("depends_on", {})
        expect(depends.get(urlparse(url).hostname, {}).get("condition") == "service_healthy",
               "controller: does not wait for a healthy nats server")
    expect(jetfan.get("depends_on", {}).get("controller", {}).get("condition") == "service_completed_successfully",
           "jetfan: does not wait for the controller to finish")
    for url in config["nats"]["servers"]:
        parsed = urlparse(url)
        expect(parsed.hostname in services, f"{config_file}: server {url} is no compose service")
        nats = services.get(parsed.hostname, {})
        command = nats.get("command", [])
        expect("--jetstream" in command or "-js" in command, f"{parsed.hostname}: JetStream is not on")
        expect((parsed.port or 4222) == 4222 and not {"-p", "--port"} & set(command),
               f"{parsed.hostname}: does not listen where {url} points")

    # The image itself.
    env = " ".join(a for a, _ in runtime.all("ENV"))
    expect("JETFAN_CONFIG=" in env, "runtime stage: no ENV JETFAN_CONFIG")
    for keyword in ("CMD", "HEALTHCHECK"):
        text = " ".join(a for a, _ in runtime.all(keyword))
        expect("$JETFAN_CONFIG" in text, f"runtime stage: {keyword} does not use $JETFAN_CONFIG")
    user = " ".join(a for a, _ in runtime.all("USER"))
    expect(user and not user.startswith("root") and not user.startswith("0"), "runtime stage: runs as root")
    check_healthcheck(runtime, os.path.join(build, "daemon", "jetfan"), config)
    demo = dockerfile.stage(stages, "demo")
    expect([a for a, _ in demo.all("HEALTHCHECK")] == ["NONE"], "demo stage: jetfan's HEALTHCHECK is not turned off")
    for stage_ in stages:
        for source_stage, sources, _, line in stage_.copies():
            for source in sources if source_stage is None else []:
                expect(os.path.exists(os.path.join(root, source)), f"Dockerfile:{line}: COPY {source}: no such file")
    return report()


def healthcheck_command(runtime):
    """The runtime stage's HEALTHCHECK as the words of its jetfan command: the shell command of
    `HEALTHCHECK [OPTIONS] CMD ...` up to its first `||`, `&&`, `;` or `|`, without redirections."""
    checks = runtime.all("HEALTHCHECK")
    if not expect(len(checks) == 1, f"runtime stage: {len(checks)} HEALTHCHECK instructions, not 1"):
        return None
    args, line = checks[0]
    match = re.match(r"(?:--\S+\s+)*CMD\s+(.*)", args, re.DOTALL)
    if not expect(match, f"Dockerfile:{line}: HEALTHCHECK {args}: no CMD"):
        return None
    command = match.group(1).strip()
    expect(not command.startswith("["), f"Dockerfile:{line}: HEALTHCHECK CMD in exec form; this check reads the shell form")
    lexer = shlex.shlex(command, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    words = []
    for word in lexer:
        if word in ("||", "&&", ";", "|", "&"):
            break
        words.append(word)
    # Without redirections: `> FILE`, `2> FILE`, `2>&1`.
    redirections = {">", ">>", "<", ">&", "&>", "<&"}
    plain, i = [], 0
    while i < len(words):
        if words[i] in redirections:
            i += 2
        elif words[i].isdigit() and i + 1 < len(words) and words[i + 1] in redirections:
            i += 3
        else:
            plain.append(words[i])
            i += 1
    return plain, line


def check_healthcheck(runtime, jetfan_binary, config):
    """The HEALTHCHECK's jetfan command: its options are in the real usage of that command, and the
    real binary accepts its command line (exit 69 against a control socket nobody serves)."""
    found = healthcheck_command(runtime)
    if not found:
        return
    words, line = found
    if not expect(len(words) >= 2 and words[0] == "jetfan",
                  f"Dockerfile:{line}: the HEALTHCHECK runs {words}, not a jetfan command"):
        return
    command = words[1]
    helped = subprocess.run([jetfan_binary, command, "--help"], capture_output=True, text=True)
    expect(helped.returncode == 0, f"jetfan {command} --help exits {helped.returncode}")
    usage = [l.strip() for l in helped.stdout.splitlines() if re.match(rf"\s+{re.escape(command)}\b", l)]
    if not expect(usage, f"Dockerfile:{line}: `jetfan --help` lists no command {command!r}"):
        return
    accepted = set(re.findall(r"--[a-z][\w-]*", usage[0]))
    for word in words[2:]:
        option = word.split("=", 1)[0]
        if option.startswith("-"):
            expect(option in accepted, f"Dockerfile:{line}: HEALTHCHECK: `jetfan {command}` has no option {option} "
                                       f"(its usage: {usage[0]})")
    # Run it as written, with $JETFAN_CONFIG a copy of the compose config whose control socket is
    # in a fresh temp dir, so that nothing answers there: exit 69, never 64 (bad command line).
    with tempfile.TemporaryDirectory(prefix="jetfan-healthcheck.") as temp:
        copy = dict(config, control={"path": os.path.join(temp, "jetfan.ctl")})
        config_path = os.path.join(temp, "jetfan.yaml")
        with open(config_path, "w", encoding="utf-8") as f:
            yaml.safe_dump(copy, f)
        argv = [jetfan_binary] + [w.replace("$JETFAN_CONFIG", config_path).replace("${JETFAN_CONFIG}", config_path)
                                  for w in words[1:]]
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        expect(ran.returncode == 69,
               f"Dockerfile:{line}: the HEALTHCHECK's `{' '.join(words)}` exits {ran.returncode} with nothing "
               f"serving its control socket, not 69: {ran.stderr.strip().splitlines()[:1]}")


def report():
    for failure in failures:
        print(f"FAILED: {failure}")
    if not failures:
        print("OK: compose.yaml, the Dockerfile, docker/builder.yaml, the README, docs/OPERATING.md and the units agree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
