#!/bin/sh
# checkpoint.sh measures what checkpoints cost a training job: it runs
# colo train in process RUNS times without checkpoints and RUNS times
# with a checkpoint every EVERY rounds, alternated (without, with, with,
# without, …) so that both see the same load, and prints each run's
# training time, the checkpoints taken and skipped (a checkpoint due
# while the one before is still being written is skipped), the time the
# checkpoints held the training loop and their writers took beside it,
# and the CPU time of the process; then the medians and the overheads,
# median with / median without − 1, of the training time (what a user
# waits for; on a shared machine mostly the noise of the other work) and
# of the CPU time (what the checkpoints add to the work, whatever the
# load).
#
# Usage, from the repository root:
#
#	bench/recovery/checkpoint.sh [OUT.tsv]     # default checkpoint-overhead.tsv
#
# Environment: RUNS (5), EVERY (10), MACHINES (4), DATA and TEST (20
# Newsgroups from datasets/20news), ARGS (more colo train flags; default
# --max-passes 200 --epsilon 0: 200 full-batch rounds of logistic
# regression, about 17 ms each on a quiet 2-core machine), COLO (a colo
# binary to measure instead of building this tree's, to compare builds
# side by side), BEFORE (a colo binary of an earlier build: each round
# then also runs it with checkpoints, as "before", beside this build's
# "with", the three modes in an order that rotates from round to round,
# and the summary gives the overheads of both builds against the same
# runs without checkpoints).
set -eu
out=${1:-checkpoint-overhead.tsv}
runs=${RUNS:-5}
every=${EVERY:-10}
machines=${MACHINES:-4}
data=${DATA:-datasets/20news/20news-bydate.train.libsvm.xz}
test=${TEST:-datasets/20news/20news-bydate.test.libsvm.xz}
args=${ARGS:---max-passes 200 --epsilon 0}

work=$(mktemp -d "${TMPDIR:-/tmp}/colo-checkpoint-XXXXXX")
trap 'rm -rf "$work"' EXIT
colo=${COLO:-}
if [ -z "$colo" ]; then
	go build -o "$work/colo" ./cmd/colo
	colo=$work/colo
fi

# field FILE NAME prints the number NAME of a colo train JSON summary (0
# when absent).
field() {
	v=$(sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -1)
	echo "${v:-0}"
}

printf 'run\tcheckpoints\ttrain_s\ttaken\tskipped\tloop_s\twrite_s\tcpu_s\tload\n' >"$out"
i=1
while [ "$i" -le "$runs" ]; do
	# ABBA: the order alternates, so that a load that rises or falls
	# during the runs favours neither.
	order="without with"
	[ $((i % 2)) -eq 0 ] && order="with without"
	if [ -n "${BEFORE:-}" ]; then
		case $((i % 3)) in
		1) order="without before with" ;;
		2) order="with without before" ;;
		0) order="before with without" ;;
		esac
	fi
	for mode in $order; do
		ck=
		bin=$colo
		[ "$mode" = before ] && bin=$BEFORE
		if [ "$mode" != without ]; then
			rm -rf "$work/ck"
			ck="--checkpoint $work/ck --checkpoint-every $every"
		fi
		load=$(cut -d' ' -f1 /proc/loadavg)
		# shellcheck disable=SC2086
		/usr/bin/time -f '%U %S' -o "$work/cpu" "$bin" train "$data" --test "$test" --machines "$machines" $args $ck --json "$work/run.json" >/dev/null 2>"$work/run.err" || {
			cat "$work/run.err" >&2
			exit 1
		}
		j=$work/run.json
		cpu=$(awk '{print $1 + $2}' "$work/cpu")
		printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$mode" "$(field train_seconds "$j")" "$(field checkpoints "$j")" \
			"$(field checkpoints_skipped "$j")" "$(field checkpoint_seconds "$j")" "$(field checkpoint_write_seconds "$j")" "$cpu" "$load" >>"$out"
	done
	i=$((i + 1))
done
cat "$out"
# The medians of the training time and the overhead.
awk -F'\t' 'NR > 1 { t[$2] = t[$2] " " $3; c[$2] = c[$2] " " $8; l[$2] = l[$2] " " $6; if (NR == 2 || $9 < lo) lo = $9; if (NR == 2 || $9 > hi) hi = $9 }
function median(s,   a, n, i, j, x) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "load (1-minute average as each run started): %s to %s\n", lo, hi
	w = median(t["without"]); wc = median(c["without"])
	n = split("before with", modes, " ")
	for (m = 1; m <= n; m++) {
		mode = modes[m]
		if (!(mode in t)) continue
		k = median(t[mode]); kc = median(c[mode])
		printf "%s: median training time: without checkpoints %.3f s, with %.3f s: overhead %+.1f%%\n", mode, w, k, 100 * (k / w - 1)
		printf "%s: median time the checkpoints held the training loop: %.3f s, %.1f%% of the training time without\n", mode, median(l[mode]), 100 * median(l[mode]) / w
		printf "%s: median CPU time of the process (user + system): without %.2f s, with %.2f s: %+.1f%%\n", mode, wc, kc, 100 * (kc / wc - 1)
	}
}' "$out"
