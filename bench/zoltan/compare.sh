#!/bin/sh
# compare.sh times colo partition beside Zoltan PHG (zoltan_phg.c in this
# directory, built against Debian's libtrilinos-zoltan-dev with Open MPI)
# on the same hypergraphs, whole processes, alternating rounds so that both
# see the same machine, and scores every placement on colo's cost model
# (`colo eval`: Alg. 2 assigns the parameters of Zoltan's data partition).
# It writes the medians and the ratios as JSON.
#
# Usage, from the repository root:
#
#	bench/zoltan/compare.sh [OUT.json]      # default colo-vs-zoltan.json
#
# Environment:
#   DATASETS  space-separated files colo reads (default: 20 Newsgroups'
#             training set and soc-Slashdot0902 from ../shared/data)
#   K         parts (16)
#   ROUNDS    alternated rounds (5)
#   NP        Zoltan's MPI processes (2: both cores, as colo's --threads 2)
#   SEEDS     Zoltan's seeds, one per round in turn (1 2 3)
#   COLO      colo configurations, separated by ';' (default below)
#
# The files are decompressed and converted once, before the rounds, so that
# neither side's time includes decompression: colo reads the plain text,
# Zoltan's driver the hMETIS file `colo convert` writes. Zoltan's own
# partition time (from the driver) and colo's (summary.json "seconds") are
# reported beside the whole processes' wall times.
set -eu
out=${1:-colo-vs-zoltan.json}
here=$(cd "$(dirname "$0")" && pwd)
data=${DATA:-../shared/data}
datasets=${DATASETS:-"$data/20news-bydate/20news-bydate.train.libsvm.xz $data/soc-Slashdot0902/soc-Slashdot0902.txt.gz"}
k=${K:-16}
rounds=${ROUNDS:-5}
np=${NP:-2}
seeds=${SEEDS:-"1 2 3"}
colo_configs=${COLO:-"--algo parsa;--algo parsa --threads 2;--algo parsa --parsa-refine 1 --threads 2;--algo parsa+refine"}

if [ ! -e /usr/include/trilinos/zoltan.h ] || ! command -v mpicc >/dev/null; then
	apt-get update && apt-get install -y libtrilinos-zoltan-dev libopenmpi-dev openmpi-bin
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/colo" ./cmd/colo
mpicc -O2 -Wall -I/usr/include/trilinos "$here/zoltan_phg.c" -o "$tmp/zoltan_phg" -ltrilinos_zoltan

exec python3 - "$out" "$tmp" "$k" "$rounds" "$np" "$seeds" "$colo_configs" $datasets <<'PY'
import json, os, shlex, statistics, subprocess, sys, time

out, tmp, k, rounds, np_, seeds, configs = sys.argv[1:8]
files = sys.argv[8:]
k, rounds = int(k), int(rounds)
seeds = seeds.split()
configs = [c.strip() for c in configs.split(";") if c.strip()]
colo = os.path.join(tmp, "colo")
zoltan = os.path.join(tmp, "zoltan_phg")
mpirun = ["mpirun", "-np", np_, "--oversubscribe"]
if os.geteuid() == 0:
    mpirun.insert(1, "--allow-run-as-root")

def run(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("compare.sh: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return wall, p

def score(plain, part):
    _, p = run([colo, "eval", plain, "--data-part", part, "-k", str(k), "--json"])
    d = json.loads(p.stdout)
    return d["T_max"], d["T_sum"]

def loadavg():
    return os.getloadavg()[0]

report = {"k": k, "rounds": rounds, "zoltan_processes": int(np_), "datasets": []}
for f in files:
    if not os.path.exists(f):
        sys.exit("compare.sh: %s: no such file (set DATA or DATASETS)" % f)
    name = os.path.basename(f)
    plain = os.path.join(tmp, name.removesuffix(".xz").removesuffix(".gz"))
    with open(plain, "wb") as w:
        tool = "xz" if f.endswith(".xz") else "gzip" if f.endswith(".gz") else "cat"
        subprocess.run([tool] + (["-dc"] if tool != "cat" else []) + [f], stdout=w, check=True)
    hgr = plain + ".hgr"
    run([colo, "convert", plain, "--to", "hmetis", "-o", hgr])
    rows = {"zoltan": []}
    for c in configs:
        rows[c] = []
    loads = []
    for r in range(rounds):
        loads.append(loadavg())
        seed = seeds[r % len(seeds)]
        part = os.path.join(tmp, "zoltan.part")
        wall, p = run(mpirun + [zoltan, hgr, str(k), part, "1.03", seed])
        inner = float(p.stderr.split("partition ")[1].split(" s")[0])
        tmax, tsum = score(plain, part)
        rows["zoltan"].append({"seed": int(seed), "wall_seconds": wall, "partition_seconds": inner, "T_max": tmax, "T_sum": tsum})
        for c in configs:
            o = os.path.join(tmp, "colo-out")
            js = os.path.join(tmp, "colo.json")
            wall, _ = run([colo, "partition", plain, "-k", str(k), "-o", o, "--json", js] + shlex.split(c))
            with open(js) as fh:
                d = json.load(fh)
            rows[c].append({"wall_seconds": wall, "partition_seconds": d["seconds"], "T_max": d["T_max"], "T_sum": d["T_sum"]})
    z = rows["zoltan"]
    zwall = statistics.median(x["wall_seconds"] for x in z)
    zpart = statistics.median(x["partition_seconds"] for x in z)
    ztmax = statistics.median(x["T_max"] for x in z)
    entry = {"dataset": name, "load_average": [min(loads), max(loads)],
             "zoltan": {"runs": z, "median_wall_seconds": zwall, "median_partition_seconds": zpart,
                        "median_T_max": ztmax, "best_T_max": min(x["T_max"] for x in z)},
             "colo": []}
    print("%s, k = %d, load %.1f-%.1f" % (name, k, min(loads), max(loads)))
    print("  %-48s wall %6.3f s  partition %6.3f s  T_max %7d (median; best %d)" % (
        "zoltan PHG, %s processes" % np_, zwall, zpart, ztmax, entry["zoltan"]["best_T_max"]))
    for c in configs:
        rs = rows[c]
        wall = statistics.median(x["wall_seconds"] for x in rs)
        part = statistics.median(x["partition_seconds"] for x in rs)
        tmax = statistics.median(x["T_max"] for x in rs)
        e = {"config": c, "runs": rs, "median_wall_seconds": wall, "median_partition_seconds": part,
             "median_T_max": tmax, "wall_speedup": zwall / wall, "partition_speedup": zpart / part,
             "T_max_at_most_zoltans_best": tmax <= entry["zoltan"]["best_T_max"],
             "T_max_at_most_zoltans_median": tmax <= ztmax}
        entry["colo"].append(e)
        print("  %-48s wall %6.3f s  partition %6.3f s  T_max %7d  %5.1fx wall, %5.1fx partition" % (
            "colo " + c, wall, part, tmax, e["wall_speedup"], e["partition_speedup"]))
    report["datasets"].append(entry)
with open(out, "w") as fh:
    json.dump(report, fh, indent=1)
print("wrote", out)
PY
