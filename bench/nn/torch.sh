#!/bin/sh
# torch.sh measures colo's dense models (package nn: BenchmarkMLP and
# BenchmarkCNN) beside PyTorch on CPU (the peer in ../shared/peers/torch),
# both on one and on two threads at batch 64 (colo: Workspace.SetThreads,
# which the benchmarks set to GOMAXPROCS, -cpu 1,2), alternating rounds so
# that both see the same machine, and writes the medians and their ratio
# as JSON. A round
# in which either side shared the machine with other work is left out of
# the medians. Each round's line and the JSON (load_average) give the
# one-minute load average at its start and end. Beside the medians the
# JSON has the speed of the steps that had the cores, which is what can
# be compared on a machine that others keep busy: colo's 10th-percentile
# step (samples/s-p10) and PyTorch's fastest window.
#
# Usage, from the repository root:
#
#	bench/nn/torch.sh [OUT.json]        # default nn-vs-torch.json
#
# Environment: ROUNDS (3), BENCHTIME (5s, per Go benchmark),
# DATA (../shared/data/fashion-mnist), PEER (../shared/peers/torch),
# MAX_OTHER (0.25: a Go run during which other processes used more cores
# than this is redone, as the peer does with its windows), MAX_WAIT
# (0.10: a Go run is redone too when, for more than this share of its
# time, some task on the machine was ready to run and waited for a core,
# by the kernel's CPU pressure, /proc/pressure/cpu: the check of others'
# busy time cannot see them while colo's two threads fill both cores,
# and the pressure can), GO_RETRIES (10: how many times a contended Go
# run is redone) and IDLE_WAIT (60: seconds to wait for an idle machine
# before each Go run), BEFORE (the
# test binary of package nn of an earlier build, for example
# `git archive REV | tar -x -C DIR; cd DIR; go test -c -o nn-before.test
# ./nn`: each round then runs it too, beside this build's, the two in an
# order that alternates from round to round, and the summary gives its
# medians and this build's speed against it), TORCH_ARGS (more options
# of the peer's bench_dense.py, for example "--retries 3 --idle-wait 5"
# on a machine that is never idle, where its defaults wait up to a minute
# before each of up to 20 redone windows).
#
# PyTorch comes from Debian (python3-torch, for /usr/bin/python3) with the
# OpenMP build of OpenBLAS, which the peer needs for sound figures; the
# script installs both when torch is missing (as root).
set -eu
out=${1:-nn-vs-torch.json}
rounds=${ROUNDS:-3}
benchtime=${BENCHTIME:-5s}
data=${DATA:-../shared/data/fashion-mnist}
peer=${PEER:-../shared/peers/torch}
max_other=${MAX_OTHER:-0.25}
max_wait=${MAX_WAIT:-0.10}
go_retries=${GO_RETRIES:-10}
idle_wait=${IDLE_WAIT:-60}
before=${BEFORE:-}
if [ -n "$before" ]; then
	before=$(realpath "$before")
	[ -x "$before" ] || { echo "torch.sh: BEFORE=$before is not an executable test binary" >&2; exit 2; }
fi

# torch alone is not enough: without libopenblas0-openmp it runs on the
# reference BLAS at a fourteenth of its speed (mlp on one thread
# 3,700-4,300 samples/s against 53,000-60,000), and the ratios say
# nothing.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null || ! dpkg -s libopenblas0-openmp >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ]; then
		echo "torch.sh: python3-torch and libopenblas0-openmp are needed; install them as root" >&2
		exit 2
	fi
	apt-get update && apt-get install -y python3-torch libopenblas0-openmp
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/nn.test" ./nn

exec /usr/bin/python3 - "$out" "$rounds" "$benchtime" "$data" "$peer" "$max_other" "$tmp" "$before" "${TORCH_ARGS:-}" "$max_wait" "$go_retries" "$idle_wait" <<'PY'
import json, os, re, resource, shlex, statistics, subprocess, sys, time

out, rounds, benchtime, data, peer, max_other, tmp, before, torch_args, max_wait, go_retries, idle_wait = sys.argv[1:]
rounds, max_other, max_wait = int(rounds), float(max_other), float(max_wait)
go_retries, idle_wait = int(go_retries), float(idle_wait)
hz = os.sysconf("SC_CLK_TCK")

def busy():
    with open("/proc/stat") as f:
        v = [int(t) for t in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4] - v[7]) / hz

def waited():
    """Seconds in which some task waited for a core (CPU pressure), or None."""
    try:
        with open("/proc/pressure/cpu") as f:
            return int(f.readline().split("total=")[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def wait_idle(limit=idle_wait):
    t0 = time.time()
    while time.time() - t0 < limit:
        b0 = busy(); time.sleep(0.5)
        if (busy() - b0) / 0.5 <= max_other:
            return

def go_round(binary):
    """One run of both Go benchmarks; redone (up to go_retries times) when others were busy."""
    for attempt in range(go_retries + 1):
        wait_idle()
        b0, c0, w0, t0 = busy(), children_cpu(), waited(), time.time()
        p = subprocess.run([binary, "-test.run", "^$", "-test.bench", "^Benchmark(MLP|CNN)$",
                            "-test.cpu", "1,2", "-test.benchtime", benchtime],
                           cwd="nn", capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("go benchmark failed:\n" + p.stdout + p.stderr)
        el = time.time() - t0
        other = max(0.0, ((busy() - b0) - (children_cpu() - c0)) / el)
        w1 = waited()
        wait = (w1 - w0) / el if w0 is not None and w1 is not None else 0.0
        res = {(m.group(1).lower(), int(m.group(2) or 1)): (float(m.group(3)), float(m.group(4) or 0))
               for m in re.finditer(r"Benchmark(MLP|CNN)(?:-(\d+))?\s+\d+\s+\d+ ns/op\s+([\d.]+) samples/s"
                                    r"(?:\s+([\d.]+) samples/s-p10)?", p.stdout)}
        if (other <= max_other and wait <= max_wait) or attempt == go_retries:
            return res, other, wait, attempt
        time.sleep(1)

def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])

def go_record(res, other, wait, redone):
    return {"samples_per_s": {f"{m}/{th}": v[0] for (m, th), v in res.items()},
            "samples_per_s_p10": {f"{m}/{th}": v[1] for (m, th), v in res.items()},
            "other_cores": round(other, 3), "cpu_wait": round(wait, 3), "redone": redone}

def quiet(g):
    return g["other_cores"] <= max_other and g["cpu_wait"] <= max_wait

torch_runs, go_runs, before_runs, loads = [], [], [], []
for r in range(rounds):
    load0 = loadavg()
    tj = os.path.join(tmp, f"torch{r}.json")
    subprocess.run(["/usr/bin/python3", os.path.join(peer, "bench_dense.py"), "--data", data, "--models", "mlp,cnn",
                    "--batches", "64", "--threads", "1,2", "--no-accuracy", "--json", tj] + shlex.split(torch_args), check=True,
                   stdout=subprocess.DEVNULL)
    with open(tj) as f:
        t = json.load(f)
    torch_runs.append({f"{rec['model']}/{rec['threads']}": rec for rec in t["records"]})
    # This build and the earlier one (BEFORE) in an order that alternates.
    order = ["colo", "before"] if r % 2 == 0 else ["before", "colo"]
    for who in order:
        if who == "colo":
            go_runs.append(go_record(*go_round(os.path.join(tmp, "nn.test"))))
        elif before:
            before_runs.append(go_record(*go_round(before)))
    other, wait = go_runs[-1]["other_cores"], go_runs[-1]["cpu_wait"]
    loads.append([load0, loadavg()])
    keys = [f"{m}/{th}" for m in ("mlp", "cnn") for th in (1, 2)]
    print(f"round {r + 1}: torch " + ", ".join(f"{k} {torch_runs[-1][k]['samples_per_s']:.0f}" for k in keys) +
          "; colo " + ", ".join(f"{k} {go_runs[-1]['samples_per_s'].get(k, 0):.0f}"
                                f" (p10 {go_runs[-1]['samples_per_s_p10'].get(k, 0):.0f})" for k in keys) +
          f" samples/s (others used {other:.2f} cores and tasks waited for a core {100 * wait:.0f}% of the time during colo's run; load average {loads[-1][0]:.1f} → {loads[-1][1]:.1f})",
          file=sys.stderr)
    if before:
        print(f"round {r + 1}: before " + ", ".join(f"{k} {before_runs[-1]['samples_per_s'].get(k, 0):.0f}"
                                                   f" (p10 {before_runs[-1]['samples_per_s_p10'].get(k, 0):.0f})" for k in keys) +
              f" samples/s (others used {before_runs[-1]['other_cores']:.2f} cores, tasks waited"
              f" {100 * before_runs[-1]['cpu_wait']:.0f}%)", file=sys.stderr)

# The medians are over the rounds in which neither side was contended; when
# every round was, over all of them, and the record says so.
summary = []
for m, th in [(m, th) for m in ("mlp", "cnn") for th in (1, 2)]:
    k = f"{m}/{th}"
    calm = [r for r in range(rounds)
            if not torch_runs[r][k].get("contended") and quiet(go_runs[r])]
    contended = not calm
    kept = calm or list(range(rounds))
    tv = [torch_runs[r][k]["samples_per_s"] for r in kept]
    gv = [go_runs[r]["samples_per_s"][k] for r in kept]
    summary.append({"model": m, "batch": 64, "threads": th, "colo_samples_per_s": statistics.median(gv),
                    "torch_samples_per_s": statistics.median(tv),
                    # The speed of steps that had the cores: colo's 10th
                    # percentile step, PyTorch's fastest window.
                    "colo_p10_samples_per_s": statistics.median(go_runs[r]["samples_per_s_p10"][k] for r in kept),
                    "torch_max_samples_per_s": statistics.median(torch_runs[r][k].get("max_samples_per_s", 0)
                                                                 for r in kept),
                    "ratio": statistics.median(gv) / statistics.median(tv),
                    "rounds_kept": [r + 1 for r in kept], "colo_runs": gv, "torch_runs": tv, "contended": contended})
    s = summary[-1]
    if before:
        # The earlier build over all rounds (its own runs may have been
        # contended when this build's were not), beside this build's over
        # all rounds.
        bv = [before_runs[r]["samples_per_s"][k] for r in range(rounds)]
        av = [go_runs[r]["samples_per_s"][k] for r in range(rounds)]
        s["before_runs"], s["before_samples_per_s"] = bv, statistics.median(bv)
        s["before_p10_samples_per_s"] = statistics.median(before_runs[r]["samples_per_s_p10"][k] for r in range(rounds))
        s["colo_all_samples_per_s"] = statistics.median(av)
        s["colo_all_p10_samples_per_s"] = statistics.median(go_runs[r]["samples_per_s_p10"][k] for r in range(rounds))
        s["after_over_before"] = s["colo_all_samples_per_s"] / s["before_samples_per_s"]
    print(f"{m} on {th} thread(s): colo {s['colo_samples_per_s']:.0f}, torch {s['torch_samples_per_s']:.0f} samples/s, "
          f"ratio {s['ratio']:.2f} (medians of rounds {s['rounds_kept']}){' (contended)' if contended else ''}; "
          f"steps that had the cores: colo {s['colo_p10_samples_per_s']:.0f}, torch {s['torch_max_samples_per_s']:.0f}")
    if before:
        print(f"{m} on {th} thread(s), all rounds: colo {s['colo_all_samples_per_s']:.0f} (p10 {s['colo_all_p10_samples_per_s']:.0f}), "
              f"before {s['before_samples_per_s']:.0f} (p10 {s['before_p10_samples_per_s']:.0f}) samples/s, "
              f"{s['after_over_before']:.2f}× before")
cpu = ""
with open("/proc/cpuinfo") as f:
    cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
with open(out, "w") as f:
    json.dump({"tool": "bench/nn/torch.sh", "cpu": cpu, "cpus": os.cpu_count(), "rounds": rounds,
               "go_benchtime": benchtime, "load_average": loads, "summary": summary, "torch": torch_runs, "colo": go_runs,
               "before": before_runs}, f, indent=1)
PY
