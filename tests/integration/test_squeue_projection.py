"""squeue asks the controller only for the fields its format reads (JobQueryRequest.fields);
what it prints must be exactly what whole records give. SHOAL_SQUEUE_WHOLE_RECORDS=1 makes
squeue ask for whole records, the reference here."""

WHOLE = {"SHOAL_SQUEUE_WHOLE_RECORDS": "1"}

SLEEPER = "#!/bin/bash\nsleep 300\n"

CASES = [
    [],
    ["-l"],
    ["--start"],
    ["-r"],
    ["-t", "all"],
    ["-t", "PD", "-u", "root"],
    ["-o", "%.10i %9P %j %u %T %r %M %L %l %D %C %c %m %S %e %V %Q %p %N %B %Y %k %a %q %y %Z"],
    ["-O", "JobID,ArrayJobID,ArrayTaskID,State,Reason,NumCPUs,NumNodes,MinMemory,TimeLimit,"
           "SubmitTime,StartTime,EndTime,PendingTime,Command,WorkDir,Comment,Nice,Requeue,"
           "exit_code,Dependency,ReqNodes,StdOut"],
    ["-S", "-V,j", "-o", "%i %V %j %t"],
    ["-p", "debug", "-n", "sleeper", "-h"],
    ["-w", "n[1-2]", "-t", "R"],
]


def test_projected_answers_print_as_whole_records(cluster):
    c = cluster(nodes=2)
    running = [c.sbatch(["-J", "sleeper", "-N1", "--comment", "a note", "--nice=5"], SLEEPER)
               for _ in range(2)]
    for job in running:
        c.wait_job(job, states={"RUNNING"}, timeout=30)
    held = c.sbatch(["--hold", "-J", "held", "-t", "10", "--mem=100"], SLEEPER)
    c.sbatch(["-J", "arr", "--array=0-5%2", f"--dependency=afterok:{held}", "-o", "arr-%A_%a.out"],
             SLEEPER)
    c.sbatch(["--hold", "-J", "exclusive", "--exclusive", "-N2", "-w", "n[1-2]"], SLEEPER)
    done = c.sbatch(["-J", "quick"], "#!/bin/bash\nexit 3\n")
    c.wait_job(done, timeout=30)

    for args in CASES:
        # Elapsed times come from the controller's clock: a second may tick between two calls,
        # so the projected answer must equal the whole one taken just before or just after.
        before = c.run(["squeue", *args], env=WHOLE).stdout
        projected = c.run(["squeue", *args]).stdout
        after = c.run(["squeue", *args], env=WHOLE).stdout
        if args == ["-l"]:  # its first line is the local date and time
            before, projected, after = (s.split("\n", 1)[1] for s in (before, projected, after))
        assert projected in (before, after), f"squeue {args}:\n{projected}\nwhole:\n{before}"
        assert len(projected.splitlines()) >= 2 or "-h" in args, f"squeue {args} shows jobs"
