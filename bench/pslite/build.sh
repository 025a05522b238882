#!/bin/sh
# build.sh builds dmlc/ps-lite from a source tree and, against it, the
# driver kv_bench.cc of this directory: the peer of `colo bench kv`.
#
# Usage:
#
#	bench/pslite/build.sh PSLITE_SRC [OUT_DIR]
#
# PSLITE_SRC is a checkout (or `git archive`) of https://github.com/dmlc/ps-lite,
# measured at commit 15b8adf; it may also be given as the environment variable
# PSLITE_SRC. The script downloads nothing else: ps-lite's own Makefile
# fetches ZeroMQ and protobuf from the internet, so this one compiles ps-lite's
# four sources directly against Debian's libzmq3-dev and protobuf (installed
# with apt-get when missing), with the flags of ps-lite's Makefile (-O3
# -msse2 -finline-functions). Everything is written to OUT_DIR (default
# /tmp/pslite-build), nothing into either source tree; the driver is
# OUT_DIR/kv_bench. This is a benchmark tool, not part of CI.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${PSLITE_SRC:-}}
out=${2:-/tmp/pslite-build}
if [ -z "$src" ]; then
	echo "usage: $0 PSLITE_SRC [OUT_DIR] (or PSLITE_SRC=... $0)" >&2
	exit 2
fi
if [ ! -f "$src/src/van.cc" ] || [ ! -f "$src/include/ps/ps.h" ]; then
	echo "$0: $src: not a ps-lite source tree (want src/van.cc and include/ps/ps.h)" >&2
	exit 2
fi
src=$(cd "$src" && pwd)
if [ ! -e /usr/include/zmq.h ] || ! command -v protoc >/dev/null || [ ! -e /usr/include/google/protobuf/message.h ]; then
	apt-get update && apt-get install -y libzmq3-dev protobuf-compiler libprotobuf-dev
fi
mkdir -p "$out/gen"
protoc --cpp_out="$out/gen" --proto_path="$src/src" "$src/src/meta.proto"
flags="-std=c++14 -msse2 -O3 -finline-functions -pthread -I$out/gen -I$src/src -I$src/include"
for f in customer postoffice van; do
	g++ $flags -w -c "$src/src/$f.cc" -o "$out/$f.o"
done
g++ $flags -w -c "$out/gen/meta.pb.cc" -o "$out/meta.pb.o"
g++ $flags -Wall "$here/kv_bench.cc" "$out/customer.o" "$out/postoffice.o" "$out/van.o" "$out/meta.pb.o" \
	-o "$out/kv_bench" -lzmq -lprotobuf -pthread
# The driver's sparse keys are colo's (internal/workload's test checks the same numbers).
sum=$("$out/kv_bench" keysum)
if [ "$sum" != "100000 35 16776657 836310814593" ]; then
	echo "$0: kv_bench keysum printed '$sum', want colo's sparse key set '100000 35 16776657 836310814593'" >&2
	exit 1
fi
echo "$out/kv_bench"
