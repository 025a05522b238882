#!/bin/sh
# compare.sh measures `colo bench kv` beside dmlc/ps-lite (kv_bench.cc of
# this directory, the shape of ps-lite's tests/test_kv_app_benchmark.cc with
# colo's requests and a summing array store), alternating the two, on an
# idle machine and with a busy loop pinned to one core, and prints the
# medians side by side with their ratio.
#
# Usage:
#
#	bench/pslite/compare.sh PSLITE_SRC [OUT.json]
#
# PSLITE_SRC is a source tree of https://github.com/dmlc/ps-lite (measured
# at 15b8adf), for example `git clone https://github.com/dmlc/ps-lite
# /tmp/ps-lite`; it may also be given as the environment variable
# PSLITE_SRC. OUT.json (default colo-vs-pslite.json) gets every run and the
# medians.
#
# Environment:
#   ROUNDS     alternated rounds (4)
#   DURATION   how long each request kind runs, per program (1s)
#   BUSY_CORE  the core that the busy loop holds (1)
#   LOADS      idle,busy (both, by default)
#   BUILD      where colo and ps-lite are built (/tmp/pslite-build)
#   BEFORE     an earlier colo binary, run in the same alternation as a
#              third program (for example one built from main)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${PSLITE_SRC:-}}
out=${2:-colo-vs-pslite.json}
build=${BUILD:-/tmp/pslite-build}
if [ -z "$src" ]; then
	echo "usage: $0 PSLITE_SRC [OUT.json] (or PSLITE_SRC=... $0)" >&2
	exit 2
fi
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
if [ ! -d "$src" ]; then
	echo "$0: $src: no such directory" >&2
	exit 2
fi
src=$(cd "$src" && pwd)
"$here/build.sh" "$src" "$build" >/dev/null
(cd "$here/../.." && go build -o "$build/colo" ./cmd/colo)
exec python3 "$here/compare.py" "$build/colo" "$build/kv_bench" --rounds "${ROUNDS:-4}" \
	--duration "${DURATION:-1s}" --busy-core "${BUSY_CORE:-1}" --loads "${LOADS:-idle,busy}" \
	${BEFORE:+--before "$BEFORE"} --json "$out"
