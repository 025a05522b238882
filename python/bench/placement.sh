#!/bin/bash
# The placement's gain through PyTorch (docs/torch.md): the 20 Newsgroups
# example under colo run on K machines, BSP, with colo's placement
# (colo partition --algo best) against random samples and hashed rows
# (--algo random), in alternated pairs; with NETNS=1 in network
# namespaces shaped by tc, and with GLOO=1 also torch.distributed (gloo)
# data parallel on the random placement's samples. Every run's figures
# (the example's JSON, colo run's bytes, the load average at its start
# and end) go to OUT/results.jsonl, one line a run.
#
#   COLO=./colo PYTHONPATH=python COLO_LIBRARY=python/colo/libcolo.so \
#       python/bench/placement.sh OUT
#
# Settings from the environment: MACHINES (8), EPOCHS (200), BATCH (2000:
# a worker's whole share, full-batch passes), PAIRS (3), NETNS (0), GLOO
# (0), RATE (100mbit), DATA (../shared/data/20news-bydate), COLO, PYTHON.
set -euo pipefail
out=${1:?usage: placement.sh OUT}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/../.." && pwd)
colo=${COLO:-colo}
py=${PYTHON:-/usr/bin/python3}
data=${DATA:-$here/../shared/data/20news-bydate}
K=${MACHINES:-8} E=${EPOCHS:-200} B=${BATCH:-2000} P=${PAIRS:-3} R=${RATE:-100mbit}
ns=()
[ "${NETNS:-0}" = 1 ] && ns=(--netns)
for algo in best random; do
  [ -f "$out/$algo/data.part" ] || "$colo" partition --machines "$K" --algo "$algo" "$data/20news-bydate.train.libsvm.xz" -o "$out/$algo" > "$out/partition-$algo.log" 2>&1
done
load() { cut -d' ' -f1 /proc/loadavg; }
run() { # name placement [gloo]
  local name=$1 pl=$2 l0 l1 log="$out/$1.log" js="$out/$1.json"
  l0=$(load)
  if [ "${3:-}" = gloo ]; then
    "$colo" run --machines "$K" "${ns[@]}" --link-bandwidth "$R" --rule adagrad --lr 0.5 -- env GLOO_SOCKET_IFNAME=eth0 \
      "$py" "$here/python/bench/newsgroups_gloo.py" --data "$data" --placement "$out/$pl" --batch "$B" --epochs "$E" --json "$js" > "$log" 2>&1
  else
    "$colo" run --machines "$K" "${ns[@]}" --placement "$out/$pl" --link-bandwidth "$R" --rule adagrad --lr 0.5 -- \
      "$py" "$here/examples/torch/newsgroups.py" --data "$data" --placement "$out/$pl" --batch "$B" --epochs "$E" --eval last --json "$js" > "$log" 2>&1
  fi
  l1=$(load)
  "$py" - "$name" "$js" "$log" "$l0" "$l1" >> "$out/results.jsonl" <<'EOF'
import json, re, sys
name, js, log, l0, l1 = sys.argv[1:]
r = json.load(open(js))
text = open(log).read()
m = re.search(r"([\d.]+) MB sent between machines.*?, ([\d.]+) MB within them", text)
w = re.search(r"([\d.]+) MB on the namespaces' links", text)
r.update(run=name, inter_mb=float(m.group(1)), inner_mb=float(m.group(2)), load=[float(l0), float(l1)])
if w:
    r["links_mb"] = float(w.group(1))
print(json.dumps(r))
EOF
  tail -1 "$out/results.jsonl"
}
for i in $(seq 1 "$P"); do
  if [ $((i % 2)) = 1 ]; then run "best-$i" best; run "random-$i" random
  else run "random-$i" random; run "best-$i" best; fi
  if [ "${GLOO:-0}" = 1 ]; then run "gloo-$i" random gloo; fi
done
