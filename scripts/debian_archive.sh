# shellcheck shell=bash disable=SC2034  # apt_opts and archive_error are for the caller
# Sourced: a private view of one Debian suite's archive, for fetching a newer package than
# Debian 12 has without touching the system's apt sources or state (scripts/nats_servers.sh,
# bench/newer_cnats.sh). Packages fetched so are extracted, never installed.
#
#   debian_archive SUITE DIR   writes DIR's sources list and state, runs apt-get update, and sets
#                              the array apt_opts for apt-get and apt-cache; 1 (the reason in
#                              archive_error) if the archive cannot be reached
#   JETFAN_DEBIAN_MIRROR=url   default: http://deb.debian.org/debian

debian_archive() {
  local suite=$1 dir=$2 keyrings
  local mirror=${JETFAN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  # Testing is signed by the current stable's keys; Debian 12 ships them in debian-archive-keyring.
  keyrings=$(ls /usr/share/keyrings/debian-archive-*.gpg 2> /dev/null | tr '\n' ' ')
  mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/etc/sources.list.d" "$dir/etc/preferences.d" "$dir/debs"
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$mirror" "$suite" "$keyrings" \
    > "$dir/etc/sources.list.d/debian.sources"
  : > "$dir/etc/sources.list"
  local arch
  arch=$(dpkg --print-architecture)
  apt_opts=(-o "Dir::State=$dir" -o "Dir::State::Lists=$dir/lists" -o "Dir::State::status=/dev/null"
    -o "Dir::Cache=$dir" -o "Dir::Cache::archives=$dir/archives"
    -o "Dir::Etc::SourceList=$dir/etc/sources.list" -o "Dir::Etc::SourceParts=$dir/etc/sources.list.d"
    -o "Dir::Etc::Preferences=$dir/etc/preferences" -o "Dir::Etc::PreferencesParts=$dir/etc/preferences.d"
    -o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Acquire::Languages=none"
    -o "Acquire::Retries=1" -o "Acquire::http::Timeout=20" -o "Debug::NoLocking=1"
    -o "APT::Sandbox::User=$(id -un)")
  archive_error=""
  if ! timeout 300 apt-get "${apt_opts[@]}" -qq update > "$dir/update.log" 2>&1 ||
    grep -qE '^(W|E): ' "$dir/update.log"; then
    archive_error="the archive could not be reached ($(grep -m1 -E '^(W|E): ' "$dir/update.log" || echo "apt-get update failed"))"
    return 1
  fi
}
