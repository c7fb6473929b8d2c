#!/usr/bin/env bash
# Runs jetfan under the real systemd, with the units exactly as installed: boots this machine's own
# /usr (plus this build, installed into a staging root and laid over /usr) in a throw-away
# systemd-nspawn container with a private network and a tmpfs root, and checks what the units
# promise:
#   - at boot, sysusers.d makes the user jetfan and tmpfiles.d makes /run/jetfan 0750;
#   - jetfan@builder.socket listens; a handler connecting to it starts jetfan@builder.service
#     (socket activation), which becomes active once READY=1 comes, with all the hardening on;
#   - messages reach both handlers and are acked; a user outside the group jetfan is refused;
#   - each event's facts are journal fields of their own (journalctl JETFAN_HANDLER=audit);
#   - WATCHDOG=1 arrives; `systemctl reload` keeps the same process, succeeds for a good config, and
#     fails for a refused one, saying why in `systemctl status` and the journal;
#   - a missing durable consumer (exit 78) is not restarted; a stop exits 0 and removes the socket.
#   systemd/boot_test.sh BUILD_DIR
# Needs root and systemd-nspawn (Debian package systemd-container); exit 77 (skipped) without them.
set -euo pipefail
build=$(cd "$1" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIPPED: booting a container needs root"; exit 77; fi
if ! command -v systemd-nspawn > /dev/null; then
  echo "SKIPPED: systemd-nspawn is not installed (Debian package systemd-container)"
  exit 77
fi

dir=$(mktemp -d /tmp/jetfan-boot.XXXXXX)
machine=jetfan-boot-$$
nspawn_pid=""
cleanup() {
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2> /dev/null; then
    kill "$nspawn_pid"  # nspawn shuts the container down cleanly on SIGTERM
    for _ in $(seq 100); do kill -0 "$nspawn_pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$nspawn_pid" 2> /dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
failures=0
ok() { echo "ok: $*"; }
not() { ! "$@"; }
failed() { echo "FAILED: $*"; failures=$((failures + 1)); }
wait_until() {  # wait_until SECONDS COMMAND...: polls COMMAND until it succeeds; 1 if it never does
  local deadline=$((SECONDS + $1)); shift
  until "$@" > /dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

# The staging root (merged /usr, as Debian 12), configs, and the demo binaries.
mkdir -p "$dir/stage/usr/lib" "$dir/etc-jetfan"
for d in bin sbin lib lib64; do mkdir -p "$dir/stage/usr/$d"; ln -s "usr/$d" "$dir/stage/$d"; done
DESTDIR=$dir/stage cmake --install "$build" --prefix /usr > "$dir/install.log"
source_dir=$(cd "$(dirname "$0")/.." && pwd)
for module in builder missing; do  # docker/builder.yaml, pointed at this container's nats-server
  durable=node1_builder
  [ "$module" = missing ] && durable=no_such_durable
  sed -e 's|^\(  servers:\).*|\1 ["nats://127.0.0.1:4222"]|' -e "s|durable: node1_builder|durable: $durable|" \
      -e "s|/run/jetfan/builder.sock|/run/jetfan/$module.sock|" "$source_dir/docker/builder.yaml" \
    > "$dir/etc-jetfan/$module.yaml"
done

systemd-nspawn --quiet --directory=/ --volatile=yes --machine="$machine" --register=no --keep-unit \
  --private-network --overlay-ro="/usr:$dir/stage/usr:/usr" --bind-ro="$dir/etc-jetfan:/etc/jetfan" \
  --bind-ro="$build/examples:/opt/jetfan-examples" --boot -- systemd.firstboot=off \
  < /dev/null > "$dir/console.log" 2>&1 &
nspawn_pid=$!
init_pid=""
wait_until 30 pgrep -P "$nspawn_pid" || { cat "$dir/console.log"; echo "FAILED: the container did not start"; exit 1; }
init_pid=$(pgrep -P "$nspawn_pid" | awk 'NR == 1')
inside() { nsenter -t "$init_pid" -m -u -i -n -p -- env SYSTEMD_COLORS=0 SYSTEMD_PAGER= SYSTEMD_LOG_LEVEL=warning "$@"; }
show() { inside systemctl show -P "$2" "$1"; }
is() { [ "$(show "$1" "$2")" = "$3" ]; }   # is UNIT PROPERTY VALUE
booted() {  # "degraded" will do: some of the host's own units fail in here
  local state
  state=$(inside systemctl is-system-running --wait 2> /dev/null) || true
  [ "$state" = running ] || [ "$state" = degraded ]
}
wait_until 60 booted || { tail -n 20 "$dir/console.log"; echo "FAILED: the container did not finish booting"; exit 1; }
echo "booted $(inside systemctl --version | awk 'NR == 1') in container $machine"

inside getent passwd jetfan > /dev/null && ok "sysusers.d made the user jetfan" || failed "no user jetfan after boot"
[ "$(inside stat -c '%a %U %G' /run/jetfan)" = "750 jetfan jetfan" ] && ok "tmpfiles.d made /run/jetfan 0750 jetfan:jetfan" ||
  failed "/run/jetfan is '$(inside stat -c '%a %U %G' /run/jetfan 2>&1)'"
# With only a loopback network, network-online.target (which the unit wants) would wait minutes.
inside systemctl mask --runtime --quiet systemd-networkd-wait-online.service
inside useradd --system --no-create-home --groups jetfan handler
inside useradd --system --no-create-home stranger
as() { local user=$1; shift; inside setpriv --reuid="$user" --regid="$(inside id -g "$user")" --init-groups "$@"; }

inside systemd-run --quiet --unit=test-nats /usr/sbin/nats-server -js -sd /var/lib/test-nats -a 127.0.0.1 -p 4222
controller() { inside /opt/jetfan-examples/jetfan-demo-controller nats://127.0.0.1:4222 "$@"; }
wait_until 20 controller setup EVENTS 'events.>' node1_builder || { failed "nats-server in the container"; exit 1; }

# Socket activation: the first handler's connection starts jetfan.
inside systemctl start jetfan@builder.socket
[ "$(inside stat -c '%a %U %G' /run/jetfan/builder.sock)" = "660 jetfan jetfan" ] && ok "the socket unit listens, 0660 jetfan:jetfan" ||
  failed "/run/jetfan/builder.sock is '$(inside stat -c '%a %U %G' /run/jetfan/builder.sock 2>&1)'"
for handler in builder audit; do
  inside sh -c "setpriv --reuid=handler --regid=\$(id -g handler) --init-groups \
    /opt/jetfan-examples/jetfan-example-handler /run/jetfan/builder.sock $handler > /tmp/$handler.out 2>&1 &"
done
if wait_until 30 is jetfan@builder.service SubState running; then
  ok "a handler's connection started jetfan@builder.service; READY=1 made it active"
else
  failed "jetfan@builder.service is $(show jetfan@builder.service ActiveState) (exit $(show jetfan@builder.service ExecMainStatus)); the journal:"
  inside journalctl -b -o short-monotonic --no-pager | grep -E 'jetfan' | tail -n 12
fi
controller publish events.mesh-build-machine.built '{"machine":3}' > /dev/null
if controller wait-settled EVENTS node1_builder 20 > /dev/null &&
   inside grep -q "got mesh-build-machine.built" /tmp/builder.out && inside grep -q "got mesh-build-machine.built" /tmp/audit.out; then
  ok "both handlers got the message and it was acked"
else
  failed "the message was not delivered to both handlers and acked"
fi
# Under journald each event's facts are journal fields of their own.
fields=$(inside journalctl -u jetfan@builder.service JETFAN_HANDLER=audit JETFAN_EVENT=handler.connected -o export --no-pager 2>&1) || true
if [[ $fields == *"MESSAGE=handler \"audit\" (connection "* ]] && [[ $fields == *$'\nJETFAN_PID='* ]] &&
   [[ $fields == *$'\nJETFAN_UID='* ]] && [[ $fields == *$'\nJETFAN_CONNECTION='* ]]; then
  ok "journalctl JETFAN_HANDLER=audit finds its connection, with JETFAN_PID, JETFAN_UID and JETFAN_CONNECTION"
else
  failed "journalctl JETFAN_HANDLER=audit JETFAN_EVENT=handler.connected gave: $(echo "$fields" | head -n 20)"
fi
fields=$(inside journalctl -u jetfan@builder.service JETFAN_EVENT=serving JETFAN_CONSUMER=node1_builder -o export --no-pager 2>&1) || true
if [[ $fields == *"MESSAGE=serving consumer"* ]] && [[ $fields == *$'\nJETFAN_STREAM=EVENTS'* ]]; then
  ok "journalctl JETFAN_EVENT=serving JETFAN_CONSUMER=node1_builder finds it, with JETFAN_STREAM"
else
  failed "journalctl JETFAN_EVENT=serving JETFAN_CONSUMER=node1_builder gave: $(echo "$fields" | head -n 20)"
fi
output=$(as stranger /opt/jetfan-examples/jetfan-example-handler /run/jetfan/builder.sock audit 2>&1) || true
[[ $output == *"Permission denied"* ]] && ok "a user outside the group jetfan is refused" || failed "a stranger got: $output"

# The watchdog: systemd records each WATCHDOG=1.
# jetfan pings at half WatchdogSec=30s; systemd's WatchdogTimestamp moves with each ping.
first=$(show jetfan@builder.service WatchdogTimestampMonotonic)
if wait_until 20 not is jetfan@builder.service WatchdogTimestampMonotonic "$first"; then
  ok "jetfan sends WATCHDOG=1"
else
  failed "no WATCHDOG=1 within 30s (WatchdogSec=30s: systemd kills jetfan; result $(show jetfan@builder.service Result))"
fi
# systemctl reload runs `jetfan reload`, which waits for jetfan's verdict: a good file is applied
# and the call succeeds; a refused one fails the call, and the reason is in status and the journal.
config=$dir/etc-jetfan/builder.yaml
cp "$config" "$dir/builder.yaml.good"
pid=$(show jetfan@builder.service MainPID)
sed -i 's/ack_timeout: 30s/ack_timeout: 20s/' "$config"
if output=$(inside systemctl reload jetfan@builder.service 2>&1); then
  ok "systemctl reload of a good config succeeds"
else
  failed "systemctl reload of a good config failed: $output"
fi
if wait_until 10 is jetfan@builder.service SubState running && is jetfan@builder.service MainPID "$pid" && [ "$pid" != 0 ]; then
  ok "systemctl reload keeps jetfan running as pid $pid"
else
  failed "after systemctl reload jetfan's pid is $(show jetfan@builder.service MainPID), was $pid"
fi
refused_reload() {  # refused_reload WHAT REASON: systemctl reload must fail, and say REASON
  local what=$1 reason=$2 output status_output
  if output=$(inside systemctl reload jetfan@builder.service 2>&1); then
    failed "systemctl reload of $what succeeded"
    return
  fi
  ok "systemctl reload of $what fails: $(echo "$output" | head -n 1)"
  status_output=$(inside systemctl status --no-pager --lines=20 jetfan@builder.service 2>&1) || true
  [[ $status_output == *"$reason"* ]] && ok "systemctl status says why: $reason" ||
    { failed "systemctl status does not say \"$reason\":"; echo "$status_output"; }
  inside journalctl -u jetfan@builder.service -o cat --no-pager | grep -qF "$reason" &&
    ok "the journal says why" || failed "the journal does not say \"$reason\""
}
sed -i 's/durable: node1_builder/durable: node2_builder/' "$config"
refused_reload "a config that changes consumer.durable" "consumer.durable, which only a restart of jetfan can change"
echo "consumer: [" > "$config"
refused_reload "a config that does not parse" "reload refused: /etc/jetfan/builder.yaml has errors"
cp "$dir/builder.yaml.good" "$config"
is jetfan@builder.service SubState running && is jetfan@builder.service MainPID "$pid" &&
  ok "refused reloads leave jetfan running as pid $pid" ||
  failed "after refused reloads jetfan is $(show jetfan@builder.service SubState), pid $(show jetfan@builder.service MainPID)"

# A permanent failure is not retried.
inside systemctl start jetfan@missing.service 2> /dev/null || true
wait_until 30 is jetfan@missing.service ActiveState failed || true
state="$(show jetfan@missing.service ActiveState) $(show jetfan@missing.service ExecMainStatus) $(show jetfan@missing.service NRestarts)"
[ "$state" = "failed 78 0" ] && ok "a missing durable: exit 78, failed, not restarted" ||
  failed "a missing durable: state, exit status, restarts are '$state', expected 'failed 78 0'"

# A stop drains and exits 0; the socket unit removes its socket.
inside systemctl stop jetfan@builder.socket jetfan@builder.service
result="$(show jetfan@builder.service Result) $(show jetfan@builder.service ExecMainStatus)"
[ "$result" = "success 0" ] && ok "systemctl stop: result success, exit 0" || failed "systemctl stop: result and exit status '$result'"
inside test ! -e /run/jetfan/builder.sock && ok "the socket is gone once the socket unit stopped" || failed "/run/jetfan/builder.sock remains"

echo "jetfan's journal (warnings and worse, as journalctl -p warning shows them):"
inside journalctl -u 'jetfan@*' -p warning -o cat --no-pager | tail -n 10 || true
[ "$failures" = 0 ] && echo "OK: jetfan behaves under systemd as its units promise" || { echo "$failures check(s) failed"; exit 1; }
