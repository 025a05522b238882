"""run.py runs the ps-lite peer of `colo bench kv` (kv_bench, built by
build.sh) and prints its records as colo bench kv does: a table, and with
--json FILE the records under "results", each {mode, servers, workers, op,
keys_per_s, mb_per_s, p50_us, p99_us, requests, seconds, cpu_us} in colo's
units (MB/s counts 12 bytes per sparse key, key and value, and 4 per dense
value; cpu_us is the CPU time of every process of the job per request).

Usage:

    python3 bench/pslite/run.py KV_BENCH [--duration 1s] [--shapes 1x1,2x2] [--json FILE]

Each shape is one ps-lite job over loopback (a scheduler, the servers and the
workers as separate processes, ps-lite's tests/local.sh set-up); its workers
measure the four kinds in colo's order and print their latencies, which are
merged here exactly as colo merges its workers' (bench/kv benchOne): keys
per second is the keys of every counted request over the time the workers
were busy with them, averaged over workers; the first request of each kind
is a warm-up and not counted; cpu_us divides the CPU time of the workers and
servers over the kind's counted requests (kv_bench's cpu_ns) by their
number, as colo does. There is no plain TCP reference (colo
bench kv's plain_mb_per_s).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

KINDS = [("sparse", "push"), ("sparse", "pull"), ("dense", "push"), ("dense", "pull")]
SPARSE_KEYS = 100_000
DENSE_VALS = 1 << 20


def parse_duration(s):
    """Parses a Go-style duration of ms or s ("1s", "500ms", "1.5s")."""
    for unit, scale in (("ms", 1), ("s", 1000)):
        if s.endswith(unit):
            try:
                v = float(s[: -len(unit)]) * scale
            except ValueError:
                break
            if v >= 1:
                return int(v)
    raise argparse.ArgumentTypeError(f"--duration {s}: want a time such as 1s or 500ms")


def parse_shapes(s):
    out = []
    for part in s.split(","):
        try:
            a, b = part.lower().split("x")
            shape = (int(a), int(b))
        except ValueError:
            raise argparse.ArgumentTypeError(f"--shapes {part}: want SERVERSxWORKERS, such as 2x2")
        if shape[0] < 1 or shape[1] < 1:
            raise argparse.ArgumentTypeError(f"--shapes {part}: want at least one server and one worker")
        out.append(shape)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_shape(binary, servers, workers, duration_ms, sparse_keys=SPARSE_KEYS, dense_vals=DENSE_VALS):
    """Runs one ps-lite job of the shape and returns its records."""
    env = dict(os.environ)
    env.update(
        DMLC_NUM_SERVER=str(servers),
        DMLC_NUM_WORKER=str(workers),
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT=str(free_port()),
        DMLC_NODE_HOST="127.0.0.1",
        KV_DURATION_MS=str(duration_ms),
        KV_SPARSE_KEYS=str(sparse_keys),
        KV_DENSE_VALS=str(dense_vals),
    )
    procs = []
    with tempfile.TemporaryDirectory(prefix="pslite-kv-") as tmp:
        try:
            roles = ["scheduler"] + ["server"] * servers + ["worker"] * workers
            for i, role in enumerate(roles):
                out = open(os.path.join(tmp, f"{i}.out"), "w")
                err = open(os.path.join(tmp, f"{i}.err"), "w")
                procs.append((role, subprocess.Popen([binary], env=dict(env, DMLC_ROLE=role), stdout=out, stderr=err)))
            # Four kinds of duration_ms each, plus start-up and warm-up.
            limit = 60 + 8 * duration_ms / 1000
            deadline = time.monotonic() + limit
            for role, p in procs:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            state = []
            for i, (role, p) in enumerate(procs):
                lines = sum(1 for _ in open(os.path.join(tmp, f"{i}.out")))
                err = open(os.path.join(tmp, f"{i}.err")).read().strip().splitlines()[-3:]
                state.append(f"  {role}: {'running' if p.poll() is None else f'exit {p.returncode}'}, {lines} lines out" + "".join(f"\n    {l}" for l in err))
            raise Hang(f"ps-lite {servers}x{workers}: no end after {limit:.0f} s\n" + "\n".join(state))
        finally:
            for _, p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        lines, server_cpu = [], {}
        for i, (role, p) in enumerate(procs):
            if p.returncode != 0:
                err = open(os.path.join(tmp, f"{i}.err")).read()[-2000:]
                raise RuntimeError(f"ps-lite {servers}x{workers}: {role} exited with {p.returncode}:\n{err}")
            if role == "scheduler":
                continue
            for n, line in enumerate(open(os.path.join(tmp, f"{i}.out")), 1):
                try:
                    v = json.loads(line)
                except json.JSONDecodeError as e:
                    raise RuntimeError(f"ps-lite {servers}x{workers}: {role} output line {n}: {e}")
                if role == "worker":
                    lines.append(v)
                else:
                    for k, ns in v["cpu_ns"].items():
                        server_cpu[k] = server_cpu.get(k, 0) + ns
    recs = []
    for mode, op in KINDS:
        mine = [l for l in lines if l["mode"] == mode and l["op"] == op]
        if not mine:
            continue
        if len(mine) != workers:
            raise RuntimeError(f"ps-lite {servers}x{workers} {mode} {op}: {len(mine)} workers reported, want {workers}")
        lat = sorted(x for l in mine for x in l["lat_ns"])
        if not lat:
            raise RuntimeError(f"ps-lite {servers}x{workers} {mode} {op}: no request completed")
        per_worker = sum(lat) / 1e9 / workers
        keys = mine[0]["keys"]
        # Every process's CPU over the kind's timed requests, per request.
        cpu_ns = sum(l["cpu_ns"] for l in mine) + server_cpu.get(f"{mode}-{op}", 0)
        kps = keys * len(lat) / per_worker
        recs.append(
            {
                "mode": mode,
                "servers": servers,
                "workers": workers,
                "op": op,
                "keys_per_s": kps,
                "mb_per_s": kps * (12 if mode == "sparse" else 4) / 1e6,
                "p50_us": lat[len(lat) // 2] / 1e3,
                "p99_us": lat[min(len(lat) - 1, len(lat) * 99 // 100)] / 1e3,
                "requests": len(lat),
                "seconds": per_worker,
                "cpu_us": cpu_ns / 1e3 / len(lat),
            }
        )
    return recs


class Hang(RuntimeError):
    """A ps-lite job that did not end in time."""


def run(binary, shapes, duration_ms):
    """Runs every shape; a job that hangs is killed and run once more (on a
    new port), with a note on standard error."""
    recs = []
    for s, w in shapes:
        try:
            recs += run_shape(binary, s, w, duration_ms)
        except Hang as e:
            print(f"run.py: {e}\nrun.py: running ps-lite {s}x{w} again", file=sys.stderr)
            recs += run_shape(binary, s, w, duration_ms)
    return recs


def write_table(out, recs):
    out.write(f"{'mode':>6}  {'servers×workers':>15}  {'op':>4}  {'keys/s':>8}  {'MB/s':>6}  {'p50 µs':>7}  {'p99 µs':>7}  {'requests':>8}  {'CPU µs':>7}\n")
    for r in recs:
        out.write(
            f"{r['mode']:>6}  {str(r['servers']) + '×' + str(r['workers']):>15}  {r['op']:>4}  {r['keys_per_s'] / 1e6:>7.1f}M"
            f"  {r['mb_per_s']:>6.0f}  {r['p50_us']:>7.0f}  {r['p99_us']:>7.0f}  {r['requests']:>8}  {r['cpu_us']:>7.0f}\n"
        )


def main():
    ap = argparse.ArgumentParser(description="Runs ps-lite's kv_bench as colo bench kv.")
    ap.add_argument("binary", help="kv_bench, as built by build.sh")
    ap.add_argument("--duration", type=parse_duration, default=1000, help="how long each kind runs (1s)")
    ap.add_argument("--shapes", type=parse_shapes, default=[(1, 1), (2, 2)], help="servers x workers (1x1,2x2)")
    ap.add_argument("--json", help="write the records to this file")
    a = ap.parse_args()
    if not os.access(a.binary, os.X_OK):
        ap.error(f"{a.binary}: not an executable (build it with bench/pslite/build.sh)")
    try:
        recs = run(a.binary, a.shapes, a.duration)
    except RuntimeError as e:
        sys.exit(f"run.py: {e}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": "ps-lite kv_bench", "results": recs}, f, indent=2)
    write_table(sys.stdout, recs)


if __name__ == "__main__":
    main()
