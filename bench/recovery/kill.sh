#!/bin/sh
# kill.sh kills one process of a colo train --processes --restarts 1 job
# with SIGKILL in each of TRIALS seeded trials and measures the recovery:
# the time from the kill to the failure being noticed (the process's exit
# seen by colo train; for a whole-job restart, the failed run stopped),
# and to training resuming (RECOVERY=replace, the default: the last
# worker rolled back to the checkpoint, after the killed process was
# started again alone and loaded its data; RECOVERY=restart: the
# restarted job's last worker training again, the data loaded again by
# every process). Each
# trial kills a seeded role and rank (a machine, or with SERVERS a server
# or a worker) DELAY_MS (seeded, 0 to 49 ms) after the manifest of a
# seeded checkpoint round (or of a later one, when that checkpoint was
# skipped while the one before was being written) appears, so that it
# dies in one of the rounds that follow; a trial whose job ended before
# the kill is run again (at most three runs).
#
# With REPLICAS (colo train --replicas; needs SERVERS) only servers are
# killed: the killed server's backup takes its key ranges over, nothing
# is started again and nothing rolls back. Noticed is then the server's
# exit seen by colo train, resumed the moment the last worker had sent
# the backup what the killed server had not answered (colo train's
# "failover: ... sent at unix N ns"; "-" and counted apart when it had
# left nothing unanswered), and a trial also fails when a process was
# replaced, the job restarted, or it computed other rounds than the
# unfailed run.
#
# With ROLE=scheduler the scheduler is killed: with RECOVERY=replace a
# scheduler started again at its address with --takeover takes the job
# over from the nodes' reports (nothing is started again but it, nothing
# rolls back; resumed is when the last node heard it, which releases the
# barriers that waited), and a trial also fails when a process was
# replaced, the job restarted, or it computed other rounds than the
# unfailed run; with RECOVERY=restart the whole job restarts.
#
# Under bsp every trial must end as the unfailed run: the same final
# training loss and test measures and the final checkpoint's server
# snapshots equal byte for byte (so the rounds must be a multiple of
# EVERY); a trial that does not is reported as FAILED and the script
# exits 1. Under async (CONSISTENCY=async) the updates applied after the
# checkpoint resumed from are lost and trained again: each trial reports
# the checkpoint round resumed from, the training time lost (from that
# checkpoint's manifest to the kill) and the rounds redone it amounts to
# at the unfailed run's rate (lost time × rounds per second; at most
# EVERY rounds of each worker), and the final loss beside the unfailed
# run's.
#
# Usage, from the repository root:
#
#	bench/recovery/kill.sh [OUT.tsv]       # default recovery-kill.tsv
#
# Environment: RECOVERY (replace or restart, colo train --recovery),
# TRIALS (10), SEED (1), MACHINES (4), SERVERS (0: servers
# co-located; with lr as many as MACHINES), REPLICAS (0), EVERY (3, rounds between checkpoints),
# CONSISTENCY (bsp), ROLE (scheduler, or the default draw), APP (lr: DATA and TEST default to 20 Newsgroups from
# datasets/20news, ARGS to --max-passes 30 --epsilon 0; mlp: Fashion-MNIST
# from FASHION, ../shared/data/fashion-mnist, skipped with a message when
# absent, ARGS --epochs 1 --batch 1000; mf: MovieLens 100k's u.data from
# MOVIELENS, ../shared/data/movielens-100k, 10% of the ratings held out,
# skipped when absent, ARGS --max-passes 120 --epsilon 0), DATA, TEST, ARGS (more colo
# train flags), KEEP (1: keep a failed trial's files, its standard error,
# output, JSON summary and checkpoints, in OUT's directory as
# kill-seedSEED-tTRIAL, where the script names it).
set -eu
out=${1:-recovery-kill.tsv}
trials=${TRIALS:-10}
seed=${SEED:-1}
machines=${MACHINES:-4}
servers=${SERVERS:-0}
every=${EVERY:-3}
consistency=${CONSISTENCY:-bsp}
app=${APP:-lr}
case $app in
lr)
	data=${DATA:-datasets/20news/20news-bydate.train.libsvm.xz}
	test=${TEST:-datasets/20news/20news-bydate.test.libsvm.xz}
	args=${ARGS:---max-passes 30 --epsilon 0}
	;;
mlp)
	f=${FASHION:-../shared/data/fashion-mnist}
	if [ ! -e "$f/train-images-idx3-ubyte.gz" ]; then
		echo "kill.sh: APP=mlp needs Fashion-MNIST in $f (FASHION): skipped" >&2
		exit 0
	fi
	data=${DATA:-$f/train-images-idx3-ubyte.gz}
	test=${TEST:-$f/t10k-images-idx3-ubyte.gz}
	args="--app mlp --labels $f/train-labels-idx1-ubyte.gz --test-labels $f/t10k-labels-idx1-ubyte.gz ${ARGS:---epochs 1 --batch 1000}"
	;;
mf)
	m=${MOVIELENS:-../shared/data/movielens-100k}
	if [ -z "${DATA:-}" ] && [ ! -e "$m/u.data.xz" ]; then
		echo "kill.sh: APP=mf needs MovieLens 100k in $m (MOVIELENS): skipped" >&2
		exit 0
	fi
	data=${DATA:-$m/u.data.xz}
	test=${TEST:-}
	args="--app mf --format ratings ${ARGS:---max-passes 120 --epsilon 0}"
	;;
*)
	echo "kill.sh: APP=$app, want lr, mlp or mf" >&2
	exit 2
	;;
esac
recovery=${RECOVERY:-replace}
replicas=${REPLICAS:-0}
if [ "$replicas" -gt 0 ] && [ "$servers" -eq 0 ]; then
	echo "kill.sh: REPLICAS=$replicas needs servers apart (SERVERS)" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/colo-recovery-XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/colo" ./cmd/colo

# field FILE NAME prints the number NAME of a colo train JSON summary.
field() { sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -1; }
now() { date +%s%N; }
# newest DIR prints the round of the newest checkpoint manifest in DIR (-1: none).
newest() {
	last=$(ls -d "$1"/round-*/MANIFEST 2>/dev/null | tail -1)
	if [ -z "$last" ]; then echo -1; else basename "$(dirname "$last")" | sed 's/round-0*//; s/^$/0/'; fi
}

# run DIR JSON [ROLE RANK AFTER DELAY_MS] runs the job with checkpoints
# in DIR, killing ROLE RANK when given; its standard error goes to
# DIR.err and the kill's time (ns) to DIR.killed.
run() {
	dir=$1 json=$2
	ext=
	[ "$servers" -gt 0 ] && ext="--servers $servers"
	[ "$replicas" -gt 0 ] && ext="$ext --replicas $replicas"
	[ -n "$test" ] && ext="$ext --test $test"
	# shellcheck disable=SC2086
	"$work/colo" train "$data" --machines "$machines" $ext --consistency "$consistency" $args \
		--processes --checkpoint "$dir" --checkpoint-every "$every" --restarts 1 --recovery "$recovery" --json "$json" >"$dir.out" 2>"$dir.err" &
	pid=$!
	if [ $# -gt 2 ]; then
		# The manifest of round AFTER, or of a later one (a checkpoint due
		# while the one before is still being written is skipped).
		while [ "$(newest "$dir")" -lt "$5" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.002; done
		sleep "$(awk "BEGIN{print $6/1000}")"
		rk="--rank $4 "
		[ "$3" = scheduler ] && rk="--role scheduler "
		victim=$(ps -o pid=,args= --ppid "$pid" | awk -v r="--role $3 " -v k="$rk" 'index($0" ", r) && index($0" ", k) {print $1; exit}')
		if [ -n "$victim" ]; then
			kill -9 "$victim" && now >"$dir.killed"
			# The newest complete checkpoint then: its round and time (ns).
			last=$(ls -d "$dir"/round-*/MANIFEST 2>/dev/null | tail -1)
			[ -z "$last" ] || echo "$(basename "$(dirname "$last")" | sed 's/round-0*//') $(stat -c '%.9Y' "$last" 2>/dev/null | tr -d .)" >"$dir.ck"
		fi
	fi
	wait "$pid"
}

# The unfailed run.
run "$work/base" "$work/base.json"
rounds=$(field rounds "$work/base.json")
train_s=$(field train_seconds "$work/base.json")
base_loss=$(field final_train_loss "$work/base.json")
start_s=$(field start_seconds "$work/base.json")
if [ "$consistency" = bsp ] && [ $((rounds % every)) -ne 0 ]; then
	echo "kill.sh: $rounds rounds, not a multiple of EVERY=$every: the final model is in no checkpoint" >&2
	exit 2
fi
checkpoints=$((rounds / every))
if [ "$checkpoints" -lt 4 ]; then
	echo "kill.sh: $rounds rounds make $checkpoints checkpoints of EVERY=$every, want at least 4" >&2
	exit 2
fi
echo "unfailed: $rounds rounds, training $train_s s, start $start_s s, loss $base_loss" >&2

roles=machine
[ "$servers" -gt 0 ] && roles="server worker"
[ "$replicas" -gt 0 ] && roles=server
[ -n "${ROLE:-}" ] && roles=$ROLE
printf 'trial\tkilled\tafter_round\tdelay_ms\tresumed_from\tnoticed_s\trecovered_s\tlost_s\tredone_rounds\tfinal_loss\tunfailed_loss\tverdict\n' >"$out"
failed=0
i=1
while [ "$i" -le "$trials" ]; do
	# A seeded draw: role, rank, checkpoint (not one of the last 2), delay.
	set -- $(awk -v s="$seed" -v i="$i" -v roles="$roles" -v ranks="$machines" -v servers="$servers" -v c="$checkpoints" -v e="$every" 'BEGIN{
		srand(s * 1000 + i); n = split(roles, r, " "); role = r[1 + int(rand() * n)]
		k = (role == "server") ? servers : ranks
		print role, int(rand() * k), e * (1 + int(rand() * (c - 2))), int(rand() * 50)}')
	role=$1 rank=$2 after=$3 delay=$4
	d="$work/t$i"
	verdict=ok none=0
	# A job that ended before the kill (the checkpoints after the drawn
	# one skipped while the one before was written) is run again, twice
	# at most: the trial did not happen.
	tries=1
	while :; do
		rc=0
		run "$d" "$d.json" "$role" "$rank" "$after" "$delay" || rc=$?
		{ [ "$rc" = 0 ] && [ ! -e "$d.killed" ] && [ "$tries" -lt 3 ]; } || break
		echo "trial $i: the job ended before the kill: run again" >&2
		rm -rf "$d" "$d.json" "$d.out" "$d.err" "$d.ck"
		tries=$((tries + 1))
	done
	if [ "$rc" != 0 ] || [ ! -e "$d.killed" ]; then
		verdict=FAILED
	fi
	killed=$(cat "$d.killed" 2>/dev/null || echo 0)
	noticed=$(sed -n 's/.*noticed at unix \([0-9]*\) ns.*/\1/p' "$d.err" | head -1)
	resumed=$(sed -n 's/.*training resumed at unix \([0-9]*\) ns.*/\1/p' "$d.err" | head -1)
	if [ "$replicas" -gt 0 ]; then
		if grep -q "replacement 1\|restart 1 of 1" "$d.err" || ! grep -q "$role $rank failed (.*): its backup serves its key ranges" "$d.err" ||
			[ "$(field rounds "$d.json")" != "$rounds" ]; then
			verdict=FAILED
		fi
		noticed=$(sed -n 's/.*failover: .*seen at unix \([0-9]*\) ns.*/\1/p' "$d.err" | head -1)
		resumed=$(sed -n 's/.*failover: .*sent at unix \([0-9]*\) ns.*/\1/p' "$d.err" | head -1)
		# Nothing unanswered: no time to report, the trial still checked.
		[ -n "$resumed" ] || none=1 noticed=x resumed=x
	fi
	if [ "$role" = scheduler ] && [ "$recovery" = replace ]; then
		if grep -q "replacement 1\|restart 1 of 1" "$d.err" || ! grep -q "takeover 1 of 1 after scheduler failed" "$d.err" ||
			[ "$(field rounds "$d.json")" != "$rounds" ]; then
			verdict=FAILED
		fi
	fi
	from=$(sed -n -e 's/.*restart 1 of 1 after .*: from the checkpoint of round \(-*[0-9]*\).*/\1/p' \
		-e 's/.*replacement 1: .* rolled back with the others to the checkpoint of round \([0-9]*\).*/\1/p' "$d.err" | head -1)
	loss=$(field final_train_loss "$d.json" 2>/dev/null || true)
	lost=- redone=-
	if [ -n "$from" ] && [ -s "$d.ck" ] && [ "$killed" != 0 ]; then
		read -r ckround ck <"$d.ck"
		# ck is empty when the manifest was pruned before its time was read.
		if [ "${ckround:-0}" = "$from" ] && [ -n "${ck:-}" ]; then
			lost=$(awk "BEGIN{printf \"%.3f\", ($killed - $ck) / 1e9}")
			redone=$(awk "BEGIN{r = $lost * $rounds / $train_s; if (r > $every) r = $every; printf \"%.1f\", r}")
		fi
	fi
	if [ -z "$noticed" ] || [ -z "$resumed" ]; then
		verdict=FAILED
	fi
	if [ "$verdict" = ok ] && [ "$consistency" = bsp ]; then
		if [ "$loss" != "$base_loss" ] || [ "$(field test_auc "$d.json")" != "$(field test_auc "$work/base.json")" ] ||
			[ "$(field test_accuracy "$d.json")" != "$(field test_accuracy "$work/base.json")" ] ||
			[ "$(field test_rmse "$d.json")" != "$(field test_rmse "$work/base.json")" ]; then
			verdict=FAILED
		fi
		final=$(printf 'round-%09d' "$rounds")
		for s in "$work/base/$final"/server-*.snap; do
			cmp -s "$s" "$d/$final/$(basename "$s")" || verdict=FAILED
		done
	fi
	[ "$verdict" = ok ] || failed=$((failed + 1))
	if [ "$none" = 1 ]; then
		noticed_s=- recovered_s=-
	else
		noticed_s=$(awk "BEGIN{printf \"%.3f\", (${noticed:-0} - $killed) / 1e9}")
		recovered_s=$(awk "BEGIN{printf \"%.3f\", (${resumed:-0} - $killed) / 1e9}")
	fi
	printf '%d\t%s %d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$role" "$rank" "$after" "$delay" "${from:--}" \
		"$noticed_s" "$recovered_s" \
		"$lost" "$redone" "${loss:--}" "$base_loss" "$verdict" >>"$out"
	[ "$verdict" = ok ] || { echo "trial $i failed:" >&2; tail -5 "$d.err" >&2; }
	if [ "$verdict" != ok ] && [ "${KEEP:-0}" = 1 ]; then
		keep="$(dirname "$out")/kill-seed$seed-t$i"
		rm -rf "$keep" && mkdir -p "$keep"
		for f in "$d" "$d.json" "$d.out" "$d.err" "$d.killed" "$d.ck"; do
			[ ! -e "$f" ] || mv "$f" "$keep/"
		done
		echo "trial $i: its files kept in $keep" >&2
	fi
	rm -rf "$d" "$d.json" "$d.out" "$d.err" "$d.killed" "$d.ck"
	i=$((i + 1))
done
cat "$out"
for col in 6 7; do
	awk -F'\t' -v c="$col" 'NR > 1 && $12 == "ok" && $c != "-" {print $c}' "$out" | sort -n | awk -v n="$trials" -v f="$failed" -v what="$([ "$col" = 6 ] && echo noticed || echo "training resuming")" '
	{v[NR] = $1} END {if (NR) printf "%d of %d trials recovered; time from the kill to %s (%d trials timed): median %.3f s, max %.3f s\n", n - f, n, what, NR, v[int((NR + 1) / 2)], v[NR]
	else printf "0 of %d trials recovered\n", n}'
done
[ "$failed" -eq 0 ]
