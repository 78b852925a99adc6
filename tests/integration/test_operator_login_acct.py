"""shoal-operator end to end for LoginSet and Accounting (issue 9): a Controller with an
Accounting (shoaldbd on a real MariaDB reached over the pod network, its password in a Secret), a
NodeSet and a LoginSet, applied with kubectl, run as real processes in pods of the kubelet
simulator. Jobs reach sacct; a new password Secret restarts shoaldbd and accounting goes on; an
unprivileged user ssh's into the login pod's real sshd and runs sinfo and sbatch --wait there;
root login is refused as the LoginSet configures it."""

import base64
import os
import pwd
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import BIN, REPO
from k8s_env import NS, K8s, ready, wait
from mariadb import MariaDB, available as mariadb_available

sys.path.insert(0, str(REPO / "tests" / "deploy"))
import podsecurity  # noqa: E402

SSHD = "/usr/sbin/sshd"
# Its own pod network, so a run of test_operator_e2e.py beside it (which removes its bridge at
# the end) cannot cut this one off; pods reach the host at HOST_IP.
BRIDGE, CIDR, HOST_IP = "kola0", "10.248.0.0/16", "10.248.0.1"
DB_USER = "acct"
SSSD_CONF = "[sssd]\nservices = nss, pam, ssh\ndomains = example\n[domain/example]\n" \
            "id_provider = ldap\nldap_uri = ldap://ldap.example\n"
LOGIN_SEL = "app.kubernetes.io/instance=login,app.kubernetes.io/name=shoal-login"


def controller_cr():
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "Controller",
            "metadata": {"name": "shoal", "namespace": NS},
            "spec": {"clusterName": "k8sacct",
                     "slurmKeyRef": {"name": "shoal-slurm-key", "key": "slurm.key"},
                     "jwtKeyRef": {"name": "shoal-jwt-key", "key": "jwt.key"},
                     "accountingRef": {"name": "acct"},
                     "extraConf": "SlurmdTimeout=30\nKillWait=5\n"}}


def accounting_cr(port):
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "Accounting",
            "metadata": {"name": "acct", "namespace": NS},
            "spec": {"slurmKeyRef": {"name": "shoal-slurm-key", "key": "slurm.key"},
                     "jwtKeyRef": {"name": "shoal-jwt-key", "key": "jwt.key"},
                     "storageConfig": {"host": HOST_IP, "port": port,
                                       "database": "shoal_k8s_acct", "username": DB_USER,
                                       "passwordKeyRef": {"name": "acct-db", "key": "password"}}}}


def nodeset_cr():
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": "cpu", "namespace": NS},
            "spec": {"controllerRef": {"name": "shoal"}, "replicas": 2, "image": "shoal/worker:1",
                     "partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"}}}


def loginset_cr(root_pub):
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "LoginSet",
            "metadata": {"name": "login", "namespace": NS},
            "spec": {"controllerRef": {"name": "shoal"}, "replicas": 1,
                     # The admin's policy: no root login, even with a key the LoginSet lists.
                     "extraSshdConfig": "PermitRootLogin no\nLoginGraceTime 20",
                     "rootSshAuthorizedKeys": root_pub,
                     "sssdConfRef": {"name": "login-sssd", "key": "sssd.conf"}}}


def sql(db, statement):
    client = shutil.which("mariadb") or shutil.which("mysql")
    r = subprocess.run([client, "--no-defaults", f"--socket={db.socket}", "-uroot", "-N", "-e",
                        statement], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def keypair(path, owner=None):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f",
                    str(path)], check=True, capture_output=True)
    if owner is not None:
        for p in (path, path.with_suffix(".pub")):
            os.chown(p, owner.uid, owner.gid)
    return path.with_suffix(".pub").read_text().strip()


def ensure_image_user():
    """The Shoal images have user shoal (uid 401, the pods' runAsUser and the generated SlurmUser);
    the simulator runs pods on this host's /etc/passwd, so the test adds it when missing.
    Returns whether it was added (and must be removed)."""
    try:
        pw = pwd.getpwnam("shoal")
    except KeyError:
        pass
    else:
        assert pw.pw_uid == 401, f"user shoal exists with uid {pw.pw_uid}, the images use 401"
        return False
    try:
        other = pwd.getpwuid(401).pw_name
    except KeyError:
        other = None
    assert other is None, f"uid 401 belongs to {other}; the images' user shoal needs it"
    subprocess.run(["useradd", "-r", "-u", "401", "-U", "-M", "-d", "/nonexistent", "-s",
                    "/usr/sbin/nologin", "shoal"], check=True, capture_output=True)
    return True


@pytest.fixture(scope="module")
def env(request, users):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    if not mariadb_available():
        if os.environ.get("SHOAL_REQUIRE_MARIADB") == "1":
            pytest.fail("SHOAL_REQUIRE_MARIADB=1 but mariadbd is not installed")
        pytest.skip("mariadbd is not installed (scripts/setup.sh installs mariadb-server)")
    if not os.access(SSHD, os.X_OK):
        pytest.skip("sshd is not installed (scripts/setup.sh installs openssh-server)")
    user = users["shoaltest1"]
    added_user = ensure_image_user()
    k = K8s(k8s_nodes=("k1", "k2"), bridge=BRIDGE, cidr=CIDR)
    db = None
    ssh_dir = user.home / ".ssh"
    had_ssh_dir = ssh_dir.exists()
    auth = ssh_dir / "authorized_keys"
    old_auth = auth.read_bytes() if auth.exists() else None
    k.work = Path(tempfile.mkdtemp(prefix="shoal-k8s-la-", dir="/tmp"))
    os.chmod(k.work, 0o755)
    try:
        k.start()
        # Pods reach the host on the bridge only: MariaDB listens there (the simulator made it).
        db = MariaDB(k.root / "mariadb", bind=HOST_IP).start()
        k.db = db
        k.db_password = secrets.token_hex(12)
        sql(db, f"CREATE USER '{DB_USER}'@'%' IDENTIFIED BY '{k.db_password}'; "
                f"GRANT ALL PRIVILEGES ON *.* TO '{DB_USER}'@'%'; FLUSH PRIVILEGES;")
        k.secret("shoal-slurm-key", {"slurm.key": secrets.token_bytes(32)})
        k.secret("shoal-jwt-key", {"jwt.key": secrets.token_hex(32)})
        k.secret("acct-db", {"password": k.db_password})
        k.secret("login-sssd", {"sssd.conf": SSSD_CONF})
        # The user's key in their home (a shared home, as NFS would be); root's key in the CR.
        k.user = user
        k.user_key = k.work / "user_key"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        os.chown(ssh_dir, user.uid, user.gid)
        auth.write_text(keypair(k.user_key, owner=user) + "\n")
        os.chown(auth, user.uid, user.gid)
        os.chmod(auth, 0o600)
        k.root_key = k.work / "root_key"
        root_pub = keypair(k.root_key)
        k.start_operator("--resync-seconds", "10")
        k.apply(accounting_cr(db.port))
        k.apply(controller_cr())
        k.apply(nodeset_cr())
        k.apply(loginset_cr(root_pub))
        yield k
    finally:
        keep = request.session.testsfailed > 0
        k.stop(keep=True)
        if db is not None:
            db.stop()
        if not had_ssh_dir:
            shutil.rmtree(ssh_dir, ignore_errors=True)
        elif old_auth is not None:
            auth.write_bytes(old_auth)
        else:
            auth.unlink(missing_ok=True)
        if added_user:
            # -f: a pod of another simulator may still run as uid 401.
            subprocess.run(["userdel", "-f", "shoal"], capture_output=True)
        shutil.rmtree(k.work, ignore_errors=True)
        if keep:
            print(f"kept {k.root}")
        else:
            shutil.rmtree(k.root, ignore_errors=True)


def node_states(env):
    r = env.ctl("sinfo", "-h", "-N", "-o", "%N %t")
    if r.returncode != 0:
        return {}
    return dict(line.split() for line in r.stdout.strip().split("\n") if line.strip())


def sacct_state(env, job):
    r = env.ctl("sacct", "-n", "-X", "-P", "-j", job, "-o", "JobID,State,ExitCode")
    if r.returncode != 0:
        return None
    rows = [line.split("|") for line in r.stdout.splitlines() if line]
    return rows[0][1] if rows and rows[0][0] == job else None


def acct_pod(env):
    pods = [p for p in env.pods("app.kubernetes.io/name=shoal-accounting")
            if not p["metadata"].get("deletionTimestamp")]
    return pods[0] if len(pods) == 1 else None


def test_accounting_pod_stores_jobs_in_mariadb_and_survives_a_new_password(env):
    wait(lambda: env.pod("shoal-0") and ready(env.pod("shoal-0")), 90, "the controller pod")
    wait(lambda: ready(acct_pod(env)), 60, "the accounting pod")
    # shoaldbd and the init container that gives it its configuration need no privileges.
    assert podsecurity.check_restricted(acct_pod(env)["spec"]) == [], acct_pod(env)["spec"]
    wait(lambda: sorted(node_states(env).values()) == ["idle"] * 2, 90, "two idle Shoal nodes")
    conf = env.ctl("scontrol", "show", "config").stdout
    assert "accounting_storage/slurmdbd" in conf, conf
    job = env.submit("-J", "acct1", "--wrap", "hostname")
    env.wait_job(job)
    wait(lambda: sacct_state(env, job) == "COMPLETED", 60, f"sacct to show job {job}")
    # shoaldbd really wrote to this MariaDB (its own database, created on first use).
    tables = sql(env.db, "SHOW TABLES FROM shoal_k8s_acct")
    assert tables.strip(), "no tables in shoal_k8s_acct"

    # A new password: MariaDB first, then the Secret; the operator restarts shoaldbd with it.
    old = acct_pod(env)
    new_password = secrets.token_hex(12)
    sql(env.db, f"ALTER USER '{DB_USER}'@'%' IDENTIFIED BY '{new_password}'")
    enc = base64.b64encode(new_password.encode()).decode()
    env.kubectl("patch", "secret", "acct-db", "--type=merge", "-p",
                '{"data":{"password":"%s"}}' % enc)
    wait(lambda: (lambda p: p is not None and p["metadata"]["uid"] != old["metadata"]["uid"]
                  and ready(p))(acct_pod(env)), 60, "a new accounting pod")
    conf_secret = env.call("GET", f"/api/v1/namespaces/{NS}/secrets/acct-config")
    dbd_conf = base64.b64decode(conf_secret["data"]["slurmdbd.conf"]).decode()
    assert f"StoragePass={new_password}" in dbd_conf
    job2 = env.submit("-J", "acct2", "--wrap", "true")
    env.wait_job(job2)
    wait(lambda: sacct_state(env, job2) == "COMPLETED", 60, f"sacct to show job {job2}")
    assert sacct_state(env, job) == "COMPLETED"


def ssh(env, target, key, *command, user=None):
    """ssh target command... (each argument quoted for the remote shell)."""
    argv = ["ssh", "-i", str(key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10",
            "-o", "LogLevel=ERROR", target, shlex.join(command)]
    kwargs = {}
    if user is not None:
        kwargs = dict(user=user.uid, group=user.gid, extra_groups=[],
                      env={"HOME": str(user.home), "USER": user.name, "PATH": "/usr/bin:/bin"})
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)


def test_user_logs_in_to_the_login_pod_and_runs_jobs(env):
    wait(lambda: sorted(node_states(env).values()) == ["idle"] * 2, 90, "two idle Shoal nodes")
    pod = wait(lambda: (lambda ps: ps[0] if len(ps) == 1 and ready(ps[0]) else None)(
        env.pods(LOGIN_SEL)), 60, "the login pod")
    ip = pod["status"]["podIP"]
    user = env.user
    target = f"{user.name}@{ip}"

    # The commands in the pod reach the controller (configless, via the pod's login daemon).
    def sinfo():
        r = ssh(env, target, env.user_key, f"{BIN}/sinfo", "-h", "-o", "%P %D %t", user=user)
        return r.stdout if r.returncode == 0 and "cpu* 2 idle" in r.stdout else None
    try:
        wait(sinfo, 30, "sinfo over ssh")
    except AssertionError:
        r = ssh(env, target, env.user_key, f"{BIN}/sinfo", user=user)
        raise AssertionError(f"rc={r.returncode} {r.stdout} {r.stderr}") from None
    r = ssh(env, target, env.user_key, "sh", "-c", "hostname; id -un", user=user)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [pod["metadata"]["name"], user.name], r.stdout

    # A job submitted on the login pod runs on a worker as the user; the output comes back.
    work = env.work / "userjob"
    work.mkdir()
    os.chown(work, user.uid, user.gid)
    r = ssh(env, target, env.user_key, f"{BIN}/sbatch", "--wait", "-D", str(work), "-o",
            "out-%j.txt", "--wrap", "echo ran-on $(hostname) as $(id -un)", user=user)
    assert r.returncode == 0, r.stdout + r.stderr
    job = r.stdout.split()[-1]
    assert r.stdout.startswith("Submitted batch job"), r.stdout
    out = ssh(env, target, env.user_key, "cat", str(work / f"out-{job}.txt"), user=user)
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert words[0] == "ran-on" and words[1] in ("cpu-0", "cpu-1") and words[3] == user.name, \
        out.stdout

    # sshd's effective configuration in the pod: the LoginSet's settings, Debian's own file
    # after them (the generated Match block ends with the included file).
    def effective(who):
        r = env.in_pod(pod["metadata"]["name"], SSHD, "-T", "-C",
                       f"user={who},host=client,addr={HOST_IP}")
        assert r.returncode == 0, r.stderr
        return set(r.stdout.splitlines())
    root_conf, user_conf = effective("root"), effective(user.name)
    assert {"permitrootlogin no", "authorizedkeysfile /etc/ssh/shoal/authorized_keys",
            "passwordauthentication no", "logingracetime 20"} <= root_conf, sorted(root_conf)
    assert {"authorizedkeysfile .ssh/authorized_keys .ssh/authorized_keys2",
            "passwordauthentication no", "x11forwarding yes"} <= user_conf, sorted(user_conf)

    # The LoginSet's SSSD configuration is in place for sssd (root-owned, 0600, as it demands).
    r = env.in_pod(pod["metadata"]["name"], "stat", "-c", "%a %U", "/etc/sssd/sssd.conf")
    assert r.stdout.split() == ["600", "root"], r.stdout + r.stderr
    r = env.in_pod(pod["metadata"]["name"], "cat", "/etc/sssd/sssd.conf")
    assert r.stdout == SSSD_CONF

    # Root: its key is in rootSshAuthorizedKeys, but the LoginSet's sshd config says no.
    r = ssh(env, f"root@{ip}", env.root_key, "true")
    assert r.returncode == 255 and "Permission denied" in r.stderr, (r.returncode, r.stderr)
    # A key nobody authorized is refused for the user too.
    stranger = env.work / "stranger"
    keypair(stranger, owner=user)
    r = ssh(env, target, stranger, "true", user=user)
    assert r.returncode == 255 and "Permission denied" in r.stderr, (r.returncode, r.stderr)


def test_changed_loginset_replaces_the_pod_and_root_logs_in_with_its_key(env):
    old = [p["metadata"]["name"] for p in env.pods(LOGIN_SEL)]
    assert len(old) == 1
    cr = loginset_cr(env.root_key.with_suffix(".pub").read_text().strip())
    cr["spec"]["extraSshdConfig"] = "LoginGraceTime 20"  # sshd's default: root by key only
    env.apply(cr)

    def replaced():
        pods = [p for p in env.pods(LOGIN_SEL) if not p["metadata"].get("deletionTimestamp")]
        return pods[0] if (len(pods) == 1 and pods[0]["metadata"]["name"] not in old
                           and ready(pods[0])) else None
    pod = wait(replaced, 60, "the login pod of the new template (and the old one gone)")
    ip = pod["status"]["podIP"]
    r = ssh(env, f"root@{ip}", env.root_key, "id", "-u")
    assert r.returncode == 0 and r.stdout.strip() == "0", (r.returncode, r.stdout, r.stderr)
    # Only the keys of rootSshAuthorizedKeys: the user's own key does not open root.
    r = ssh(env, f"root@{ip}", env.user_key, "true")
    assert r.returncode == 255 and "Permission denied" in r.stderr, (r.returncode, r.stderr)
