#!/usr/bin/env bash
# Builds the Debian packages from a build tree and checks them as a user of them would:
#   packaging/check_deb.sh BUILD_DIR VERSION
# - cpack -G DEB makes jetfan_VERSION_amd64.deb and libjetfan-client-dev_VERSION_amd64.deb;
# - jetfan: its control fields (library Depends from dpkg-shlibdeps, conffiles, maintainer
#   scripts) and exactly the expected files; the packaged binary runs and accepts the packaged
#   example config; its shell completions load;
# - libjetfan-client-dev: a handler compiled and linked with nothing but the unpacked package and
#   its pkg-config file;
# - both: the copyright file says Apache-2.0; jetfan has a Homepage;
# - lintian (Debian's) on both: every tag is printed, any error (E:) fails.
# Exit 77 (skipped) when a tool is missing; scripts/deps.sh installs them.
set -euo pipefail
build=$(cd "$1" && pwd)
version=$2
for tool in cpack dpkg-deb dpkg-shlibdeps lintian pkg-config g++; do
  if ! command -v "$tool" > /dev/null; then
    echo "SKIPPED: $tool is not installed (scripts/deps.sh installs it; lintian and dpkg-shlibdeps are the Debian packages lintian and dpkg-dev)"
    exit 77
  fi
done

out=$(mktemp -d /tmp/jetfan-deb.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

(cd "$build" && cpack -G DEB -B "$out" > "$out/cpack.log" 2>&1) || { cat "$out/cpack.log"; fail "cpack -G DEB"; }
daemon_deb=$out/jetfan_${version}_amd64.deb
dev_deb=$out/libjetfan-client-dev_${version}_amd64.deb
for deb in "$daemon_deb" "$dev_deb"; do
  [ -f "$deb" ] || { ls "$out"; fail "cpack made no $(basename "$deb")"; }
done
echo "built $(basename "$daemon_deb") and $(basename "$dev_deb")"

# --- jetfan: control fields
field() { dpkg-deb -f "$1" "$2"; }
[ "$(field "$daemon_deb" Package)" = jetfan ] || fail "Package is not jetfan"
[ "$(field "$daemon_deb" Version)" = "$version" ] || fail "Version is not $version"
[ "$(field "$daemon_deb" Architecture)" = amd64 ] || fail "Architecture is not amd64"
depends=$(field "$daemon_deb" Depends)
echo "Depends: $depends"
# Every library the binary needs directly must be a dependency (dpkg-shlibdeps found them): the
# package that holds it, or a virtual package it provides (libspdlog1.10 provides libspdlog1.10-fmt9).
package_of() {  # the package that installed a library path; Debian 12 registers /lib or /usr/lib
  local path candidates candidate
  path=$(readlink -f "$1")
  candidates=("$1" "$path" "${1#/usr}" "${path#/usr}" "/usr${1#/usr}" "/usr${path#/usr}")
  for candidate in "${candidates[@]}"; do
    dpkg -S "$candidate" 2> /dev/null | awk -F: 'NR == 1 {print $1}' | grep . && return 0
  done
  return 1
}
depends_names=" $(echo "$depends" | sed 's/([^)]*)//g; s/[,|]/ /g' | tr -s ' ') "
for library in $(readelf -d "$build/daemon/jetfan" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  # awk reads to the end: exiting early would kill ldconfig with SIGPIPE, and pipefail would stop the
  # script without a word.
  path=$(ldconfig -p | awk -v lib="$library" '$1 == lib && /x86-64/ && !found {print $NF; found = 1}')
  [ -n "$path" ] || fail "cannot resolve $library"
  package=$(package_of "$path") || fail "no package holds $path"
  provides=$(dpkg-query -W -f='${Provides}' "$package" | sed 's/([^)]*)//g; s/,/ /g')
  found=""
  for name in $package $provides; do
    case $depends_names in *" $name "*) found=$name;; esac
  done
  [ -n "$found" ] || fail "Depends lacks $package (for $library)"
done
for needed in "systemd | systemd-standalone-sysusers | systemd-sysusers"; do
  [[ $depends == *"$needed"* ]] || fail "Depends lacks $needed"
done
# (grep reads all its input, never -q, so that no writer in a pipeline dies of SIGPIPE under pipefail)
control=$(dpkg-deb --ctrl-tarfile "$daemon_deb" | tar -t)
dpkg-deb --ctrl-tarfile "$daemon_deb" | tar -x -O ./conffiles | grep -x /etc/jetfan/example.yaml > /dev/null ||
  fail "/etc/jetfan/example.yaml is not a conffile"
for script in postinst prerm postrm; do
  grep -x "./$script" <<< "$control" > /dev/null || fail "no $script"
done
dpkg-deb --ctrl-tarfile "$daemon_deb" | tar -x -O ./postinst | grep "systemd-sysusers.*jetfan.conf" > /dev/null ||
  fail "postinst does not create the user with systemd-sysusers"

# --- jetfan: exactly these files (directories aside), owned by root
expected="./etc/jetfan/example.yaml
./lib/systemd/system/jetfan@.service
./lib/systemd/system/jetfan@.socket
./usr/bin/jetfan
./usr/lib/sysusers.d/jetfan.conf
./usr/lib/tmpfiles.d/jetfan.conf
./usr/share/bash-completion/completions/jetfan
./usr/share/doc/jetfan/changelog.gz
./usr/share/doc/jetfan/copyright
./usr/share/jetfan/jetfan.schema.json
./usr/share/man/man1/jetfan.1.gz
./usr/share/zsh/vendor-completions/_jetfan"
actual=$(dpkg-deb -c "$daemon_deb" | awk '$1 !~ /^d/ {print $6}' | sort)
[ "$actual" = "$expected" ] || { diff <(echo "$expected") <(echo "$actual") || true; fail "jetfan's files differ (- expected, + packaged)"; }
dpkg-deb -c "$daemon_deb" | awk '$2 != "root/root" {bad = 1; print} END {exit bad}' || fail "files not owned by root"

# --- jetfan: the packaged binary runs, is stripped, and accepts the packaged example config
root=$out/root
dpkg-deb -x "$daemon_deb" "$root"
[ "$("$root/usr/bin/jetfan" --version)" = "jetfan $version" ] || fail "the packaged jetfan --version is not $version"
readelf -S "$root/usr/bin/jetfan" | grep '\.debug_info' > /dev/null && fail "the packaged binary is not stripped"
"$root/usr/bin/jetfan" check --config "$root/etc/jetfan/example.yaml" > /dev/null ||
  fail "the packaged example config does not pass jetfan check"
bash --norc --noprofile -c "source '$root/usr/share/bash-completion/completions/jetfan' && complete -p jetfan" |
  grep -x "complete -F _jetfan jetfan" > /dev/null || fail "the packaged bash completion does not complete jetfan"
head -1 "$root/usr/share/zsh/vendor-completions/_jetfan" | grep -x "#compdef jetfan" > /dev/null ||
  fail "the packaged zsh completion does not start with #compdef jetfan"
zcat "$root/usr/share/man/man1/jetfan.1.gz" | grep "^\.TH JETFAN 1 .*jetfan $version" > /dev/null || fail "jetfan.1 does not name version $version"

# --- libjetfan-client-dev: a handler builds from the package alone
dpkg-deb -x "$dev_deb" "$out/dev"

# --- both: Apache-2.0, in the machine-readable copyright file Debian's tools read
for copyright in "$root/usr/share/doc/jetfan/copyright" "$out/dev/usr/share/doc/libjetfan-client-dev/copyright"; do
  grep -x "License: Apache-2.0" "$copyright" > /dev/null || fail "$copyright does not say License: Apache-2.0"
done
[ -n "$(field "$daemon_deb" Homepage)" ] || fail "jetfan has no Homepage field"
pc_dir=$(dirname "$(find "$out/dev" -name jetfan-client.pc)")
[ -n "$pc_dir" ] || fail "libjetfan-client-dev has no jetfan-client.pc"
case $pc_dir in */usr/lib/x86_64-linux-gnu/pkgconfig) ;; *) fail "jetfan-client.pc is not in the multiarch directory";; esac
cat > "$out/handler.cpp" <<'CPP'
#include <jetfan/handler_client.hpp>
#include <cstdio>
int main(int argc, char** argv) {
  try {
    jetfan::ClientOptions options;
    options.reconnect = false;
    options.connect_timeout = std::chrono::milliseconds(0);
    jetfan::HandlerClient client(argv[1], "builder", options);
    while (auto message = client.next()) client.ack(message->id);
  } catch (const jetfan::ClientError& e) {
    std::printf("ClientError: %s\n", e.what());
    return 3;
  }
  return argc;
}
CPP
# The compiler's default language (gnu++17 for Debian 12's g++) must do: handlers need not be C++20.
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs jetfan-client)
g++ -o "$out/handler" "$out/handler.cpp" $flags || fail "a handler does not build with \`pkg-config --cflags --libs jetfan-client\`: $flags"
# With no jetfan to talk to it must fail the way the client documents (ClientError, exit 3).
handler_output=$("$out/handler" "$out/no-such.sock") && status=0 || status=$?
[ "$status" = 3 ] && [[ $handler_output == ClientError:* ]] ||
  fail "the handler built from the package does not run: exit $status, \"$handler_output\""
echo "OK: a handler builds from libjetfan-client-dev alone ($flags)"

# --- lintian
echo "lintian --pedantic -I -E (running as $(id -un)):"
lintian --pedantic -I -E --tag-display-limit 0 "$daemon_deb" "$dev_deb" > "$out/lintian.txt" 2>&1 && status=0 || status=$?
grep -v -e '^running with root privileges' -e '^N:' "$out/lintian.txt" || true
# lintian exits 1 when it emitted error tags, 2 and above when it could not check.
if grep -q '^E:' "$out/lintian.txt" || [ "$status" = 1 ]; then fail "lintian reports errors"; fi
[ "$status" = 0 ] || fail "lintian failed (exit $status)"
echo "OK: packages checked; lintian reports no errors"
