"""A throwaway MariaDB server for tests, driven by tests/mariadb/{start,stop}-mariadb.sh.

    with MariaDB(tmp_path / "mariadb") as db:
        conf = f"StorageType=accounting_storage/mysql\nStorageHost={db.socket}\n..."

The server runs as the current user from `dir`, listens on a unix socket and 127.0.0.1:port, and
has a user shoal/shoal with all privileges. `available()` says whether the binaries exist.
"""

import os
import shutil
import subprocess
from pathlib import Path

_SCRIPTS = Path(__file__).resolve().parent.parent / "mariadb"
USER = "shoal"
PASSWORD = "shoal"
DATABASE = "slurm_acct_db"


def available():
    """True when a MariaDB server binary is installed."""
    return bool(shutil.which("mariadbd") or os.path.exists("/usr/sbin/mariadbd"))


class MariaDB:
    def __init__(self, dir, port=None, timeout=60, bind=None):
        self.dir = Path(dir)
        self.port = port
        self.bind = bind  # TCP address to listen on (default 127.0.0.1)
        self.socket = None
        self.timeout = timeout

    def start(self):
        """Starts the server (reusing its data and, after a stop, its port); returns self."""
        args = [str(_SCRIPTS / "start-mariadb.sh"), str(self.dir)]
        if self.port:
            args.append(str(self.port))
        env = dict(os.environ, SHOAL_MARIADB_BIND=self.bind) if self.bind else None
        out = subprocess.run(args, capture_output=True, text=True, timeout=self.timeout, env=env)
        if out.returncode != 0:
            raise RuntimeError(f"start-mariadb.sh failed ({out.returncode}): {out.stderr.strip()}")
        fields = dict(kv.split("=", 1) for kv in out.stdout.split())
        self.socket = fields["socket"]
        self.port = int(fields["port"])
        return self

    def stop(self):
        subprocess.run([str(_SCRIPTS / "stop-mariadb.sh"), str(self.dir)],
                       capture_output=True, text=True, timeout=self.timeout)

    def storage_conf(self, loc=DATABASE, tcp=False):
        """slurmdbd.conf Storage* lines pointing at this server."""
        host = "127.0.0.1" if tcp else self.socket
        return (f"StorageType=accounting_storage/mysql\nStorageHost={host}\n"
                f"StoragePort={self.port}\nStorageUser={USER}\nStoragePass={PASSWORD}\n"
                f"StorageLoc={loc}\n")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
