#!/usr/bin/env bash
# shellcheck disable=SC2154,SC2155,SC2178  # describe.py's variables, from eval, named by namerefs
# Checks docker/Dockerfile's package lists against what they are for, on this Debian 12 host:
#   docker/check_packages.sh build SOURCE_DIR
#     the build stage installs exactly build_packages of scripts/deps.sh (which the build here uses),
#     and builds every target a later stage copies from it;
#   docker/check_packages.sh runtime SOURCE_DIR BUILD_DIR
#     the runtime stage installs exactly the packages of the libraries that the binaries the
#     runtime and demo stages copy from the build stage name themselves (readelf's NEEDED, found
#     with ldd, owned as dpkg -S says), except libc6 and libgcc-s1, which every Debian image has:
#     nothing unused, no -dev package, and nothing left to another package's dependencies. That
#     the image then has every library they load, theirs included, docker/rootfs_test.sh shows by
#     building it and running them in it.
# Exit 0: true; 1: not (each FAILED line says why); 77: not Debian 12 (runtime only).
set -euo pipefail
mode=$1
source_dir=$(cd "$2" && pwd)
description=$("$source_dir/docker/describe.py" "$source_dir/docker")
eval "$description"
failures=0
failed() { echo "FAILED: $*"; failures=$((failures + 1)); }
sorted() { printf '%s\n' "$@" | sort -u; }

# The files the later stages copy from the build stage (SOURCE of each --from=build COPY).
from_build=()
for stage in "${stages[@]}"; do
  declare -n copies=stage_${stage//[^a-zA-Z0-9_]/_}_copies
  for ((i = 0; i < ${#copies[@]}; i += 3)); do
    [ "${copies[i]}" = build ] && from_build+=("${copies[i + 1]}")
  done
  unset -n copies
done

case $mode in
build)
  eval "$(sed -n '/^build_packages=(/,/)/p' "$source_dir/scripts/deps.sh")"  # sets build_packages
  [ "${#build_packages[@]}" -gt 0 ] || failed "scripts/deps.sh has no build_packages=(...)"
  extra=$(comm -13 <(sorted "${build_packages[@]}") <(sorted "${stage_build_packages[@]}"))
  lacking=$(comm -23 <(sorted "${build_packages[@]}") <(sorted "${stage_build_packages[@]}"))
  [ -z "$extra" ] || failed "the build stage installs ${extra//$'\n'/ }, which build_packages in scripts/deps.sh lacks"
  [ -z "$lacking" ] || failed "the build stage lacks ${lacking//$'\n'/ } (build_packages in scripts/deps.sh has it)"
  for file in "${from_build[@]}"; do
    [[ " ${stage_build_targets[*]} " == *" $(basename "$file") "* ]] ||
      failed "a stage copies $file from the build stage, whose cmake --build --target list lacks $(basename "$file")"
  done
  echo "build stage installs: ${stage_build_packages[*]}"
  ;;
runtime)
  build_dir=$(cd "$3" && pwd)
  if ! grep -qs '^12' /etc/debian_version; then
    echo "SKIPPED: this check maps libraries to Debian 12 packages and must run on Debian 12"
    exit 77
  fi
  needed=()
  for file in "${from_build[@]}"; do
    binary=$build_dir/${file#/build/}
    if [ ! -f "$binary" ]; then failed "a stage copies $file from the build stage: no $binary"; continue; fi
    resolved=$(ldd "$binary")
    for soname in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      # The dynamic loader itself (named when code calls into it, as libstdc++'s inline std::call_once
      # does for __tls_get_addr): ldd shows it without "=>", and libc6 holds it.
      [[ $soname == ld-linux* ]] && continue
      path=$(awk -v l="$soname" '$1 == l && $2 == "=>" { print $3 }' <<< "$resolved")
      if [ -z "$path" ] || [ "$path" = not ]; then failed "$(basename "$binary"): ldd does not find $soname"; continue; fi
      package=""  # dpkg registers some libraries under /lib, some under /usr/lib
      for candidate in "$path" "$(realpath "$path")" "/usr${path#/usr}" "${path#/usr}"; do
        package=$(dpkg -S "$candidate" 2> /dev/null | awk -F: 'NR == 1 { print $1 }') && [ -n "$package" ] && break
      done
      [ -n "$package" ] || { failed "no package holds $path (dpkg -S)"; continue; }
      printf '%-24s %-20s %s\n' "$(basename "$binary")" "$soname" "$package"
      [[ $package =~ ^(libc6|libgcc-s1)$ ]] || needed+=("$package")
    done
  done
  echo "runtime stage installs: ${stage_runtime_packages[*]}"
  for package in $(comm -23 <(sorted "${needed[@]}") <(sorted "${stage_runtime_packages[@]}")); do
    failed "the binaries need a library of $package; the runtime stage's apt-get install must name it"
  done
  for package in $(comm -13 <(sorted "${needed[@]}") <(sorted "${stage_runtime_packages[@]}")); do
    failed "the runtime stage installs $package, whose libraries no binary it holds names"
  done
  ;;
*) echo "usage: docker/check_packages.sh build SOURCE_DIR | runtime SOURCE_DIR BUILD_DIR" >&2; exit 64 ;;
esac
[ "$failures" = 0 ] && echo "OK: the $mode stage's packages are what they are for" || exit 1
