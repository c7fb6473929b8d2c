#!/usr/bin/env bash
# Builds the Debian packages the way Debian builds its own: Debian's compiler and linker flags
# (dpkg-buildflags: hardening, fortify, relro/now) in a build tree of their own, build-deb/ (or
# $JETFAN_DEB_BUILD_DIR), then checks them (packaging/check_deb.sh: contents, lintian).
#   scripts/package.sh     →  build-deb/packages/jetfan_<version>_amd64.deb, libjetfan-client-dev_<version>_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
build=${JETFAN_DEB_BUILD_DIR:-build-deb}
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)" \
  -DCMAKE_EXE_LINKER_FLAGS="$(dpkg-buildflags --get LDFLAGS)" > /dev/null
# Only what the packages hold (and what the package check runs), not the tests.
cmake --build "$build" -j "$(nproc)" --target jetfan jetfan_client jetfan_proto jetfan_package_docs
(cd "$build" && cpack -G DEB -B packages > /dev/null)
version=$(sed -n 's/^project(jetfan VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
packaging/check_deb.sh "$build" "$version"
ls -l "$build"/packages/*.deb
