#!/usr/bin/env bash
# Times the README's demo command as a newcomer meets it: a fresh Debian 12 root (mmdebstrap, the
# "apt" variant: a minimal system with apt and nothing of this machine's), a fresh clone of this
# repository in it, and `scripts/demo.sh --no-wait` run there as root under systemd-nspawn, with the
# host's network. Prints the demo's wall time; the README's figure comes from here.
#   scripts/time_demo.sh [COMMIT]   (default HEAD; needs root, mmdebstrap and systemd-container)
# The root is made in a temp dir and removed afterwards; making it is not timed.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=${1:-HEAD}
[ "$(id -u)" -eq 0 ] || { echo "scripts/time_demo.sh: needs root (mmdebstrap, systemd-nspawn)" >&2; exit 77; }
for tool in mmdebstrap systemd-nspawn; do
  command -v "$tool" > /dev/null || { echo "scripts/time_demo.sh: needs $tool" >&2; exit 77; }
done
work=$(mktemp -d /tmp/jetfan-time-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "== a fresh Debian 12 root in $work/root (not timed)"
mmdebstrap --quiet --variant=apt --include=ca-certificates,git bookworm "$work/root" > /dev/null
# The host's own extra certificate authorities (where an egress proxy re-signs TLS, say), so that the
# root reaches Debian's and npm's registries as the host does; a machine with direct access needs none.
# Node does not read the system's store: it is told to, as the host tells it.
extra=()
if compgen -G "/usr/local/share/ca-certificates/*.crt" > /dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$work/root/usr/local/share/ca-certificates/"
  chroot "$work/root" update-ca-certificates > /dev/null 2>&1
  extra=(--setenv=NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
fi
git clone --quiet --no-hardlinks . "$work/root/root/jetfan"
git -C "$work/root/root/jetfan" checkout --quiet "$commit"
echo "== scripts/demo.sh --no-wait in it, from $(git rev-parse --short "$commit")"
start=$(date +%s)
# As docker/rootfs_test.sh runs its containers: no machine registration (no system bus needed), the
# unit kept, output on a pipe.
systemd-nspawn --quiet --console=pipe --register=no --keep-unit --as-pid2 --resolv-conf=copy-host "${extra[@]}" \
  --directory="$work/root" --chdir=/root/jetfan scripts/demo.sh --no-wait < /dev/null > "$work/demo.log" 2>&1 ||
  { grep -v 'Attempted to remove disk file system' "$work/demo.log" | tail -40; exit 1; }
seconds=$(($(date +%s) - start))
grep -E "^== |demo: " "$work/demo.log" | tail -5
echo "time_demo: scripts/demo.sh --no-wait took $((seconds / 60)) min $((seconds % 60)) s on a fresh Debian 12 root ($(nproc) cores)"
