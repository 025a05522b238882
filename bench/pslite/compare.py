"""compare.py runs `colo bench kv` and its ps-lite peer (run.py) in
alternation, on an idle machine and with a busy loop pinned to one core, and
prints the medians side by side; see compare.sh, which builds both and calls
this.

Usage:

    python3 bench/pslite/compare.py COLO KV_BENCH [--rounds 4] [--duration 1s]
        [--busy-core 1] [--before COLO_BEFORE] [--json FILE]

Each round measures both loads; under each load both programs run one after
the other, in an order that alternates from round to round, so that neither
always runs first. Under "busy" a `while :; do :; done` shell loop runs
pinned with taskset to --busy-core for the two runs and is killed after
them. The load average (`/proc/loadavg`, 1 minute) is recorded before every
run. The table gives, per record and load, the median of each program's
throughput over the rounds, the ratio of those medians (colo / ps-lite), the
range of the per-round ratios, and the medians of the CPU time per request
of every process of each side (cpu_us), which a busy machine changes less
than the throughput. With --before, a second colo binary (an earlier
build) runs in the same alternation as a third program, and the table gains
its medians, its ratio to ps-lite and its CPU per request.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import run as pslite  # noqa: E402

LOADS = ("idle", "busy")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_colo(colo, duration_ms, shapes):
    with tempfile.TemporaryDirectory(prefix="colo-kv-") as tmp:
        out = os.path.join(tmp, "kv.json")
        cmd = [colo, "bench", "kv", "--duration", f"{duration_ms}ms", "--json", out]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-2000:]}")
        recs = json.load(open(out))["results"]
    return [r for r in recs if (r["servers"], r["workers"]) in shapes]


def busy_loop(core):
    return subprocess.Popen(["taskset", "-c", str(core), "sh", "-c", "while :; do :; done"], start_new_session=True)


def key(r):
    return (r["servers"], r["workers"], r["mode"], r["op"])


def main():
    ap = argparse.ArgumentParser(description="colo bench kv against ps-lite, alternated, idle and busy.")
    ap.add_argument("colo", help="the colo binary")
    ap.add_argument("pslite", help="kv_bench, as built by build.sh")
    ap.add_argument("--rounds", type=int, default=4, help="alternated rounds (4)")
    ap.add_argument("--duration", type=pslite.parse_duration, default=1000, help="how long each kind runs (1s)")
    ap.add_argument("--busy-core", type=int, default=1, help="the core the busy loop holds (1)")
    ap.add_argument("--loads", default="idle,busy", help="which loads to measure (idle,busy)")
    ap.add_argument("--before", help="an earlier colo binary, run in the same alternation")
    ap.add_argument("--json", help="write every run and the medians to this file")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error(f"--rounds {a.rounds}: want at least 1")
    loads = a.loads.split(",")
    for l in loads:
        if l not in LOADS:
            ap.error(f"--loads {l}: want idle or busy")
    for b in (a.colo, a.pslite) + ((a.before,) if a.before else ()):
        if not os.access(b, os.X_OK):
            ap.error(f"{b}: not an executable")
    if "busy" in loads and a.busy_core >= os.cpu_count():
        ap.error(f"--busy-core {a.busy_core}: this machine has cores 0..{os.cpu_count() - 1}")
    shapes = [(1, 1), (2, 2)]
    runs = []  # {round, load, side, loadavg, records}
    for rnd in range(a.rounds):
        for load in loads:
            # The order turns every round, so that no program always runs first.
            sides = ["colo", "ps-lite"] + (["before"] if a.before else [])
            sides = sides[rnd % len(sides) :] + sides[: rnd % len(sides)]
            if rnd % 2 == 1:
                sides.reverse()
            busy = busy_loop(a.busy_core) if load == "busy" else None
            try:
                for side in sides:
                    la = loadavg()
                    if side in ("colo", "before"):
                        recs = run_colo(a.colo if side == "colo" else a.before, a.duration, shapes)
                    else:
                        recs = pslite.run(a.pslite, shapes, a.duration)
                    runs.append({"round": rnd, "load": load, "side": side, "loadavg": la, "records": recs})
                    print(f"round {rnd + 1}/{a.rounds} {load:4} {side:7} (load {la:.1f})", file=sys.stderr)
            except RuntimeError as e:
                sys.exit(f"compare.py: {e}")
            finally:
                if busy is not None:
                    os.killpg(busy.pid, signal.SIGKILL)
                    busy.wait()
    rows = []
    for load in loads:
        mine = [r for r in runs if r["load"] == load]
        keys = []
        for r in mine:
            for rec in r["records"]:
                if key(rec) not in keys:
                    keys.append(key(rec))
        for k in keys:
            tp, cpu = {}, {}
            for side in ("colo", "ps-lite", "before"):
                tp[side] = {r["round"]: rec["mb_per_s"] for r in mine if r["side"] == side for rec in r["records"] if key(rec) == k}
                cpu[side] = [rec["cpu_us"] for r in mine if r["side"] == side for rec in r["records"] if key(rec) == k and rec.get("cpu_us")]
            both = sorted(set(tp["colo"]) & set(tp["ps-lite"]))
            per_round = [tp["colo"][i] / tp["ps-lite"][i] for i in both]
            c, p = statistics.median(tp["colo"].values()), statistics.median(tp["ps-lite"].values())
            rows.append(
                {
                    "load": load,
                    "servers": k[0],
                    "workers": k[1],
                    "mode": k[2],
                    "op": k[3],
                    "colo_mb_per_s": c,
                    "pslite_mb_per_s": p,
                    "ratio": c / p,
                    "round_ratios": per_round,
                    "colo_cpu_us": statistics.median(cpu["colo"]) if cpu["colo"] else None,
                    "pslite_cpu_us": statistics.median(cpu["ps-lite"]) if cpu["ps-lite"] else None,
                    "before_mb_per_s": statistics.median(tp["before"].values()) if tp["before"] else None,
                    "before_cpu_us": statistics.median(cpu["before"]) if cpu["before"] else None,
                    "loadavg": [r["loadavg"] for r in mine],
                }
            )
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": a.rounds, "duration_ms": a.duration, "busy_core": a.busy_core, "before": a.before, "runs": runs, "medians": rows}, f, indent=2)
    print(f"colo bench kv against ps-lite, {a.rounds} alternated rounds, {a.duration} ms per kind; medians of MB/s,")
    print("the ratio of the medians and the range of the rounds' ratios; CPU µs per request (every process), medians")
    extra = f"  {'before MB/s':>11}  {'before/ps-lite':>14}  {'CPU µs before':>13}" if a.before else ""
    print(f"{'load':>5}  {'shape':>5}  {'mode':>6}  {'op':>4}  {'colo MB/s':>9}  {'ps-lite MB/s':>12}  {'colo/ps-lite':>12}  {'rounds':>11}  {'CPU µs colo':>11}  {'ps-lite':>7}  {'load avg':>9}{extra}")
    for r in rows:
        rr = r["round_ratios"]
        span = f"{min(rr):.2f}–{max(rr):.2f}" if rr else "-"
        la = f"{min(r['loadavg']):.1f}–{max(r['loadavg']):.1f}"
        cc = f"{r['colo_cpu_us']:.0f}" if r["colo_cpu_us"] else "-"
        pc = f"{r['pslite_cpu_us']:.0f}" if r["pslite_cpu_us"] else "-"
        extra = ""
        if a.before:
            bm, bc = r["before_mb_per_s"], r["before_cpu_us"]
            extra = f"  {bm:>11.0f}  {bm / r['pslite_mb_per_s']:>13.2f}×  {bc:>13.0f}" if bm and bc else f"  {'-':>11}  {'-':>14}  {'-':>13}"
        print(
            f"{r['load']:>5}  {r['servers']}×{r['workers']:<3}  {r['mode']:>6}  {r['op']:>4}  {r['colo_mb_per_s']:>9.0f}"
            f"  {r['pslite_mb_per_s']:>12.0f}  {r['ratio']:>11.2f}×  {span:>11}  {cc:>11}  {pc:>7}  {la:>9}{extra}"
        )


if __name__ == "__main__":
    main()
