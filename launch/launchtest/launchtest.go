// Package launchtest checks, for the tests of a launch.Kind, what the
// kind makes the processes of its cluster agree on (launch.JobDigest):
// that a member whose job differs from the scheduler's in a field that
// must agree is refused when it joins, the refusal naming the field, and
// that a member whose job differs only in fields its host may set for
// itself (paths, memory budgets) joins.
//
// The scheduler is its core (sched.Core), configured by the kind from
// the base job as colo node --role scheduler configures it; each member
// is opened by the kind from its own job, as colo node opens it, and
// registers with what its node would carry (proto.Register.Job and
// JobFields). No process, no network, no clock.
//
//	launchtest.CheckJoin(t, Kind{}, base, launch.Position{Role: proto.RoleMachine, Rank: 0}, []launchtest.Variant{
//		{Name: "another lr", Job: strings.Replace(base, `"lr": 0.1`, `"lr": 0.2`, 1), Differs: []string{"rule.lr"}},
//		{Name: "another data path", Job: strings.Replace(base, "/data/", "/mnt/", 1)},
//	})
//
// A kind whose job is a Go value writes its variants as edits of a base
// job (Jobs):
//
//	job := launchtest.Jobs(t, func() Job { j := DefaultJob(); j.Rounds = 5; return j })
//	launchtest.CheckJoin(t, Kind{}, job(nil), at, []launchtest.Variant{
//		{Name: "more rounds", Job: job(func(j *Job) { j.Rounds = 6 }), Differs: []string{"rounds"}},
//	})
package launchtest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"colo/launch"
	"colo/ps/proto"
	"colo/ps/sched"
)

// Variant is a member's job beside the scheduler's.
type Variant struct {
	// Name names the variant in failures.
	Name string
	// Job is the member's job, the kind's JSON.
	Job string
	// Differs are the fields, as the job file spells them, in which Job
	// differs from the scheduler's job: the member is refused, and the
	// refusal names exactly these. Empty: the job is the scheduler's as
	// far as the cluster is concerned (it differs at most in its host's
	// own fields), and the member joins.
	Differs []string
}

// token is the cluster's token.
const token = "launchtest"

// CheckJoin configures a scheduler by k from the job base and, for each
// variant, opens the member at of the variant's job and has it register
// with a new scheduler: refused naming the fields of Differs, or
// assigned its ids when it names none. The scheduler starts from at's
// numbers of servers and workers, as colo node's command line gives
// them, which the kind may replace by its job's.
func CheckJoin(t testing.TB, k launch.Kind, base string, at launch.Position, variants []Variant) {
	t.Helper()
	cfg := sched.DefaultConfig()
	cfg.Token = token
	if at.Servers > 0 && at.Workers > 0 { // as the command line gives them
		cfg.NumServers, cfg.NumWorkers = at.Servers, at.Workers
	}
	if err := k.Scheduler(json.RawMessage(base), &cfg); err != nil {
		t.Fatalf("kind %s: the scheduler of the base job: %v", k.Name(), err)
	}
	if cfg.JobDigest == "" || len(cfg.JobFields) == 0 {
		t.Fatalf("kind %s: the scheduler checks no job digest (JobDigest %q, %d fields)", k.Name(), cfg.JobDigest, len(cfg.JobFields))
	}
	for i, v := range variants {
		c, err := sched.NewCore(cfg)
		if err != nil {
			t.Fatalf("kind %s: %v", k.Name(), err)
		}
		m, err := k.Open(context.Background(), json.RawMessage(v.Job), at)
		if err != nil {
			t.Errorf("kind %s, %s: opening the member: %v", k.Name(), v.Name, err)
			continue
		}
		if m.JobDigest == "" || len(m.JobFields) == 0 {
			t.Errorf("kind %s, %s: the member carries no job digest (JobDigest %q, %d fields)", k.Name(), v.Name, m.JobDigest, len(m.JobFields))
			continue
		}
		reg := proto.Control(proto.CmdRegister, proto.Register{
			Role: at.Role, Token: proto.TokenDigest(token), Addr: "member", Rank: at.Rank,
			NumServers: at.Servers, NumWorkers: at.Workers, Recover: at.Recover,
			Job: m.JobDigest, JobFields: m.JobFields,
		})
		reg.Sender = proto.Provisional(uint32(100 + i))
		var refused, assigned []sched.Out
		for _, o := range c.Handle(reg) {
			switch o.M.Cmd {
			case proto.CmdRefuse:
				refused = append(refused, o)
			case proto.CmdAssign:
				assigned = append(assigned, o)
			}
		}
		if len(v.Differs) == 0 {
			if len(assigned) != 1 {
				t.Errorf("kind %s, %s: the member is not assigned its ids: %s", k.Name(), v.Name, reasons(refused))
			}
			continue
		}
		want := "its job differs from the scheduler's in " + Fields(v.Differs) + " (job digest " + m.JobDigest[:12] + ", the scheduler's " + cfg.JobDigest[:12] + "): every process of a cluster must read the same job file"
		if got := reasons(refused); len(refused) != 1 || got != want {
			t.Errorf("kind %s, %s: refused for %q\nwant %q", k.Name(), v.Name, got, want)
		}
	}
}

// Jobs returns job, which gives the JSON of a new job of base changed by
// edit (base's job as it is when edit is nil), failing t if it does not
// marshal: the Job of a Variant. Each call starts from a new job of
// base, so that no edit reaches another variant.
func Jobs[J any](t testing.TB, base func() J) (job func(edit func(j *J)) string) {
	return func(edit func(j *J)) string {
		t.Helper()
		j := base()
		if edit != nil {
			edit(&j)
		}
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatalf("the job of a variant: %v", err)
		}
		return string(b)
	}
}

// Fields joins the names of fields as a refusal names them: sorted,
// "a", "a and b", "a, b and c".
func Fields(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if n := len(names); n > 1 {
		return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	return strings.Join(names, "")
}

// reasons returns the reasons of refusals, joined.
func reasons(outs []sched.Out) string {
	var rs []string
	for _, o := range outs {
		var r proto.Refuse
		if err := proto.Decode(o.M, &r); err != nil {
			rs = append(rs, err.Error())
			continue
		}
		rs = append(rs, r.Reason)
	}
	return strings.Join(rs, "; ")
}

// DigestsRate checks that a kind's job digest takes its link_bandwidth
// by the rate it means (launch.DigestRate): every spelling of 100 Mbit/s
// gives one digest, every spelling of no limit another, other rates
// others, and a rate that does not parse is an error naming the kind and
// the field. digest returns the digest of the kind's default job with
// the given link_bandwidth.
func DigestsRate(t *testing.T, kind string, digest func(rate string) (string, error)) {
	t.Helper()
	base, err := digest("100mbit")
	if err != nil {
		t.Fatal(err)
	}
	none, err := digest("")
	if err != nil {
		t.Fatal(err)
	}
	field := "job of kind " + kind + ": link_bandwidth: "
	for _, tc := range []struct {
		rate string
		want string // the digest it has, or the error it is
	}{
		{"100mbit", base},
		{"0.1gbit", base},
		{"100Mbit", base},
		{"100000kbit", base},
		{"12.5MBps", base},
		{"100000000bit", base},
		{"0", none},
		{"unlimited", none},
		{"inf", none},
		{"fast", field + `rate "fast" does not start with a number`},
		{"100", field + `rate "100" has no unit`},
		{"100mbits", field + `rate "100mbits" has unknown unit "mbits"`},
		{"0mbit", field + `rate "0mbit" is zero`},
	} {
		got, err := digest(tc.rate)
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("link_bandwidth %q: %s, want %s", tc.rate, got, tc.want)
		}
	}
	for _, rate := range []string{"200mbit", "100.001mbit"} {
		if other, _ := digest(rate); other == base || other == none {
			t.Errorf("%s has the digest of 100mbit or of no limit", rate)
		}
	}
}
