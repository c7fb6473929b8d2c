#!/usr/bin/env bash
# Checks that the C++ code keeps to its layers. A file may include the headers of its own folder and
# of the folders of lower layers, never those of a higher layer or of another folder of its own
# layer. An include is resolved by the header's file name (no two headers of the tree share one) to
# the folder that holds that header; names that are no header of this tree (<vector>,
# <nats/nats.h>) are not checked.
#   tests/layer_check.sh REPO_ROOT
# Exit 0: every include keeps to the layers; 1: some do not (each named: file, line, include, and
# the two folders); 77: REPO_ROOT is not a git work tree.
set -euo pipefail
root=$1

# The layers, lowest first; the folders of one layer do not include each other.
layers=(
  "handles"                     # RAII owners of descriptors and cnats objects
  "core proto"                  # the pure core; the wire protocol (parsers, encoder, limits)
  "config observe clients/cpp"  # YAML -> Config; status and its renderers; the installed C++ client
  "exec"                        # jetfan exec: on the client, reading jetfan's config
  "daemon examples"             # the I/O around the core; the stand-in controller and example handlers
  "fuzz tests bench"            # everything that runs the rest
)

if ! git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  echo "SKIPPED: $root is not a git work tree"
  exit 77
fi
cd "$root"
sources=('*.cpp' '*.hpp' '*.h' '*.hpp.in')
{
  for rank in "${!layers[@]}"; do
    for folder in ${layers[$rank]}; do echo "L $folder $rank"; done
  done
  git ls-files -- "${sources[@]}" | sed 's/^/F /'
  git grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' -- "${sources[@]}" | sed 's/^/I /'
} | awk '
  function owner(path,    best, f) {  # the longest layer folder that holds path
    best = ""
    for (f in rank) if (index(path, f "/") == 1 && length(f) > length(best)) best = f
    return best
  }
  function base(path) { sub(/.*\//, "", path); sub(/\.in$/, "", path); return path }
  $1 == "L" { rank[$2] = $3; next }
  $1 == "F" {
    path = substr($0, 3)
    folder = owner(path)
    if (folder == "") { printf "FAILED: %s is in no layer: add its folder to the layers in tests/layer_check.sh\n", path; bad = 1; next }
    if (path ~ /\.(hpp|h)(\.in)?$/) {
      name = base(path)
      if (name in home && home[name] != folder) {
        printf "FAILED: two headers named %s (%s/, %s/): an include of it cannot be resolved\n", name, home[name], folder
        bad = 1
      }
      home[name] = folder
    }
    next
  }
  $1 == "I" {
    line = substr($0, 3)
    split(line, part, ":")
    file = part[1]; at = part[2]
    text = substr(line, length(file) + length(at) + 3)
    header = text
    sub(/^[^<"]*[<"]/, "", header); sub(/[>"].*$/, "", header)
    name = base(header)
    if (!(name in home)) next
    from = owner(file); to = home[name]
    if (from == "" || from == to) next
    if (rank[to] > rank[from]) {
      printf "FAILED: %s:%s includes %s, of %s/, a higher layer than %s/\n", file, at, header, to, from; bad = 1
    } else if (rank[to] == rank[from]) {
      printf "FAILED: %s:%s includes %s, of %s/, which is in the same layer as %s/\n", file, at, header, to, from; bad = 1
    }
    checked++
  }
  END {
    if (!bad) printf "OK: %d includes across folders, each of a lower layer\n", checked
    exit bad
  }
'
