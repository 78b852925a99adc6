"""shoalrestd's /slurmdb/v0.0.44/ endpoints over its unix socket (root: peer credentials): after a
few jobs, jobs/ and job/{id} say what sacct says; accounts, users, associations and QOS say what
sacctmgr says; adding and deleting accounts and QOS works; every answer validates against the
v0.0.44 OpenAPI document kept in the repository."""

from conftest import wait_until
from restd_client import Rest


def rows(c, *cmd):
    return [line.split("|") for line in c.run(list(cmd)).stdout.splitlines() if line]


def test_slurmdb_matches_sacct_and_sacctmgr(cluster, users, submit_dir):
    c = cluster(nodes=2, cpus=2, conf=["KillWait=2", "MinJobAge=2"])
    u1 = users["shoaltest1"]
    c.run(["sacctmgr", "-i", "add", "account", "physics", "Description=particles",
           "Organization=cern"])
    c.run(["sacctmgr", "-i", "add", "user", u1.name, "account=physics"])
    c.run(["sacctmgr", "-i", "modify", "user", u1.name, "set", "MaxJobs=5"])
    c.run(["sacctmgr", "-i", "add", "qos", "hiprio", "Priority=50"])
    rest = Rest(c)  # the shoalrestd `shoal start` runs, over its unix socket, as root

    work = submit_dir(u1)
    ok = c.sbatch(["-A", "physics", "-J", "ok", "--wrap", "srun true; true"], user=u1, cwd=work)
    bad = c.sbatch(["-A", "physics", "-J", "bad", "--wrap", "exit 3"], user=u1, cwd=work)
    long = c.sbatch(["-J", "long", "--wrap", "sleep 300"])
    c.wait_job(long, "RUNNING")
    c.run(["scancel", str(long)])
    jobs = [ok, bad, long]
    for j in jobs:
        c.wait_job(j)
    fmt = "JobID,JobName,User,Account,Partition,State,ExitCode,NodeList"

    def sacct_jobs():
        return {r[0]: r for r in rows(c, "sacct", "-X", "-P", "-n", "-S", "2000-01-01",
                                      "-o", fmt)}
    wait_until(lambda: all(str(j) in sacct_jobs() and sacct_jobs()[str(j)][5] not in
                           ("RUNNING", "PENDING") for j in jobs), 30, "records in accounting")
    expected = sacct_jobs()

    code, body = rest.call("GET", "/slurmdb/v0.0.44/jobs/")
    assert code == 200, body
    got = {str(j["job_id"]): j for j in body["jobs"]}
    for jid in map(str, jobs):
        s, j = expected[jid], got[jid]
        assert j["name"] == s[1] and j["user"] == s[2] and j["account"] == s[3]
        assert j["partition"] == s[4]
        assert s[5].startswith(j["state"]["current"][0]), (s[5], j["state"])
        rc, sig = map(int, s[6].split(":"))
        if j["exit_code"]["return_code"]["set"]:
            assert j["exit_code"]["return_code"]["number"] == rc
        if sig:
            assert j["exit_code"]["signal"]["id"]["number"] == sig
        assert j["nodes"] == s[7]
    assert got[str(bad)]["exit_code"]["return_code"]["number"] == 3
    assert got[str(long)]["kill_request_user"] == "root"

    # job/{id}: with its steps, as sacct lists them.
    code, body = rest.call("GET", f"/slurmdb/v0.0.44/job/{ok}",
                           template="/slurmdb/v0.0.44/job/{job_id}")
    assert code == 200, body
    steps = sorted(s["step"]["id"] for s in body["jobs"][0]["steps"])
    sacct_steps = sorted(r[0] for r in rows(c, "sacct", "-P", "-n", "-j", str(ok), "-o", "JobID")
                         if "." in r[0])
    assert steps == sacct_steps, (steps, sacct_steps)
    code, body = rest.call("GET", "/slurmdb/v0.0.44/jobs/?users=root")
    assert code == 200 and [j["job_id"] for j in body["jobs"]] == [long], body
    code, body = rest.call("GET", "/slurmdb/v0.0.44/job/999999",
                           template="/slurmdb/v0.0.44/job/{job_id}")
    assert code == 404 and body["errors"], body

    # Accounts, users, associations, QOS: what sacctmgr shows.
    code, body = rest.call("GET", "/slurmdb/v0.0.44/accounts/")
    assert code == 200
    accts = {a["name"]: a for a in body["accounts"]}
    for name, descr, org in rows(c, "sacctmgr", "-n", "-P", "show", "account",
                                 "format=Account,Descr,Org"):
        assert accts[name]["description"] == descr and accts[name]["organization"] == org
    assert set(accts) == {r[0] for r in rows(c, "sacctmgr", "-n", "-P", "show", "account",
                                               "format=Account")}
    code, body = rest.call("GET", "/slurmdb/v0.0.44/account/physics?with_assocs&with_coords",
                           template="/slurmdb/v0.0.44/account/{account_name}")
    assert code == 200 and body["accounts"][0]["name"] == "physics"
    assert u1.name in [a["user"] for a in body["accounts"][0]["associations"]]

    code, body = rest.call("GET", "/slurmdb/v0.0.44/users/")
    assert code == 200
    users_rest = {u["name"]: u for u in body["users"]}
    for name, default, admin in rows(c, "sacctmgr", "-n", "-P", "show", "user",
                                     "format=User,DefaultAccount,Admin"):
        assert users_rest[name]["default"]["account"] == default
        assert users_rest[name]["administrator_level"] == [admin]
    code, body = rest.call("GET", f"/slurmdb/v0.0.44/user/{u1.name}?with_assocs",
                           template="/slurmdb/v0.0.44/user/{name}")
    assert code == 200 and body["users"][0]["associations"][0]["account"] == "physics"

    code, body = rest.call("GET", "/slurmdb/v0.0.44/associations/")
    assert code == 200
    got = sorted((a["cluster"], a["account"], a["user"], a["partition"],
                  a["max"]["jobs"]["per"]["count"]["number"]
                  if a["max"]["jobs"]["per"]["count"]["set"] else "")
                 for a in body["associations"])
    want = sorted((cl, ac, us, pa, int(mj) if mj else "")
                  for cl, ac, us, pa, mj in rows(c, "sacctmgr", "-n", "-P", "show", "assoc",
                                                 "format=Cluster,Account,User,Partition,MaxJobs"))
    assert got == want
    code, body = rest.call("GET", f"/slurmdb/v0.0.44/associations/?user={u1.name}")
    assert code == 200 and {a["user"] for a in body["associations"]} == {u1.name}

    code, body = rest.call("GET", "/slurmdb/v0.0.44/qos/")
    assert code == 200
    assert sorted((q["name"], q["priority"]["number"]) for q in body["qos"]) == sorted(
        (n, int(p)) for n, p in rows(c, "sacctmgr", "-n", "-P", "show", "qos",
                                     "format=Name,Priority"))

    for path in ("clusters/", "tres/", "config", "diag/", "ping/"):
        code, body = rest.call("GET", "/slurmdb/v0.0.44/" + path)
        assert code == 200, (path, body)
    code, body = rest.call("GET", "/slurmdb/v0.0.44/clusters/")
    assert [cl["name"] for cl in body["clusters"]] == [
        r[0] for r in rows(c, "sacctmgr", "-n", "-P", "show", "cluster", "format=Cluster")]
    code, body = rest.call("GET", "/slurmdb/v0.0.44/tres/")
    assert {"cpu", "mem", "node"} <= {t["type"] for t in body["TRES"]}

    # Add and delete through REST; sacctmgr sees the change.
    code, body = rest.call("POST", "/slurmdb/v0.0.44/accounts/", body={
        "accounts": [{"name": "chem", "description": "molecules", "organization": "lab"}]})
    assert code == 200, body
    assert rows(c, "sacctmgr", "-n", "-P", "show", "account", "chem",
                "format=Account,Descr") == [["chem", "molecules"]]
    code, body = rest.call("POST", "/slurmdb/v0.0.44/associations/", body={
        "associations": [{"account": "chem", "user": u1.name}]})
    assert code == 200, body

    def chem_assocs():
        return rows(c, "sacctmgr", "-n", "-P", "show", "assoc", "where", f"user={u1.name}",
                    "account=chem", "format=Account,User")
    assert chem_assocs() == [["chem", u1.name]]
    code, body = rest.call("DELETE", f"/slurmdb/v0.0.44/associations/?user={u1.name}&account=chem")
    assert code == 200 and len(body["removed_associations"]) == 1, body
    assert chem_assocs() == []
    code, body = rest.call("DELETE", f"/slurmdb/v0.0.44/associations/?user={u1.name}&account=chem")
    assert code == 404, body
    code, body = rest.call("POST", "/slurmdb/v0.0.44/qos/", body={
        "qos": [{"name": "batchq", "description": "bulk", "priority": {"set": True,
                                                                      "number": 7}}]})
    assert code == 200, body
    assert rows(c, "sacctmgr", "-n", "-P", "show", "qos", "batchq", "format=Name,Priority") == \
        [["batchq", "7"]]
    code, body = rest.call("DELETE", "/slurmdb/v0.0.44/qos/batchq",
                           template="/slurmdb/v0.0.44/qos/{qos}")
    assert code == 200 and body["removed_qos"] == ["batchq"], body
    code, body = rest.call("DELETE", "/slurmdb/v0.0.44/account/chem",
                           template="/slurmdb/v0.0.44/account/{account_name}")
    assert code == 200 and body["removed_accounts"] == ["chem"], body
    assert rows(c, "sacctmgr", "-n", "-P", "show", "account", "chem") == []
    code, body = rest.call("GET", "/slurmdb/v0.0.44/account/chem",
                           template="/slurmdb/v0.0.44/account/{account_name}")
    assert code == 404 and body["errors"], body
    for bad in ('{"accounts": "x"}', '{"accounts": [{"name": ["a"]}]}', "not json"):
        code, body = rest.call("POST", "/slurmdb/v0.0.44/accounts/", raw=bad)
        assert code == 400 and body["errors"], (bad, body)
    code, _ = rest.call("GET", "/slurmdb/v0.0.44/ping/")
    assert code == 200
