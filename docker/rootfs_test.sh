#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2155,SC2178  # describe.py's variables, from eval, named by namerefs
# Builds docker/Dockerfile's images without a container engine, as root file systems made from the
# Debian packages they name, and runs docker/compose.yaml's services in them with systemd-nspawn:
#   - the runtime stage: `mmdebstrap --variant=minbase` of the suite of its debian:SUITE-slim (that
#     image is minbase), with the packages its apt-get install names, from the mirrors that image
#     uses; then its other RUN commands in a chroot, with its ARG defaults. Cached as a tarball in
#     BUILD_DIR/docker-rootfs/, under a hash of all that. Then its COPYs (from BUILD_DIR for
#     --from=build, else from this tree); the demo stage adds its COPYs to a copy of it;
#   - the runtime image's user is not root (that every binary finds its libraries, that the
#     entrypoint and command serve, and that jetfan check passes in it, the services below show by
#     running them);
#   - compose.yaml's services, in its order, each in its stage's file system with the service's user
#     (or the image's), environment over the image's ENV, volumes (a named volume starts with the
#     owner and mode of the image's directory, as Docker's do), read-only root if read_only, and
#     entrypoint and command (or the image's ENTRYPOINT and CMD), in one private network namespace where "nats"
#     is 127.0.0.1: the nats service's command run by this host's nats-server; the one-shot
#     controller (restart "no") must exit 0; `docker compose run jetfan check` passes on the config
#     the jetfan service is given (by $JETFAN_CONFIG); then jetfan and the handlers. An event published as compose.yaml's header says
#     reaches both handlers and is acked; the image's HEALTHCHECK, run in jetfan's container as
#     Docker runs it, passes; the image's STOPSIGNAL stops jetfan with exit 0 within the service's
#     stop_grace_period.
# Not shown here: the build stage (the binaries are BUILD_DIR's), .dockerignore, restart policies,
# and the nats image itself (alpine's nats-server; this host's runs its command).
#   docker/rootfs_test.sh BUILD_DIR
# Needs root, mmdebstrap, a systemd-nspawn that can run containers here, nats-server and ip, and
# for a file system not in the cache the Debian mirror ($JETFAN_DEBIAN_MIRROR, default
# http://deb.debian.org/debian, and $JETFAN_DEBIAN_SECURITY_MIRROR); exit 77 (skipped) without
# them. Remove BUILD_DIR/docker-rootfs to build it anew with the packages' current versions.
set -euo pipefail
build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "building a root file system and running containers need root"
for tool in mmdebstrap:mmdebstrap systemd-nspawn:systemd-container nats-server:nats-server ip:iproute2; do
  command -v "${tool%%:*}" > /dev/null || skip "${tool%%:*} is not installed (Debian package ${tool#*:})"
done
description=$("$source_dir/docker/describe.py" "$source_dir/docker")
eval "$description"
[ -z "${compose_unread:-}" ] || skip "$compose_unread"

dir=$(mktemp -d /tmp/jetfan-rootfs.XXXXXX)
pids=()        # what runs in the background: the nats-server and, in containers, the other services
containers=()  # the nspawn processes among them
netns_pid=""
cleanup() {
  local pid child
  for pid in "${containers[@]}"; do  # its PID 1 may ignore the signal nspawn passes on, as in Docker
    for child in $(pgrep -P "$pid"); do kill -9 "$child" 2> /dev/null || true; done
  done
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for _ in $(seq 50); do
    for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null && break; done || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2> /dev/null || true; done
  [ -z "$netns_pid" ] || kill "$netns_pid" 2> /dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
failures=0
ok() { echo "ok: $*"; }
failed() { echo "FAILED: $*"; failures=$((failures + 1)); }
fatal() { echo "FAILED: $*"; exit 1; }
noise() { grep -v 'Attempted to remove disk file system' || true; }  # nspawn, where /run is no tmpfs
wait_until() {  # wait_until SECONDS COMMAND...: polls COMMAND until it succeeds; 1 if it never does
  local deadline=$((SECONDS + $1)); shift
  until "$@" > /dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}
var() { printf '%s' "${2}_${1//[^a-zA-Z0-9_]/_}_$3"; }  # var NAME stage|service FIELD: describe.py's variable

# --- The runtime stage's file system: from the cache, or made by mmdebstrap.
[[ $stage_runtime_base =~ ^debian:([a-z]+)-slim$ ]] ||
  fatal "the runtime stage builds on $stage_runtime_base; this test makes debian:SUITE-slim only"
suite=${BASH_REMATCH[1]}
mirror=${JETFAN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${JETFAN_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
mmdebstrap=(mmdebstrap --variant=minbase --include="$(IFS=,; echo "${stage_runtime_packages[*]}")"
            --customize-hook="sh $dir/customize.sh \"\$1\""
            --skip=cleanup/run  # the RUN commands may make directories in /run, as the Dockerfile's does
            "$suite" "$dir/rootfs.tar"
            "deb $mirror $suite main" "deb $mirror $suite-updates main" "deb $security $suite-security main")
for run in "${stage_runtime_runs[@]}"; do  # as Docker runs them: /bin/sh -c, ARGs in the environment
  printf 'chroot "$1" env %s /bin/sh -c %s\n' "${stage_runtime_args[*]@Q}" "${run@Q}"
done > "$dir/customize.sh"
key=$( (printf '%s\n' "${mmdebstrap[@]}" | sed "s|$dir|DIR|g"; cat "$dir/customize.sh") | sha256sum | cut -c1-16)
cache=$build/docker-rootfs/runtime-$key.tar
if [ -f "$cache" ]; then
  echo "runtime root file system: $cache (cached)"
else
  /usr/lib/apt/apt-helper -o Acquire::http::Timeout=15 download-file "$mirror/dists/$suite/InRelease" \
    "$dir/InRelease" > /dev/null 2>&1 || skip "no network to the Debian mirror $mirror (nor a cached $cache)"
  started=$SECONDS
  "${mmdebstrap[@]}" > "$dir/mmdebstrap.log" 2>&1 || { tail -n 20 "$dir/mmdebstrap.log"; fatal "mmdebstrap failed"; }
  mkdir -p "$build/docker-rootfs"
  rm -f "$build"/docker-rootfs/runtime-*.tar  # another recipe's
  mv "$dir/rootfs.tar" "$cache"
  echo "runtime root file system: made by mmdebstrap in $((SECONDS - started)) s: $cache"
fi

# --- The images: the runtime stage's file system and COPYs; a stage built on it adds its COPYs.
copy_into() {  # copy_into STAGE ROOT: the stage's COPY instructions, as Docker does them (owner root)
  local -n copies=$(var "$1" stage copies)
  local i from source dest file
  for ((i = 0; i < ${#copies[@]}; i += 3)); do
    from=${copies[i]} source=${copies[i + 1]} dest=${copies[i + 2]}
    case $from in
      build) file=$build/${source#/build/} ;;
      -) file=$source_dir/$source ;;
      *) fatal "$1 stage: COPY --from=$from: this test copies from the build stage or the build context only" ;;
    esac
    [ -f "$file" ] || fatal "$1 stage: COPY $source: no file $file"
    [[ $dest == */ ]] && dest=$dest$(basename "$file")
    mkdir -p "$(dirname "$2$dest")"
    rm -f "$2$dest"
    cp "$file" "$2$dest"
    chown 0:0 "$2$dest"
  done
}
images=(runtime)  # and the stages compose.yaml's services run
for service in "${services[@]}"; do
  declare -n target=$(var "$service" service target)
  [ "$target" = none ] || [[ " ${images[*]} " == *" $target "* ]] || images+=("$target")
  unset -n target
done
for image in "${images[@]}"; do
  mkdir "$dir/$image"
  if [ "$image" = runtime ]; then
    tar -C "$dir/runtime" -xf "$cache"
  else
    declare -n base=$(var "$image" stage base) packages=$(var "$image" stage packages) runs=$(var "$image" stage runs)
    [ "$base" = runtime ] && [ ${#packages[@]} = 0 ] && [ ${#runs[@]} = 0 ] ||
      fatal "the $image stage: this test makes a stage from the runtime stage and COPY only"
    unset -n base packages runs
    cp -a "$dir/runtime/." "$dir/$image/"
  fi
  copy_into "$image" "$dir/$image"
  touch "$dir/$image/etc/hosts"  # a mount point, as Docker makes one in each container
done
printf '127.0.0.1\tlocalhost\n127.0.0.1\tnats\n' > "$dir/hosts"

unshare --net sleep infinity &  # the compose network: loopback only, and the nats service on it
netns_pid=$!
in_own_netns() { [ "$(readlink "/proc/$netns_pid/ns/net")" != "$(readlink /proc/self/ns/net)" ]; }
wait_until 5 in_own_netns || fatal "unshare --net did not make a network namespace"
nsenter --net="/proc/$netns_pid/ns/net" ip link set lo up

# container IMAGE USER ENV... -- NSPAWN_OPTION... -- ARGV...: sets nspawn to the command that runs
# ARGV in IMAGE as Docker would: as PID 1, as USER (a name or uid:gid; empty: root), with the
# environment ENV (NAME=VALUE), in the network; the image's STOPSIGNAL stops it.
container() {
  local image=$1 user=$2; shift 2
  local env=() options=() as=()
  while [ "$1" != -- ]; do env+=(--setenv="$1"); shift; done; shift
  while [ "$1" != -- ]; do options+=("$1"); shift; done; shift
  local -n stopsignal=$(var "$image" stage stopsignal)
  if [ -n "$user" ] && [ "$user" != root ] && [ "$user" != 0 ]; then
    as=(setpriv --reuid="${user%%:*}" --regid="${user#*:}" --clear-groups --)
  fi
  nspawn=(systemd-nspawn --quiet --console=pipe --register=no --keep-unit --machine="jetfan-rootfs-$BASHPID-$((++machines))"
          --directory="$dir/$image" --network-namespace-path="/proc/$netns_pid/ns/net"
          --bind-ro="$dir/hosts:/etc/hosts" --kill-signal="$stopsignal" "${env[@]}" "${options[@]}" --
          "${as[@]}" "$@")
}
machines=0
in_image() {  # in_image IMAGE ARGV...: ARGV in IMAGE as its USER, with its ENV, read-only; output
  local -n user=$(var "$1" stage user) env=$(var "$1" stage env)
  container "$1" "$user" "${env[@]}" -- --read-only -- "${@:2}"
  timeout 60 "${nspawn[@]}" < /dev/null 2>&1 | noise
  return "${PIPESTATUS[0]}"
}

# --- Each image on its own.
output=$(in_image runtime true) || skip "systemd-nspawn cannot run a container here: $output"
uid=$(in_image runtime id -u) || true
[ -n "$uid" ] && [ "$uid" != 0 ] && ok "runtime image: USER $stage_runtime_user is uid $uid" ||
  failed "runtime image: USER $stage_runtime_user is uid '$uid'"
[ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }

# --- compose.yaml's services.
# service NAME [ARG...]: sets nspawn to what runs the service (ARGs replace its command, as
# `docker compose run NAME ARG...` does) and argv to its command line; makes its volumes.
service() {
  local name=$1; shift
  local -n target=$(var "$name" service target) user=$(var "$name" service user) env=$(var "$name" service env)
  local -n volumes=$(var "$name" service volumes) read_only=$(var "$name" service read_only)
  local -n has_entrypoint=$(var "$name" service has_entrypoint) entrypoint=$(var "$name" service entrypoint)
  local -n has_command=$(var "$name" service has_command) command=$(var "$name" service command)
  local -n image_user=$(var "$target" stage user) image_env=$(var "$target" stage env) cmd=$(var "$target" stage cmd)
  local -n image_entrypoint=$(var "$target" stage entrypoint)
  # As Docker: the service's entrypoint replaces the image's and drops its CMD; the command (or
  # the ARGs) replaces the CMD.
  if [ "$has_entrypoint" = True ]; then argv=("${entrypoint[@]}"); else argv=("${image_entrypoint[@]}"); fi
  if [ $# -gt 0 ]; then argv+=("$@")
  elif [ "$has_command" = True ]; then argv+=("${command[@]}")
  elif [ "$has_entrypoint" != True ]; then argv+=("${cmd[@]}")
  fi
  local options=() volume source rest mount
  # read_only, or writes go to a layer of its own, thrown away with it (nspawn's tmpfs overlay)
  if [ "$read_only" = True ]; then options+=(--read-only); else options+=(--volatile=overlay); fi
  for volume in "${volumes[@]}"; do
    source=${volume%%:*} rest=${volume#*:} mount=${rest%%:*}
    if [[ $source != /* ]]; then  # a named volume: it starts with the owner and mode of the image's directory
      source=$dir/volumes/$source
      if [ ! -d "$source" ]; then
        mkdir -p "$source"
        if [ -d "$dir/$target$mount" ]; then
          chown --reference="$dir/$target$mount" "$source" && chmod --reference="$dir/$target$mount" "$source"
        fi
      fi
    fi
    [ -e "$source" ] || fatal "$name: mounts $source, which does not exist"
    if [ ! -e "$dir/$target$mount" ]; then  # the mount point, as Docker makes it
      if [ -d "$source" ]; then mkdir -p "$dir/$target$mount"; else
        mkdir -p "$(dirname "$dir/$target$mount")" && touch "$dir/$target$mount"; fi
    fi
    if [[ $rest == *:ro ]]; then options+=("--bind-ro=$source:$mount"); else options+=("--bind=$source:$mount"); fi
  done
  container "$target" "${user:-$image_user}" "${image_env[@]}" "${env[@]}" -- "${options[@]}" -- "${argv[@]}"
  echo "+ $name: ${argv[*]}" >> "$dir/$name.log"
}
log() { echo "--- $1's output:"; noise < "$dir/$1.log" | tail -n "${2:-15}"; }
declare -A nspawn_pid
for name in "${services[@]}"; do
  declare -n target=$(var "$name" service target) restart=$(var "$name" service restart)
  if [ "$target" = none ]; then  # the nats image: its command, run by this host's nats-server
    declare -n entrypoint=$(var "$name" service entrypoint) command=$(var "$name" service command)
    declare -n volumes=$(var "$name" service volumes)
    [ "${entrypoint[*]}" = nats-server ] || fatal "$name runs ${entrypoint[*]}; this test runs nats-server only"
    argv=("${command[@]}")
    for volume in "${volumes[@]}"; do  # its volumes' paths, as this host's directories
      mkdir -p "$dir/volumes/${volume%%:*}"
      argv=("${argv[@]/#${volume#*:}/$dir/volumes/${volume%%:*}}")
    done
    unset -n entrypoint command volumes
    nsenter --net="/proc/$netns_pid/ns/net" nats-server "${argv[@]}" > "$dir/$name.log" 2>&1 &
    pids+=($!)
    healthz() {  # its compose health check: /healthz?js-enabled-only=true on its monitoring port
      nsenter --net="/proc/$netns_pid/ns/net" bash -c 'exec 3<> /dev/tcp/127.0.0.1/8222 &&
        printf "GET /healthz?js-enabled-only=true HTTP/1.0\r\n\r\n" >&3 && head -n 1 <&3 | grep -q " 200 "'
    }
    wait_until 20 healthz || { log "$name"; fatal "$name: nats-server with JetStream did not become healthy"; }
    ok "$name: this host's $(nats-server --version) ${argv[*]}, healthy"
  elif [ "$restart" = no ]; then  # a one-shot: what comes after it waits for it to succeed
    service "$name"
    if timeout 60 "${nspawn[@]}" < /dev/null >> "$dir/$name.log" 2>&1; then ok "$name: ${argv[*]}: exit 0"; else
      status=$?; log "$name"; fatal "$name: ${argv[*]}: exit $status"; fi
  else
    if [ "$name" = jetfan ]; then  # first the config it is given, as `docker compose run jetfan check` would
      service "$name" check
      if timeout 60 "${nspawn[@]}" < /dev/null >> "$dir/$name.log" 2>&1; then
        ok "$name: ${argv[*]} passes on the config compose gives it (\$JETFAN_CONFIG)"
      else
        log "$name"; failed "$name: jetfan check fails on the config compose gives it"
      fi
    fi
    service "$name"
    "${nspawn[@]}" < /dev/null >> "$dir/$name.log" 2>&1 &
    pids+=($!) containers+=($!)
    nspawn_pid[$name]=$!
    ok "$name: started ${argv[*]}"
  fi
  unset -n target restart
done

# --- The demo: an event, as compose.yaml's header publishes it, reaches both handlers and is acked.
pid1() { pgrep -P "${nspawn_pid[$1]}" | awk 'NR == 1'; }  # the container's PID 1
healthcheck() {  # the runtime image's HEALTHCHECK, in jetfan's container, as Docker runs it
  local -n user=$(var runtime stage user) image_env=$(var runtime stage env) env=service_jetfan_env
  local pid user_option=()
  pid=$(pid1 jetfan) && [ -n "$pid" ] || return 1
  [ "$user" = root ] || user_option=(setpriv --reuid="${user%%:*}" --regid="${user#*:}" --clear-groups --)
  nsenter -t "$pid" -m -u -i -n -p -- "${user_option[@]}" \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${image_env[@]}" "${env[@]}" \
    /bin/sh -c "$stage_runtime_healthcheck"
}
if wait_until 30 healthcheck; then
  ok "jetfan: the image's HEALTHCHECK ($stage_runtime_healthcheck) passes in its container"
else
  log jetfan; failed "jetfan: the image's HEALTHCHECK fails in its container"
fi
stream=${service_controller_command[2]} durable=${service_controller_command[4]}
subject=events.mesh-build-machine.built
service controller "${service_controller_command[0]}" publish "$subject" '{"machine":3}'
timeout 60 "${nspawn[@]}" < /dev/null >> "$dir/controller.log" 2>&1 || { log controller; failed "controller: publish failed"; }
service controller "${service_controller_command[0]}" wait-settled "$stream" "$durable" 30
if timeout 60 "${nspawn[@]}" < /dev/null >> "$dir/controller.log" 2>&1; then
  ok "the event $subject was acked: consumer $durable settled"
else
  log controller 3; log jetfan; failed "the event $subject was not acked"
fi
for name in "${services[@]}"; do
  declare -n entrypoint=$(var "$name" service entrypoint) command=$(var "$name" service command)
  if [ "${entrypoint[*]}" = jetfan-example-handler ]; then
    grep -q "\[${command[1]}\] got ${subject#events.}" "$dir/$name.log" && ok "$name got it" ||
      { log "$name"; failed "$name did not get $subject"; }
  fi
  unset -n entrypoint command
done

# --- docker stop: the STOPSIGNAL; jetfan drains and exits 0 within the stop_grace_period.
grace=${service_jetfan_stop_grace_period%s}
[[ $grace =~ ^[0-9]+$ ]] || fatal "jetfan: stop_grace_period $service_jetfan_stop_grace_period: this test reads seconds only"
not_running() { ! kill -0 "$1" 2> /dev/null; }
jetfan_pid=${nspawn_pid[jetfan]}
kill -TERM "$jetfan_pid" 2> /dev/null || true  # nspawn passes the STOPSIGNAL (its --kill-signal) to jetfan, its PID 1
started=$SECONDS
if wait_until "$grace" not_running "$jetfan_pid"; then
  status=0
  wait "$jetfan_pid" || status=$?
  [ "$status" = 0 ] && ok "jetfan: $stage_runtime_stopsignal: exit 0 in $((SECONDS - started)) s (stop_grace_period ${grace}s)" ||
    { log jetfan; failed "jetfan: $stage_runtime_stopsignal: exit $status"; }
else
  log jetfan; failed "jetfan: still running ${grace}s after $stage_runtime_stopsignal: Docker would kill it"
fi
[ "$failures" = 0 ] && echo "OK: the images run compose.yaml's demo as it says" || { echo "$failures check(s) failed"; exit 1; }
