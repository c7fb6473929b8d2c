#!/usr/bin/env bash
# Fetches newer nats-server builds from Debian's archive into a cache and prints one line per
# version: "<suite> <version> <path>". Debian 13 (trixie) carries 2.10.x, testing (forky) the
# newest. The system's apt sources and state are not touched: a private sources list and state dir
# under the cache are used, and the package is only extracted (nats-server is a static binary),
# never installed. A suite that cannot be reached, or that has no nats-server, is skipped with one
# line on stderr ("skip: ...") and does not fail the script.
#
#   scripts/nats_servers.sh [suite...]     default suites: trixie forky
#   JETFAN_NATS_CACHE=dir                  default: build/nats-servers
#   JETFAN_DEBIAN_MIRROR=url               default: http://deb.debian.org/debian
#   JETFAN_NATS_REFRESH=1                  ask the archive even if a suite was resolved today
set -uo pipefail
cd "$(dirname "$0")/.."
cache=${JETFAN_NATS_CACHE:-$PWD/build/nats-servers}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(trixie forky)
# shellcheck source=scripts/debian_archive.sh
source scripts/debian_archive.sh

fetch_suite() {
  local suite=$1 apt_dir="$cache/apt/$1"
  # A suite resolved within the last day is not asked again (the test command runs this each time).
  if [ -z "${JETFAN_NATS_REFRESH:-}" ] && [ -n "$(find "$apt_dir/resolved" -mmin -1440 2> /dev/null)" ]; then
    local line
    line=$(cat "$apt_dir/resolved")
    if [ -x "${line##* }" ]; then
      echo "$line"
      return 0
    fi
  fi
  if ! debian_archive "$suite" "$apt_dir"; then
    echo "skip: Debian $suite: $archive_error" >&2
    return 0
  fi
  local opts=("${apt_opts[@]}")
  local version
  version=$(apt-cache "${opts[@]}" show nats-server 2> /dev/null | awk '/^Version:/ {print $2; exit}')
  if [ -z "$version" ]; then
    echo "skip: Debian $suite: it has no nats-server package" >&2
    return 0
  fi
  local upstream=${version#*:}
  upstream=${upstream%%-*}
  upstream=${upstream%%+*}
  local dest="$cache/$upstream"
  if [ ! -x "$dest/nats-server" ]; then
    if ! (cd "$apt_dir/debs" && timeout 300 apt-get "${opts[@]}" -qq download "nats-server=$version") > "$apt_dir/download.log" 2>&1; then
      echo "skip: Debian $suite: nats-server $version could not be downloaded ($(tail -n1 "$apt_dir/download.log"))" >&2
      return 0
    fi
    local deb extract="$apt_dir/extract"
    deb=$(ls "$apt_dir/debs"/nats-server_*.deb | head -n1)
    rm -rf "$extract" && dpkg-deb -x "$deb" "$extract"
    local binary
    binary=$(find "$extract" -type f -name nats-server -perm -u+x | head -n1)
    if [ -z "$binary" ]; then
      echo "skip: Debian $suite: nats-server $version holds no nats-server binary" >&2
      return 0
    fi
    mkdir -p "$dest" && cp "$binary" "$dest/nats-server.partial" && mv "$dest/nats-server.partial" "$dest/nats-server"
    rm -rf "$extract" "$apt_dir/debs"/*.deb
  fi
  if ! "$dest/nats-server" --version > /dev/null 2>&1; then
    echo "skip: Debian $suite: nats-server $version does not run here" >&2
    return 0
  fi
  echo "$suite $upstream $dest/nats-server" | tee "$apt_dir/resolved"
}

for suite in "${suites[@]}"; do fetch_suite "$suite"; done
exit 0
