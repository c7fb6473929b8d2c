#!/usr/bin/env bash
# Installs what building, testing and the demo need, from Debian 12 packages, if it is missing.
#   scripts/deps.sh          everything (the test command)
#   scripts/deps.sh --demo   only what building jetfan and running the demo need (scripts/demo.sh)
set -euo pipefail
# What configuring and building need (the find_package, pkg_check_modules and find_program of the
# CMakeLists.txt files, tests included). docker/Dockerfile's build stage installs exactly these
# (docker/check_packages.sh checks that the two lists agree).
build_packages=(g++ cmake ninja-build pkg-config python3 libnats-dev libboost-dev libspdlog-dev
                libyaml-cpp-dev nlohmann-json3-dev libsystemd-dev libcli11-dev catch2)
# What the demo runs besides: a nats-server (and node, below).
demo_packages=("${build_packages[@]}" nats-server)
# What the tests need besides.
packages=("${demo_packages[@]}" python3-venv
          flit  # flit_core, the Python client's build backend (offline: pip --no-build-isolation)
          prometheus  # promtool checks the /metrics text in the tests
          dpkg-dev lintian man-db python3-yaml systemd-container  # packaging, docker/ and systemd/ checks
          zsh  # daemon/cli_test.cpp parses the zsh completion with zsh -n
          mmdebstrap iproute2  # docker/rootfs_test.sh: the images' root file systems; their network
          openssl  # tests/auth: keys, certificates and JWTs made by the test
          clang-14 libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer and the sanitizers' runtimes
          clang-format-14 clang-tidy-14)  # scripts/lint.sh
[ "${1:-}" = "--demo" ] && packages=("${demo_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The TypeScript client's tests need node and npm; any node that runs npm will do (clients/node/test.sh
# brings Node 20 if this one is older). A node already installed from elsewhere is kept. The demo
# needs neither: clients/node/env.sh fetches Node 20 and npm from the npm registry.
[ "${1:-}" = "--demo" ] || command -v npm > /dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/deps.sh: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
