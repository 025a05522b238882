#!/bin/sh
# compare.sh times colo partition beside Zoltan PHG (zoltan_phg.c in this
# directory, built against Debian's libtrilinos-zoltan-dev with Open MPI)
# on the same hypergraphs, whole processes, alternating rounds so that both
# see the same machine, and scores every placement on colo's cost model
# (`colo eval`: Alg. 2 assigns the parameters of Zoltan's data partition).
# It writes the medians and the ratios as JSON: of the wall time, and of
# the CPU time (user + sys of the command's processes, MPI's included),
# which the load of a shared machine does not inflate as it does the wall
# time.
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
#   NP        Zoltan's numbers of MPI processes, each measured (1 2: one
#             core, and both, as colo's --threads 2)
#   SEEDS     Zoltan's seeds, one per round in turn (1 2 3)
#   COLO      colo configurations, separated by ';' (default below)
#
# The files are decompressed and converted once, before the rounds, so that
# neither side's time includes decompression: colo reads the plain text,
# Zoltan's driver the hMETIS file `colo convert` writes. Zoltan's own
# partition time (from the driver) and colo's (summary.json "seconds") are
# reported beside the whole processes' wall times. Each round runs the
# commands in a rotated order, so that none always comes first. The ratios
# are against Zoltan's fastest number of processes.
set -eu
out=${1:-colo-vs-zoltan.json}
here=$(cd "$(dirname "$0")" && pwd)
data=${DATA:-../shared/data}
datasets=${DATASETS:-"$data/20news-bydate/20news-bydate.train.libsvm.xz $data/soc-Slashdot0902/soc-Slashdot0902.txt.gz"}
k=${K:-16}
rounds=${ROUNDS:-5}
np=${NP:-"1 2"}
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
import json, os, re, resource, shlex, statistics, subprocess, sys, time

out, tmp, k, rounds, nps, seeds, configs = sys.argv[1:8]
nps = nps.split()
files = sys.argv[8:]
k, rounds = int(k), int(rounds)
seeds = seeds.split()
configs = [c.strip() for c in configs.split(";") if c.strip()]
colo = os.path.join(tmp, "colo")
zoltan_bin = os.path.join(tmp, "zoltan_phg")
def mpirun(n):
    cmd = ["mpirun", "-np", n, "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

last_cpu = [0.0]

def run(cmd, **kw):
    """Runs cmd and returns its wall time and result; last_cpu[0] is then
    its CPU time (user + sys, its processes and theirs), which does not
    depend on the machine's load as the wall time does."""
    c0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    wall = time.perf_counter() - t0
    last_cpu[0] = children_cpu() - c0
    if p.returncode != 0:
        sys.exit("compare.sh: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return wall, p

def score(plain, part):
    _, p = run([colo, "eval", plain, "--data-part", part, "-k", str(k), "--json"])
    d = json.loads(p.stdout)
    return d["T_max"], d["T_sum"]

def loadavg():
    return os.getloadavg()[0]

report = {"k": k, "rounds": rounds, "zoltan_processes": [int(n) for n in nps], "datasets": []}
for f in files:
    if not os.path.exists(f):
        sys.exit("compare.sh: %s: no such file (set DATA or DATASETS)" % f)
    name_of = os.path.basename(f)
    plain = os.path.join(tmp, name_of.removesuffix(".xz").removesuffix(".gz"))
    with open(plain, "wb") as w:
        tool = "xz" if f.endswith(".xz") else "gzip" if f.endswith(".gz") else "cat"
        subprocess.run([tool] + (["-dc"] if tool != "cat" else []) + [f], stdout=w, check=True)
    hgr = plain + ".hgr"
    run([colo, "convert", plain, "--to", "hmetis", "-o", hgr])
    zname = lambda n: "zoltan PHG, %s processes" % n
    names = [zname(n) for n in nps] + ["colo " + c for c in configs]
    rows = {n: [] for n in names}
    loads = []

    def zoltan(n, seed):
        part = os.path.join(tmp, "zoltan.part")
        wall, p = run(mpirun(n) + [zoltan_bin, hgr, str(k), part, "1.03", seed])
        cpu = last_cpu[0]
        m = re.search(r"zoltan_phg: read [0-9.]+ s, partition ([0-9.]+) s", p.stderr)
        if not m:
            sys.exit("compare.sh: no partition time in Zoltan's output:\n" + p.stderr[-2000:])
        tmax, tsum = score(plain, part)
        return {"seed": int(seed), "wall_seconds": wall, "cpu_seconds": cpu, "partition_seconds": float(m.group(1)), "T_max": tmax, "T_sum": tsum}

    def colo_run(c):
        o = os.path.join(tmp, "colo-out")
        js = os.path.join(tmp, "colo.json")
        wall, _ = run([colo, "partition", plain, "-k", str(k), "-o", o, "--json", js] + shlex.split(c))
        cpu = last_cpu[0]
        with open(js) as fh:
            d = json.load(fh)
        return {"wall_seconds": wall, "cpu_seconds": cpu, "partition_seconds": d["seconds"], "T_max": d["T_max"], "T_sum": d["T_sum"]}

    for r in range(rounds):
        loads.append(loadavg())
        seed = seeds[r % len(seeds)]
        for i in range(len(names)):
            name = names[(i + r) % len(names)]
            if name.startswith("zoltan"):
                rows[name].append(zoltan(name.split(", ")[1].split()[0], seed))
            else:
                rows[name].append(colo_run(name[len("colo "):]))
    med = lambda rs, key: statistics.median(x[key] for x in rs)
    zs = {n: rows[zname(n)] for n in nps}
    fastest = min(nps, key=lambda n: med(zs[n], "wall_seconds"))
    z = zs[fastest]
    zwall, zpart, ztmax, zcpu = med(z, "wall_seconds"), med(z, "partition_seconds"), med(z, "T_max"), med(z, "cpu_seconds")
    zbest = min(x["T_max"] for n in nps for x in zs[n])
    entry = {"dataset": name_of, "load_average": [min(loads), max(loads)], "zoltan": [], "colo": [],
             "zoltan_fastest_processes": int(fastest), "zoltan_best_T_max": zbest}
    print("%s, k = %d, load %.1f-%.1f" % (name_of, k, min(loads), max(loads)))
    for n in nps:
        e = {"processes": int(n), "runs": zs[n], "median_wall_seconds": med(zs[n], "wall_seconds"),
             "median_cpu_seconds": med(zs[n], "cpu_seconds"),
             "median_partition_seconds": med(zs[n], "partition_seconds"), "median_T_max": med(zs[n], "T_max")}
        entry["zoltan"].append(e)
        print("  %-48s wall %6.3f s  cpu %6.3f s  partition %6.3f s  T_max %7d (median)" % (
            zname(n), e["median_wall_seconds"], e["median_cpu_seconds"], e["median_partition_seconds"], e["median_T_max"]))
    for c in configs:
        rs = rows["colo " + c]
        wall, part, tmax, cpu = med(rs, "wall_seconds"), med(rs, "partition_seconds"), med(rs, "T_max"), med(rs, "cpu_seconds")
        e = {"config": c, "runs": rs, "median_wall_seconds": wall, "median_cpu_seconds": cpu, "median_partition_seconds": part,
             "median_T_max": tmax, "wall_speedup": zwall / wall, "cpu_ratio": zcpu / cpu, "partition_speedup": zpart / part,
             "T_max_at_most_zoltans_best": tmax <= zbest,
             "T_max_at_most_zoltans_median": tmax <= ztmax}
        entry["colo"].append(e)
        print("  %-48s wall %6.3f s  cpu %6.3f s  partition %6.3f s  T_max %7d  %5.1fx wall, %5.1fx cpu, %5.1fx partition" % (
            "colo " + c, wall, cpu, part, tmax, e["wall_speedup"], e["cpu_ratio"], e["partition_speedup"]))
    print("  (ratios against Zoltan on %s processes; Zoltan's lowest T_max of all runs %d)" % (fastest, zbest))
    report["datasets"].append(entry)
with open(out, "w") as fh:
    json.dump(report, fh, indent=1)
print("wrote", out)
PY
