"""The control plane's certificates and keys, made with the openssl command the way kubeadm lays
them out: one cluster CA that signs the API server's serving certificate and every client
certificate (admin, controller-manager, scheduler, one per node), and a ServiceAccount signing
key pair. EC P-256 keys: fast to make, accepted by every component."""

import subprocess
from pathlib import Path

OPENSSL = "openssl"


def _run(*argv, cwd):
    r = subprocess.run([OPENSSL, *argv], cwd=cwd, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(argv)}: {r.stderr.strip()}")


def _key(path: Path):
    _run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-out", str(path), cwd=path.parent)
    path.chmod(0o600)


class Pki:
    """Files under DIR: ca.{crt,key}, sa.{key,pub}, and NAME.{crt,key} for each issued cert."""

    def __init__(self, d: Path):
        self.dir = Path(d)

    def path(self, name, ext):
        return self.dir / f"{name}.{ext}"

    @property
    def ca(self):
        return self.path("ca", "crt")

    def create_ca(self, days=30):
        self.dir.mkdir(parents=True, exist_ok=True)
        key = self.path("ca", "key")
        _key(key)
        _run("req", "-x509", "-new", "-key", str(key), "-sha256", "-days", str(days),
             "-subj", "/CN=shoal-test-kubernetes-ca", "-addext",
             "basicConstraints=critical,CA:TRUE", "-addext",
             "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
             "-out", str(self.ca), cwd=self.dir)
        # ServiceAccount tokens: the API server signs them, everyone who verifies reads the
        # public half.
        sa = self.path("sa", "key")
        _key(sa)
        _run("pkey", "-in", str(sa), "-pubout", "-out", str(self.path("sa", "pub")), cwd=self.dir)
        return self

    def issue(self, name, cn, orgs=(), dns=(), ips=(), server=False, client=True, days=30):
        """Signs a certificate NAME.crt for subject CN (and O=each of orgs) with the CA."""
        key, csr, crt = self.path(name, "key"), self.path(name, "csr"), self.path(name, "crt")
        _key(key)
        subj = "".join(f"/O={o}" for o in orgs) + f"/CN={cn}"
        _run("req", "-new", "-key", str(key), "-subj", subj, "-out", str(csr), cwd=self.dir)
        usages = (["serverAuth"] if server else []) + (["clientAuth"] if client else [])
        ext = [f"extendedKeyUsage={','.join(usages)}",
               "keyUsage=critical,digitalSignature,keyEncipherment",
               "basicConstraints=critical,CA:FALSE"]
        sans = [f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips]
        if sans:
            ext.append("subjectAltName=" + ",".join(sans))
        extfile = self.path(name, "ext")
        extfile.write_text("\n".join(ext) + "\n")
        _run("x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey",
             str(self.path("ca", "key")), "-CAcreateserial", "-sha256", "-days", str(days),
             "-extfile", str(extfile), "-out", str(crt), cwd=self.dir)
        csr.unlink()
        extfile.unlink()
        return crt, key
