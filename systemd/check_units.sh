#!/usr/bin/env bash
# Checks the systemd units as installed, with systemd's own tools (no systemd needs to run).
#   systemd/check_units.sh verify|security BUILD_DIR
# Installs BUILD_DIR into a staging root laid out like Debian 12 (merged /usr), adds what the
# units need from other packages (systemd's targets and slices), creates the jetfan
# user and /run/jetfan there with systemd-sysusers and systemd-tmpfiles, then:
#   verify    systemd-analyze verify --root on jetfan@builder.service and .socket: no output at all
#             (every warning fails), man jetfan(1) found in the root; the installed example config
#             passes `jetfan check`.
#   security  systemd-analyze security --offline: prints the table; fails above exposure 1.9.
# Either first checks that tmpfiles.d, jetfan@.socket and jetfan@.service give /run/jetfan one mode.
# Exit 77 (skipped) when systemd-analyze is missing.
set -euo pipefail
mode=$1
build=$(cd "$2" && pwd)
for tool in systemd-analyze systemd-sysusers systemd-tmpfiles; do
  if ! command -v "$tool" > /dev/null; then
    echo "SKIPPED: $tool is not installed (Debian package systemd)"
    exit 77
  fi
done

stage=$(mktemp -d /tmp/jetfan-units.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/bin" "$stage/usr/sbin" "$stage/usr/lib" "$stage/usr/lib64"
for dir in bin sbin lib lib64; do ln -s "usr/$dir" "$stage/$dir"; done
DESTDIR=$stage cmake --install "$build" --prefix /usr > "$stage.install.log" 2>&1 ||
  { cat "$stage.install.log"; rm -f "$stage.install.log"; echo "FAILED: cmake --install $build"; exit 1; }
rm -f "$stage.install.log"

units=$stage/usr/lib/systemd/system
for unit in jetfan@.service jetfan@.socket; do
  [ -f "$units/$unit" ] || { echo "FAILED: $unit was not installed to /lib/systemd/system"; exit 1; }
done
# Units from other packages that ours depend on. Copies: --root resolves even relative links
# inside the root.
for file in /usr/lib/systemd/system/*.target /usr/lib/systemd/system/*.slice; do
  [ -e "$units/$(basename "$file")" ] || cp -L "$file" "$units/" 2> /dev/null || true
done
# ExecReload= runs /usr/bin/jetfan itself, which the staging root has.

output=$(systemd-sysusers --root="$stage" 2>&1) || { echo "$output"; echo "FAILED: systemd-sysusers"; exit 1; }
output=$(systemd-tmpfiles --root="$stage" --create "$stage/usr/lib/tmpfiles.d/jetfan.conf" 2>&1) ||
  { echo "$output"; echo "FAILED: systemd-tmpfiles"; exit 1; }
grep -q '^jetfan:x:[0-9]*:[0-9]*:' "$stage/etc/passwd" ||
  { echo "FAILED: systemd-sysusers did not create the user jetfan from sysusers.d/jetfan.conf"; exit 1; }
perms=$(stat -c '%a %U' "$stage/run/jetfan" 2> /dev/null || true)
[ "${perms%% *}" = 750 ] ||
  { echo "FAILED: systemd-tmpfiles made /run/jetfan '$perms', expected mode 750"; exit 1; }
# Whoever makes /run/jetfan gives it one mode: tmpfiles.d, jetfan@.socket when it is missing
# (DirectoryMode=), jetfan@.service (RuntimeDirectory=jetfan, RuntimeDirectoryMode=).
tmpfiles_mode=$(awk '$1 == "d" && $2 == "/run/jetfan" { print $3 }' "$stage/usr/lib/tmpfiles.d/jetfan.conf")
socket_mode=$(sed -n 's/^DirectoryMode=//p' "$units/jetfan@.socket")
service_mode=$(sed -n 's/^RuntimeDirectoryMode=//p' "$units/jetfan@.service")
listen=$(sed -n 's/^ListenStream=//p' "$units/jetfan@.socket")
[ "$(dirname "$listen")" = /run/jetfan ] ||
  { echo "FAILED: jetfan@.socket listens on $listen, not in /run/jetfan"; exit 1; }
grep -qx 'RuntimeDirectory=jetfan' "$units/jetfan@.service" ||
  { echo "FAILED: jetfan@.service has no RuntimeDirectory=jetfan"; exit 1; }
for pair in "jetfan@.socket DirectoryMode=$socket_mode" "jetfan@.service RuntimeDirectoryMode=$service_mode"; do
  value=${pair#*=}
  [ -n "$tmpfiles_mode" ] && [ -n "$value" ] && [ "$((8#$value))" = "$((8#$tmpfiles_mode))" ] ||
    { echo "FAILED: ${pair% *} has ${pair#* }, but tmpfiles.d/jetfan.conf makes /run/jetfan" \
           "${tmpfiles_mode:-(no d line for it)}: whoever makes the directory must give it the same mode"; exit 1; }
done
echo "/run/jetfan: mode $tmpfiles_mode in tmpfiles.d, jetfan@.socket (DirectoryMode) and jetfan@.service (RuntimeDirectoryMode)"

case $mode in
  verify)
    man_check=(--man=yes)
    command -v man > /dev/null || { man_check=(--man=no); echo "note: man is not installed; jetfan(1) not checked"; }
    output=$(cd "$stage" && MANPATH=$stage/usr/share/man systemd-analyze verify "${man_check[@]}" --root="$stage" \
               jetfan@builder.service jetfan@builder.socket 2>&1) && status=0 || status=$?
    echo "systemd-analyze verify --root=STAGE jetfan@builder.service jetfan@builder.socket: exit $status"
    [ -z "$output" ] || echo "$output"
    [ "$status" = 0 ] && [ -z "$output" ] || { echo "FAILED: systemd-analyze verify reported the above"; exit 1; }
    # The unit's ExecStart, as installed, accepts the config the package ships.
    exec_start=$(sed -n 's/^ExecStart=//p' "$units/jetfan@.service")
    [ "$exec_start" = "/usr/bin/jetfan serve --config /etc/jetfan/%i.yaml" ] ||
      { echo "FAILED: unexpected ExecStart=$exec_start"; exit 1; }
    "$stage/usr/bin/jetfan" check --config "$stage/etc/jetfan/example.yaml"
    echo "OK: units verified in the staging root"
    ;;
  security)
    output=$(systemd-analyze security --offline=yes --root="$stage" --threshold=19 jetfan@builder.service 2>&1) &&
      status=0 || status=$?
    echo "$output" | grep -E '✗|Overall'
    exposure=$(echo "$output" | sed -n 's/.*Overall exposure level for jetfan@builder.service: \([0-9.]*\).*/\1/p')
    echo "exposure: ${exposure:-unknown} (systemd-analyze security --offline=yes --root=STAGE jetfan@builder.service)"
    [ -n "$exposure" ] || { echo "$output"; echo "FAILED: no exposure level in the output"; exit 1; }
    [ "$status" = 0 ] || { echo "FAILED: exposure $exposure is not below 2.0"; exit 1; }
    ;;
  *)
    echo "usage: $0 verify|security BUILD_DIR" >&2
    exit 64
    ;;
esac
