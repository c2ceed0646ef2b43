#!/usr/bin/env bash
# Holds every #include of the tree to the layers of DESIGN.md section 2, so that an arrow the
# design does not allow fails the build's test command (scripts/run-tests.sh) instead of growing
# unnoticed. Prints one line per offending include and exits 1; exits 0 when there is none.
#
# Layers are the top-level folders, and inside node/ its sub-libraries (node/ledger, node/rpc,
# node/roles, node/devnet, node/cli). A layer may include its own files and those of the layers
# its arrows reach (below); generated protobuf headers (polnode/*.pb.h) are the proto layer.
# Tests may include any library, their own suite's files and the test-support library
# (tests/support, "polnode/testing/..."), never another suite's; fuzz/ and bench/ likewise (a
# benchmark measures on the fixtures the tests check, e.g. bench/referee_bench.cc on tiny_gpt.h).
# JSON (rapidjson) and HTTP (Boost) headers belong to node/rpc alone.
#
# Usage: scripts/check-layers.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# What each layer may include besides itself: DESIGN.md's arrows (everything -> base;
# kernels <- solver <- verifier; proto <- consensus <- contracts; contracts -> kernels;
# solver/verifier -> consensus; econ -> contracts; cli -> econ; cli -> devnet -> roles -> rpc -> ledger -> (contracts, consensus,
# solver, verifier)), followed to the end: a layer reaches what the layers below it reach.
declare -A allowed=(
  [base]=""
  [proto]=""
  [kernels]="base"
  [consensus]="base proto"
  [contracts]="base proto consensus kernels"
  [solver]="base proto consensus kernels"
  [verifier]="base proto consensus kernels solver"
  [econ]="base proto consensus kernels contracts"
  [node/ledger]="base proto consensus kernels contracts solver verifier"
  [node/rpc]="base proto consensus kernels contracts solver verifier node/ledger"
  [node/roles]="base proto consensus kernels contracts solver verifier node/ledger node/rpc"
  [node/devnet]="base proto consensus kernels contracts solver verifier node/ledger node/rpc node/roles"
  [node/cli]="base proto consensus kernels contracts solver verifier econ node/ledger node/rpc node/roles node/devnet"
)
libraries="${!allowed[*]}"

# The layer of a path in the tree: node/<sub> inside node/, tests/<suite> inside tests/, else the
# top-level folder.
layer_of() {
  case "$1" in
    node/*/*) local rest=${1#node/}; echo "node/${rest%%/*}" ;;
    tests/*/*) local rest=${1#tests/}; echo "tests/${rest%%/*}" ;;
    *) echo "${1%%/*}" ;;
  esac
}

# The layer an include names, for includes spelled from an include directory: "polnode/x.pb.h"
# is proto, "polnode/<lib>/..." is that library ("polnode/testing/..." the test support).
layer_of_include() {
  local inc=$1
  case "$inc" in
    polnode/*/*) ;;
    polnode/*.pb.h) echo proto; return ;;
    *) return ;;
  esac
  local lib=${inc#polnode/}
  lib=${lib%%/*}
  case "$lib" in
    base | kernels | consensus | contracts | solver | verifier | econ) echo "$lib" ;;
    ledger | rpc | roles | devnet | cli) echo "node/$lib" ;;
    testing) echo tests/support ;;
    *) echo "unknown:$lib" ;;
  esac
}

# Where a quoted include that is not spelled from an include directory lives: beside the file, or
# under the root of the file's own layer (its private include directory).
resolve_relative() {
  local file=$1 inc=$2 layer=$3 candidate
  for candidate in "$(dirname "$file")/$inc" "$layer/$inc"; do
    if [[ -f "$candidate" ]]; then
      realpath -m --relative-to=. "$candidate"
      return
    fi
  done
}

reaches() {  # reaches FROM TO: whether layer FROM may include layer TO
  local from=$1 to=$2
  [[ "$from" == "$to" ]] && return 0
  case "$from" in
    tests/* | fuzz | bench)
      # Every library, and the test support; never another suite.
      [[ " $libraries " == *" $to "* ]] && return 0
      [[ "$to" == tests/support ]] && return 0
      return 1 ;;
  esac
  [[ " ${allowed[$from]-} " == *" $to "* ]]
}

failures=0
fail() {
  echo "$1" >&2
  failures=$((failures + 1))
}

while IFS= read -r file; do
  [[ -f "$file" ]] || continue  # deleted in the work tree
  from=$(layer_of "$file")
  if [[ -z "${allowed[$from]+set}" && "$from" != tests/* && "$from" != fuzz && "$from" != bench ]]; then
    continue  # scripts, examples, cmake: no C++ layer
  fi
  while IFS=: read -r line text; do
    if [[ "$text" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^\>]+)\> ]]; then
      system=${BASH_REMATCH[1]}
      case "$system" in
        rapidjson/* | boost/*)
          if [[ "$from" != node/rpc && "$from" != tests/* ]]; then
            fail "$file:$line: $from includes <$system>: JSON and HTTP live in node/rpc (use its json.h or http_*.h)"
          fi ;;
      esac
      continue
    fi
    [[ "$text" =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]] || continue
    inc=${BASH_REMATCH[1]}
    to=$(layer_of_include "$inc")
    if [[ -z "$to" ]]; then
      target=$(resolve_relative "$file" "$inc" "$from")
      if [[ -z "$target" ]]; then
        # Tests reach a library's own headers through its include directories; only a library's
        # files must name what they include by a path in the tree.
        [[ "$from" == tests/* ]] && continue
        fail "$file:$line: cannot find \"$inc\" beside the file or in $from"
        continue
      fi
      to=$(layer_of "$target")
    fi
    if [[ "$to" == unknown:* ]]; then
      fail "$file:$line: \"$inc\" names no layer of DESIGN.md section 2"
    elif ! reaches "$from" "$to"; then
      case "$from" in
        tests/* | fuzz | bench)
          fail "$file:$line: $from may not include \"$inc\" ($to): share it through tests/support instead" ;;
        *)
          fail "$file:$line: $from may not include \"$inc\" ($to): DESIGN.md section 2 has no arrow $from -> $to" ;;
      esac
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include' "$file" || true)
done < <(git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' '*.cpp' '*.cu' '*.cuh' | sort -u)

if ((failures > 0)); then
  echo "check-layers: $failures include(s) against DESIGN.md section 2" >&2
  exit 1
fi
echo "check-layers: every include follows DESIGN.md section 2"
