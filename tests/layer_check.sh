#!/usr/bin/env bash
# Checks that the C++ code keeps to its layers, and that only the files listed below see cnats.
#   - Layers: a file may include the headers of its own folder and of the folders of lower layers,
#     never those of a higher layer or of another folder of its own layer. An include is resolved by
#     the header's file name (no two headers of the tree share one) to the folder that holds that
#     header; names that are no header of this tree (<vector>, <nats/nats.h>) are not checked here.
#   - cnats: a file that includes a <nats/...> header, or a header of this tree that does (directly
#     or through others of the tree), must be one of cnats_files; and each entry of cnats_files must
#     still be such a file (or, for a folder entry, hold one).
#   tests/layer_check.sh REPO_ROOT
# Exit 0: every include keeps to the layers and to cnats_files; 1: some do not (each named: file,
# line, include, and the two folders or the list to edit); 77: REPO_ROOT is not a git work tree.
set -euo pipefail
root=$1

# The layers, lowest first; the folders of one layer do not include each other.
layers=(
  "handles"                     # RAII owners of descriptors and cnats objects
  "core proto jetstream"        # the pure core; the wire protocol (parsers, encoder, limits); JetStream's API
  "config observe clients/cpp"  # YAML -> Config; status and its renderers; the installed C++ client
  "exec"                        # jetfan exec: on the client, reading jetfan's config
  "daemon examples"             # the I/O around the core; the stand-in controller and example handlers
  "fuzz tests bench"            # everything that runs the rest
)

# The files that may see cnats: include a <nats/...> header, or a header of this tree that does. An
# entry is a file, or a folder ending in / for every file under it. A file not covered here that
# sees cnats fails, and so does an entry that no longer sees it: edit this list, with a line saying
# why the file needs cnats. The dispatcher, and every folder of a layer below daemon/ but handles/
# (core/, proto/, config/, observe/, clients/cpp/, exec/), stay off it.
cnats_files=(
  handles/nats_handles.hpp        # RAII owners of cnats objects
  daemon/nats_auth.hpp            # NATS authentication and TLS: cnats options
  daemon/nats_auth.cpp            #   its implementation
  daemon/nats_auth_test.cpp       #   its unit test
  daemon/nats_event_loop.hpp      # cnats's external event loop on the io thread
  daemon/nats_event_loop.cpp      #   its implementation
  daemon/jetstream_reader.hpp     # the Upstream over cnats: pulls, acks, publishes
  daemon/jetstream_reader.cpp     #   its implementation
  daemon/spent_messages.hpp       # natsMsg handles destroyed per io turn
  daemon/spent_messages.cpp       #   its implementation
  daemon/spent_messages_test.cpp  #   its test
  daemon/nats_blocking.hpp        # the connection and a wait off the io thread, for requests before serving
  daemon/jetstream_admin.hpp      # the consumer's info and dead-letter streams, asked before serving
  daemon/jetstream_admin.cpp      #   its implementation
  daemon/stream_reader.hpp        # messages read straight from the stream (MSG.GET) at startup
  daemon/stream_reader.cpp        #   its implementation
  daemon/ledger_reader.hpp        # the confirmation ledger's records read at start (cnats's key-value watcher)
  daemon/ledger_reader.cpp        #   its implementation
  daemon/daemon.hpp               # owns the JetStreamReader
  daemon/daemon.cpp               #   its implementation: checks the credentials with nats_auth
  daemon/cli.cpp                  # the credential checks (nats_auth); nats_CloseAndWait at exit
  daemon/connect_check.cpp        # check --connect: serve's binding checks (JetStreamReader, JetStreamAdmin)
  daemon/dev_sandbox.cpp          # jetfan dev: makes the sandbox's stream and durable, publishes typed lines
  daemon/cli_test.cpp             #   its test: the warnings about exposed secret files
  examples/mesh_controller.hpp    # the stand-in controller: creates streams and consumers over cnats
  examples/mesh_controller.cpp    #   its implementation
  examples/demo_controller_main.cpp  # its command line
  bench/jetfan_bench.cpp          # the benchmark's publisher and direct reader (A)
  bench/publish_bench.cpp         # bench/publish.sh: the direct cnats publisher (P-A) and its stream set-up
  tests/                          # integration and fault tests drive a real nats-server
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
  printf 'C %s\n' "${cnats_files[@]}"
  git ls-files -- "${sources[@]}" | sed 's/^/F /'
  git grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' -- "${sources[@]}" | sed 's/^/I /'
} | awk '
  function owner(path,    best, f) {  # the longest layer folder that holds path
    best = ""
    for (f in rank) if (index(path, f "/") == 1 && length(f) > length(best)) best = f
    return best
  }
  function base(path) { sub(/.*\//, "", path); sub(/\.in$/, "", path); return path }
  function listed(path,    i) {  # is path one of cnats_files, or under a folder entry of it?
    for (i = 1; i <= entries; i++)
      if (path == entry[i] || (entry[i] ~ /\/$/ && index(path, entry[i]) == 1)) return 1
    return 0
  }
  $1 == "L" { rank[$2] = $3; next }
  $1 == "C" { entry[++entries] = $2; next }
  $1 == "F" {
    path = substr($0, 3)
    files[++nfiles] = path
    folder = owner(path)
    if (folder == "") { printf "FAILED: %s is in no layer: add its folder to the layers in tests/layer_check.sh\n", path; bad = 1; next }
    if (path ~ /\.(hpp|h)(\.in)?$/) {
      name = base(path)
      if (name in home && home[name] != folder) {
        printf "FAILED: two headers named %s (%s/, %s/): an include of it cannot be resolved\n", name, home[name], folder
        bad = 1
      }
      home[name] = folder; header_path[name] = path
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
    edges++; edge_file[edges] = file; edge_at[edges] = at; edge_header[edges] = header
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
    # Which files see cnats: those that include <nats/...>, then, until nothing changes, those that
    # include a header of this tree that sees it. why[] is the include that first made a file one.
    for (e = 1; e <= edges; e++)
      if (edge_header[e] ~ /^nats\// && !(edge_file[e] in why))
        why[edge_file[e]] = sprintf("%s:%s includes <%s>", edge_file[e], edge_at[e], edge_header[e])
    do {
      changed = 0
      for (e = 1; e <= edges; e++) {
        name = base(edge_header[e])
        if ((edge_file[e] in why) || !(name in header_path) || !(header_path[name] in why)) continue
        why[edge_file[e]] = sprintf("%s:%s includes %s, which sees cnats (%s)", edge_file[e], edge_at[e],
                                    edge_header[e], why[header_path[name]])
        changed = 1
      }
    } while (changed)
    for (i = 1; i <= nfiles; i++) {
      if (!(files[i] in why)) continue
      seeing++
      if (!listed(files[i])) {
        printf "FAILED: %s: only the files of cnats_files in tests/layer_check.sh may see cnats; add it there, with why, or include no cnats\n", why[files[i]]
        bad = 1
      }
    }
    for (i = 1; i <= entries; i++) {
      found = 0
      for (f in why) if (f == entry[i] || (entry[i] ~ /\/$/ && index(f, entry[i]) == 1)) found = 1
      if (!found) {
        printf "FAILED: cnats_files in tests/layer_check.sh names %s, which %s no cnats: remove it from the list\n", entry[i], entry[i] ~ /\/$/ ? "holds no file that sees" : "sees"
        bad = 1
      }
    }
    if (!bad) printf "OK: %d includes across folders, each of a lower layer; the %d files that see cnats are all in cnats_files\n", checked, seeing
    exit bad
  }
'
