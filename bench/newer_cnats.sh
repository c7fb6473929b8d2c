#!/usr/bin/env bash
# Instructions per message inside jetfan (bench/run.sh --instructions) with Debian 12's cnats and
# with a newer one, side by side: jetfan built once more against the libnats-dev of a newer Debian
# suite (trixie: 3.10.1, forky: 3.14), fetched from its archive (scripts/debian_archive.sh), only
# extracted, never installed, and run from its own directory with LD_LIBRARY_PATH.
#
#   bench/newer_cnats.sh [SUITE]     default: trixie; builds into build-cnats-SUITE/
#
# Those suites' libnats is built against a newer glibc than Debian 12's 2.36; all it takes from
# there are C23's __isoc23_sscanf and __isoc23_strto[u]l[l] (glibc 2.38), which this script gives it
# from a shim built here (the C17 functions, which differ only in parsing "0b" prefixes, which cnats
# never reads) and marks that glibc version weak so the loader does without it. A library that needs more
# of a newer glibc is skipped with a line saying which symbols. Instruction counts, not times, so
# this can run beside other work; the figures to compare are those "without lock acquisition".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
suite=${1:-trixie}
work=$root/build-cnats-$suite
mkdir -p "$work"
command -v patchelf > /dev/null || apt-get install -y -q --no-install-recommends patchelf
# shellcheck source=scripts/debian_archive.sh
source scripts/debian_archive.sh
if ! debian_archive "$suite" "$work/apt"; then
  echo "skip: Debian $suite: $archive_error"
  exit 0
fi
dev=$(apt-cache "${apt_opts[@]}" show libnats-dev 2> /dev/null | awk '/^Version:/ {v = $2} /^Depends:/ {print v, $2; exit}')
read -r version runtime <<< "$dev"
if [ -z "${runtime:-}" ]; then
  echo "skip: Debian $suite has no libnats-dev"
  exit 0
fi
rm -rf "${work:?}/root" "${work:?}/lib" "${work:?}/apt/debs"/*.deb
(cd "$work/apt/debs" && apt-get "${apt_opts[@]}" -qq download "libnats-dev=$version" "$runtime=$version" 2> /dev/null)
for deb in "$work/apt/debs"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
library=$(find "$work/root" -name 'libnats.so.*.*' -type f | head -n1)
soname=$(objdump -p "$library" | awk '/SONAME/ {print $2}')
mkdir -p "$work/lib" "$work/pkgconfig"
cp "$library" "$work/lib/$soname"
ln -sf "$soname" "$work/lib/libnats.so"

# What the library wants of glibc beyond what this glibc has.
have=$(ldd --version | awk 'NR == 1 {print $NF}')
newer=$(objdump -T "$work/lib/$soname" | awk -v have="$have" '$0 ~ /\(GLIBC_[0-9.]+\)/ {
  match($0, /GLIBC_[0-9.]+/); v = substr($0, RSTART + 6, RLENGTH - 6); split(v, a, "."); split(have, b, ".")
  if (a[1] > b[1] || (a[1] == b[1] && a[2] > b[2])) print "GLIBC_" v, $NF }')
if [ -n "$newer" ]; then
  shimmed=" __isoc23_sscanf __isoc23_strtol __isoc23_strtoll __isoc23_strtoul __isoc23_strtoull "
  unknown=$(awk -v shimmed="$shimmed" 'index(shimmed, " " $2 " ") == 0 {print $2}' <<< "$newer")
  if [ -n "$unknown" ]; then
    echo "skip: cnats $version from Debian $suite needs more of a newer glibc than $have has: $(tr '\n' ' ' <<< "$unknown")"
    exit 0
  fi
  cat > "$work/c23_shim.c" << 'EOF'
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
int __isoc23_sscanf(const char* text, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int n = vsscanf(text, format, args);
  va_end(args);
  return n;
}
long __isoc23_strtol(const char* text, char** end, int base) { return strtol(text, end, base); }
long long __isoc23_strtoll(const char* text, char** end, int base) { return strtoll(text, end, base); }
unsigned long __isoc23_strtoul(const char* text, char** end, int base) { return strtoul(text, end, base); }
unsigned long long __isoc23_strtoull(const char* text, char** end, int base) { return strtoull(text, end, base); }
EOF
  cc -O2 -shared -fPIC -o "$work/lib/libc23_shim.so" "$work/c23_shim.c"
  unversion=()
  while read -r _ symbol; do unversion+=(--clear-symbol-version "$symbol"); done <<< "$newer"
  # shellcheck disable=SC2016  # $ORIGIN is the loader's, not the shell's
  patchelf --add-needed libc23_shim.so --set-rpath '$ORIGIN' "${unversion[@]}" "$work/lib/$soname"
  # The loader refuses a library that needs a glibc version it lacks, unless that need is weak.
  mapfile -t versions < <(awk '{print $1}' <<< "$newer" | sort -u)
  python3 - "$work/lib/$soname" "${versions[@]}" << 'EOF'
import struct, sys
path, versions = sys.argv[1], {v.encode() for v in sys.argv[2:]}
elf = bytearray(open(path, "rb").read())
shoff, = struct.unpack_from("<Q", elf, 0x28)
shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
for _, kind, _, _, offset, _, link, count, _, _ in sections:
    if kind != 0x6FFFFFFE:  # SHT_GNU_verneed
        continue
    strings = sections[link][4]
    need = offset
    for _ in range(count):
        _, aux_count, _, aux, next_need = struct.unpack_from("<HHIII", elf, need)
        entry = need + aux
        for _ in range(aux_count):
            _, flags, _, name, next_aux = struct.unpack_from("<IHHII", elf, entry)
            if bytes(elf[strings + name:elf.index(b"\0", strings + name)]) in versions:
                struct.pack_into("<H", elf, entry + 4, flags | 0x2)  # VER_FLG_WEAK
            entry += next_aux
        need += next_need
open(path, "wb").write(elf)
EOF
fi
missing=$(LD_LIBRARY_PATH=$work/lib ldd "$work/lib/$soname" 2> /dev/null | awk '/=> not found/ {print $1}')
if [ -n "$missing" ]; then
  echo "skip: cnats $version from Debian $suite needs libraries Debian 12 does not have: $(tr '\n' ' ' <<< "$missing")"
  exit 0
fi
# shellcheck disable=SC2016  # ${libdir} and ${includedir} are pkg-config's
printf 'libdir=%s\nincludedir=%s\n\nName: libnats\nDescription: cnats from Debian %s\nVersion: %s\nCflags: -I${includedir}\nLibs: -L${libdir} -lnats\n' \
  "$work/lib" "$work/root/usr/include" "$suite" "${version%%-*}" > "$work/pkgconfig/libnats.pc"
PKG_CONFIG_PATH=$work/pkgconfig cmake -S . -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" > /dev/null
cmake --build "$work/build" --target jetfan -j "$(nproc)" > /dev/null
loaded=$(LD_LIBRARY_PATH=$work/lib ldd "$work/build/daemon/jetfan" 2> /dev/null | awk '/libnats.* => / {print $3}')

echo "== Debian 12's cnats ($(dpkg-query -W -f '${Version}' libnats-dev))"
bench/run.sh --instructions 2>&1 | grep -E "patterns:"
echo "== cnats $version from Debian $suite ($loaded)"
JETFAN_BIN=$work/build/daemon/jetfan LD_LIBRARY_PATH=$work/lib bench/run.sh --instructions 2>&1 | grep -E "patterns:"
