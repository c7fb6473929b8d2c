#!/usr/bin/env bash
# Prints the path of a node binary of version 20 or later (env.sh's jetfan_node_env finds or
# fetches it). Messages go to stderr.
#   clients/node/node20.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"
jetfan_node_env
command -v node
