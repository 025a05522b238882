// Package launch runs a parameter-server cluster as processes of the colo
// binary and supervises them: it starts the scheduler and reads the
// address it listens on, starts the servers, workers or machines, waits
// for all of them, and when one fails gives the others a grace period to
// end on their own (the scheduler tells them) before killing them, then
// names the process that failed first with the last lines of its standard
// error.
//
// Where a process runs is the Starter's business: Loopback runs every
// process on 127.0.0.1 of this host, Netns each host in a Linux network
// namespace of its own, joined to the others by veth links that tc shapes
// (package launch/netns). A Spec says what to run: a name used in every
// error, the host (0 for the scheduler, i+1 for machine, server or worker
// i), the program, its arguments and extra environment.
//
//	env, _ := launch.NewEnvelope("smoke", job)
//	out, err := (&launch.Cluster{Envelope: env, Machines: 2}).Run(ctx)
//	if err != nil {
//		return err // a *Failure: "machine 0 failed: exit status 1: … (then scheduler killed)"
//	}
//	for _, m := range out.Members {
//		m.Report.Decode(&result) // what each member's kind reported
//	}
//
// A distributed workload is a Kind: a value, passed in by the caller,
// that configures the scheduler from a job and opens what a node of a
// role and rank runs. Its job travels in an Envelope ({"kind": …, "job":
// …}) that every process reads (colo node --job-file), and every member
// writes one Report. Every kind makes the processes of its cluster agree
// on its job: the scheduler and each member carry its JobDigest (the
// job as decoded, without the fields each host may set for itself, such
// as its paths), and the scheduler refuses a member whose job is
// another, naming the fields that differ (launchtest.CheckJoin tests a
// kind for it). Cluster runs a job of any kind on processes: it
// writes the envelope to a temporary directory, starts the scheduler and
// the members through a Supervisor and a Starter, replaces failed
// members when asked, and reads their reports; it is the only code that
// spells colo node's command line. A worker may also be another program
// (Cluster.Worker), which joins through the COLO_* environment of
// WorkerEnv. The kinds live beside their workloads: training in
// train/deploy, distributed Parsa in distparsa, decentralised training in
// gossip/job, the smoke job of colo launch in app/smoke; this package
// imports none of them, nor any metrics library (RunNode and
// RunScheduler take an observer of their counters instead).
//
// No process outlives the supervisor. Wait returns only once every
// process has been reaped; a context cancelled while waiting kills them
// all. On Linux the starters also ask the kernel to kill each child when
// the supervising process dies (SIGKILL through PR_SET_PDEATHSIG), so a
// crashed or killed launcher leaves no cluster behind; see Supervisor.Start
// for the thread that this ties the child to. What a child writes is kept
// bounded: the last StdoutLimit bytes of its standard output (for the JSON
// summary it prints at the end) and the last StderrLimit bytes of its
// standard error.
//
// The processes inherit this process's environment without its COLO_*
// and DMLC_* variables, which colo node would read for every flag not on
// its command line (FromEnv, ClusterFlags.Resolve); Spec.Env adds to it.
//
// On a real cluster another launcher starts the processes: ps-lite's
// dmlc-submit and Kubernetes through DMLC_* variables, mpirun and srun
// through their ranks. ClusterFlags turns what they give a process into
// colo node's flags, finds the address a node advertises (--host,
// --interface, or the route to the scheduler) and binds its data ports
// (--port, --port-range); docs/deploy.md walks through each launcher.
package launch
