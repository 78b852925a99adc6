"""shoalsackd, the daemon of a login node that runs no shoald (Slurm's sackd).

With SlurmctldParameters=enable_configless it fetches slurm.conf into a cache, fetches it again
on SIGHUP (and every --refresh seconds) after the controller's copy changed, and serves the auth
agent socket so that an unprivileged user's commands on the login node get credentials for
exactly their own uid. The login node here is the same host, so the daemon's socket and cache
are given their own paths and the login node's slurm.conf names that socket.
"""

import os
import signal
import subprocess

from conftest import SBIN, wait_until


def start_sackd(c, base, *extra):
    cache, sock = base / "conf", base / "agent" / "auth.sock"
    log = open(c.log_dir / "shoalsackd.out", "ab")
    child = subprocess.Popen(
        [str(SBIN / "shoalsackd"), "-D", "--conf-server", f"127.0.0.1:{c.controller_port()}",
         "--key", str(c.key_path), "--conf-cache", str(cache), "--agent-socket", str(sock),
         *extra],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True, cwd="/")
    log.close()
    c._children.append(child)
    wait_until(lambda: (cache / "slurm.conf").exists() and sock.exists(), 20,
               "shoalsackd to cache the configuration and open its socket")
    return child, cache, sock


def login_view(base, cache, sock):
    """The login node's slurm.conf: the cached one, naming the login daemon's agent socket and
    with no key beside it (users there cannot read the key anyway)."""
    login = base / "login"
    login.mkdir()
    lines = [line for line in (cache / "slurm.conf").read_text().splitlines()
             if not line.startswith("AuthInfo=")]
    lines.append(f"AuthInfo=socket={sock}")
    (login / "slurm.conf").write_text("\n".join(lines) + "\n")
    os.chmod(login, 0o755)
    return login / "slurm.conf"


def test_login_daemon_serves_config_and_credentials(cluster, users):
    c = cluster(nodes=1, conf=["SlurmctldParameters=enable_configless"])
    base = c.dir / "sackd"  # where the test users can read
    base.mkdir(mode=0o755)
    child, cache, sock = start_sackd(c, base, "--refresh", "3600")
    assert (cache / "slurm.conf").read_text() == c.conf_path.read_text()

    # An unprivileged user's sbatch on the "login node" is signed by shoalsackd for that user.
    user = users["shoaltest1"]
    conf = login_view(base, cache, sock)
    r = c.run(["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true"], user=user,
              env={"SLURM_CONF": str(conf)})
    job = int(r.stdout.strip())
    assert c.show_job(job)["UserId"].startswith("shoaltest1(")
    assert c.wait_job(job, timeout=60) == "COMPLETED"

    # The controller's configuration changes: SIGHUP makes shoalsackd fetch it at once.
    text = c.conf_path.read_text()
    node = c.show_job(job)["NodeList"]
    c.conf_path.write_text(text + f"PartitionName=loginextra Nodes={node}\n")
    c.run(["scontrol", "reconfigure"])
    os.kill(child.pid, signal.SIGHUP)
    wait_until(lambda: "loginextra" in (cache / "slurm.conf").read_text(), 20,
               "the cache to follow the reconfigured slurm.conf")

    # Without shoalsackd the login node's commands have no way to a credential.
    child.terminate()
    child.wait(timeout=10)
    r = c.run(["squeue"], user=user, env={"SLURM_CONF": str(conf)}, check=False)
    assert r.returncode != 0
    assert "auth agent" in r.stderr


def test_login_daemon_refuses_bad_arguments(cluster, tmp_path):
    c = cluster(nodes=1)  # configless is not enabled
    sackd = str(SBIN / "shoalsackd")
    r = subprocess.run([sackd, "-D"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and "exactly one of --conf-server and -f" in r.stderr
    r = subprocess.run([sackd, "-D", "--bogus"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and "unknown option '--bogus'" in r.stderr
    r = subprocess.run([sackd, "-D", "--conf-server", f"127.0.0.1:{c.controller_port()}",
                        "--key", str(c.key_path), "--conf-cache", str(tmp_path / "conf"),
                        "--agent-socket", str(tmp_path / "auth.sock")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "configless mode is not enabled" in r.stderr
    assert c.run(["sinfo", "-h"]).returncode == 0  # the controller is unharmed
