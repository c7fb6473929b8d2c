#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for SECONDS (default 60).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
scripts/deps.sh
command -v clang++ > /dev/null || apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev
CXX=clang++ JETFAN_BUILD_DIR=build-fuzz scripts/build.sh -DJETFAN_FUZZ=ON
mkdir -p build-fuzz/corpus/parser build-fuzz/corpus/config
printf 'HELLO builder 1\r\nACK 1\r\nNAK 2 100\r\nTERM 3 bad\r\nWIP 4\r\nPING\r\n' > build-fuzz/corpus/parser/commands
printf '\x05READY 1 b 64 a.*\r\nMSG 1 a.b 7 1 12 15\r\nNATS/1.0\r\n\r\nabc\r\nERR x\r\n' > build-fuzz/corpus/parser/frames
cp config/jetfan.example.yaml build-fuzz/corpus/config/
printf 'a.*\n#.c\na.>\n*.#\na.b.c\nc\na\nx.y\n' > build-fuzz/corpus/config/patterns
build-fuzz/parser_fuzz -max_total_time="$seconds" -max_len=8192 build-fuzz/corpus/parser
build-fuzz/config_fuzz -max_total_time="$seconds" -max_len=8192 build-fuzz/corpus/config
