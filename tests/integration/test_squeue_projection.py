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


def test_long_listing_streamed_in_parts_is_whole(cluster, users):
    """A listing longer than one part of the controller's streamed answer (about 500 rows each)
    arrives whole, in order, filtered, and the same as whole records give; a user's filtered
    listing in a queue mostly of others' jobs too."""
    c = cluster(nodes=1, conf=["MaxArraySize=5001"], accounting=False)
    user = users["shoaltest1"]
    tasks = 3000
    array = c.sbatch(["--hold", "-J", "many", f"--array=1-{tasks}"], SLEEPER)
    mine = [c.sbatch(["--hold", "-J", "mine"], SLEEPER, user=user) for _ in range(3)]
    after = c.sbatch(["--hold", "-J", "after"], SLEEPER)

    out = c.run(["squeue", "-r", "-h", "-o", "%i %j %u %T"]).stdout.splitlines()
    expected = [f"{array}_{t} many root PENDING" for t in range(1, tasks + 1)]
    expected += [f"{j} mine {user.name} PENDING" for j in mine] + [f"{after} after root PENDING"]
    assert out == expected
    whole = c.run(["squeue", "-r", "-h", "-o", "%i %j %u %T"], env=WHOLE).stdout.splitlines()
    assert whole == expected

    # Filters the controller applies while streaming: by user, and by job id (an array's tasks).
    assert c.run(["squeue", "-h", "-u", user.name, "-o", "%i"]).stdout.split() == \
        [str(j) for j in mine]
    by_id = c.run(["squeue", "-r", "-h", "-j", str(array), "-o", "%i"]).stdout.split()
    assert by_id == [f"{array}_{t}" for t in range(1, tasks + 1)]
    # The default listing folds the pending array into one line, as Slurm does.
    folded = c.run(["squeue", "-h", "-o", "%i"]).stdout.split()
    assert folded == [f"{array}_[1-{tasks}]", *map(str, mine), str(after)]
