"""auth/jwt (AuthAltTypes=auth/jwt, AuthAltParameters=jwt_key=...): `scontrol token`, and tokens
carried by shoalrestd over TCP to shoalctld and shoaldbd, which verify them and act as the token's
user. Forged, expired, `alg: none` and other-user tokens are refused and the daemons stay up."""

import base64
import hashlib
import hmac
import json
import os
import time

import pytest

from conftest import wait_until
from restd_client import Rest


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_token(key, payload, header=None):
    """An HS256 token signed here, independently of Shoal's code."""
    header = header or {"alg": "HS256", "typ": "JWT"}
    signing_input = b64(json.dumps(header).encode()) + "." + b64(json.dumps(payload).encode())
    sig = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64(sig)


def decode_checked(key, token):
    """Header and claims of a token after checking its signature with `key`."""
    h, p, s = token.split(".")
    expect = hmac.new(key, f"{h}.{p}".encode(), hashlib.sha256).digest()
    assert hmac.compare_digest(unb64(s), expect), "signature does not verify with the key"
    return json.loads(unb64(h)), json.loads(unb64(p))


@pytest.fixture
def jwt_key(tmp_path):
    key = os.urandom(32)
    path = tmp_path / "jwt_hs256.key"
    path.write_bytes(key)
    os.chmod(path, 0o600)
    return key, path


def jwt_cluster(cluster, key_path, conf=(), dbd_conf=()):
    alt = ["AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={key_path}"]
    return cluster(nodes=1, cpus=2, conf=[*alt, *conf], dbd_conf=[*alt, *dbd_conf])


def token_of(c, user=None, args=()):
    r = c.run(["scontrol", "token", *args], user=user)
    line = r.stdout.strip()
    assert line.startswith("SLURM_JWT="), r.stdout
    return line[len("SLURM_JWT="):]


def test_scontrol_token(cluster, users, jwt_key):
    key, key_path = jwt_key
    c = jwt_cluster(cluster, key_path)
    u1, u2 = users["shoaltest1"], users["shoaltest2"]

    before = int(time.time())
    header, claims = decode_checked(key, token_of(c))
    assert header["alg"] == "HS256"
    assert claims["sun"] == "root"
    assert claims["exp"] - claims["iat"] == 1800  # Slurm's default lifespan
    assert before - 5 <= claims["iat"] <= time.time() + 5

    # root may name anyone and choose the lifespan.
    _, claims = decode_checked(key, token_of(c, args=["username=shoaltest2", "lifespan=60"]))
    assert claims["sun"] == "shoaltest2" and claims["exp"] - claims["iat"] == 60

    # A user gets their own token, not another user's.
    _, claims = decode_checked(key, token_of(c, user=u1))
    assert claims["sun"] == "shoaltest1"
    _, claims = decode_checked(key, token_of(c, user=u1, args=["username=shoaltest1"]))
    assert claims["sun"] == "shoaltest1"
    r = c.run(["scontrol", "token", "username=shoaltest2"], user=u1, check=False)
    assert r.returncode == 1 and "SLURM_JWT" not in r.stdout
    assert r.stderr == ("scontrol: error: slurm_fetch_token: error with request: "
                        "Access/permission denied\nError fetching token\n"), r.stderr
    r = c.run(["scontrol", "token", "bogus=1"], user=u2, check=False)
    assert r.returncode == 1 and r.stderr.strip() == "Invalid option: `bogus=1`"
    r = c.run(["scontrol", "token", "username=nosuchuser_x"], check=False)
    assert r.returncode == 1 and "Invalid user id" in r.stderr


def test_commands_with_slurm_jwt(cluster, users, jwt_key, submit_dir):
    """Commands with SLURM_JWT in their environment authenticate with it, as Slurm's do: the
    job belongs to the token's user, whoever runs sbatch; a bad token is refused."""
    key, key_path = jwt_key
    c = jwt_cluster(cluster, key_path)
    u1, u2 = users["shoaltest1"], users["shoaltest2"]
    t2 = token_of(c, args=["username=shoaltest2"])
    work = submit_dir(u2)
    r = c.run(["sbatch", "--parsable", "-D", str(work), "--wrap", "env"], user=u1,
              env={"SLURM_JWT": t2})
    job = int(r.stdout.strip().split(";")[0])
    assert c.show_job(job)["UserId"].startswith("shoaltest2(")
    c.wait_job(job)
    out = (work / f"slurm-{job}.out").read_text()
    assert "SLURM_JWT" not in out  # not passed on to the job
    now = int(time.time())
    forged = make_token(os.urandom(32), {"sun": "root", "iat": now, "exp": now + 60})
    r = c.run(["squeue"], env={"SLURM_JWT": forged}, check=False)
    assert r.returncode == 1 and "invalid token signature" in r.stderr, r.stderr
    r = c.run(["sacct", "-X", "-n", "-j", str(job)], env={"SLURM_JWT": forged}, check=False)
    assert r.returncode == 1 and "invalid token signature" in r.stderr, r.stderr
    # A token does not mint tokens.
    r = c.run(["scontrol", "token"], env={"SLURM_JWT": t2}, check=False)
    assert r.returncode == 1 and "Error fetching token" in r.stderr


def test_token_creation_disabled_and_unconfigured(cluster, users, jwt_key):
    key, key_path = jwt_key
    c = cluster(nodes=1, cpus=1, conf=["AuthAltTypes=auth/jwt",
                                       f"AuthAltParameters=jwt_key={key_path},"
                                       "disable_token_creation"])
    r = c.run(["scontrol", "token"], user=users["shoaltest1"], check=False)
    assert r.returncode == 1 and "error with request: Access/permission denied" in r.stderr, \
        r.stderr
    decode_checked(key, token_of(c))  # root still may
    c.stop()
    plain = cluster(nodes=1, cpus=1)
    r = plain.run(["scontrol", "token"], check=False)
    assert r.returncode == 1 and "auth/jwt is not configured" in r.stderr, r.stderr
    assert r.stderr.endswith("\nError fetching token\n")


# ---- through shoalrestd -----------------------------------------------------------------------

class TokenRest:
    """shoalrestd as `shoal start` runs it, over TCP with a token (restd_client validates every
    request and answer against the OpenAPI document)."""

    def __init__(self, c):
        self.rest = Rest(c)
        assert self.rest.address, "shoal start did not report shoalrestd's TCP address"

    def request(self, method, path, token=None, user_name=None, bearer=False, body=None):
        headers = []
        if token is not None:
            headers.append(f"Authorization: Bearer {token}" if bearer
                           else f"X-SLURM-USER-TOKEN: {token}")
        if user_name is not None:
            headers.append(f"X-SLURM-USER-NAME: {user_name}")
        return self.rest.call(method, path, body=body, tcp=True, headers=headers)


def test_rest_tokens(cluster, users, jwt_key, submit_dir):
    key, key_path = jwt_key
    c = jwt_cluster(cluster, key_path, dbd_conf=["PrivateData=users"])
    rest = TokenRest(c)
    u1 = users["shoaltest1"]
    t1 = token_of(c, user=u1)
    root_token = token_of(c)
    now = int(time.time())

    # A valid token acts as its user, on the controller (a job submitted through REST is theirs)
    # and on shoaldbd (PrivateData=users hides the user list from a plain user, not from root).
    work = submit_dir(u1)
    code, body = rest.request("POST", "/slurm/v0.0.44/job/submit", token=t1, body={
        "job": {"script": "#!/bin/bash\ntrue\n", "current_working_directory": str(work),
                "environment": ["PATH=/bin:/usr/bin"], "name": "viajwt"}})
    assert code == 200, body
    job_id = body["job_id"]
    assert c.show_job(job_id)["UserId"].startswith("shoaltest1(")
    c.wait_job(job_id)
    code, body = rest.request("GET", "/slurmdb/v0.0.44/users/", token=t1)
    assert code == 403, body
    assert body["errors"] and body["errors"][0]["error"].startswith("Access/permission denied")
    code, body = rest.request("GET", "/slurmdb/v0.0.44/users/", token=root_token)
    assert code == 200, body
    assert "root" in [u["name"] for u in body["users"]]
    code, body = rest.request("GET", "/slurmdb/v0.0.44/users/", token=root_token, bearer=True)
    assert code == 200, body

    # shoaldbd applies the token user's rights to administration too.
    acct = {"accounts": [{"name": "viajwt", "description": "d", "organization": "o"}]}
    code, body = rest.request("POST", "/slurmdb/v0.0.44/accounts/", token=t1, body=acct)
    assert code == 403, body
    code, body = rest.request("POST", "/slurmdb/v0.0.44/accounts/", token=root_token, body=acct)
    assert code == 200, body
    assert c.run(["sacctmgr", "-n", "-P", "show", "account", "viajwt",
                  "format=Account"]).stdout.split() == ["viajwt"]

    # root (and SlurmUser) may act as another user with X-SLURM-USER-NAME.
    code, body = rest.request("GET", "/slurmdb/v0.0.44/users/", token=root_token,
                              user_name="shoaltest2")
    assert code == 403, body  # shoaltest2's rights, not root's
    code, body = rest.request("POST", "/slurm/v0.0.44/job/submit", token=root_token,
                              user_name="shoaltest2", body={
                                  "job": {"script": "#!/bin/bash\ntrue\n",
                                          "current_working_directory": "/tmp",
                                          "environment": ["PATH=/bin:/usr/bin"]}})
    assert code == 200, body
    assert c.show_job(body["job_id"])["UserId"].startswith("shoaltest2(")

    # Refused tokens: 401, with the reason in "errors"; the daemons stay up.
    forged = make_token(os.urandom(32), {"sun": "root", "iat": now, "exp": now + 600})
    expired = make_token(key, {"sun": "shoaltest1", "iat": now - 7200, "exp": now - 3600})
    alg_none = (b64(json.dumps({"alg": "none", "typ": "JWT"}).encode()) + "." +
                b64(json.dumps({"sun": "root", "iat": now, "exp": now + 600}).encode()) + ".")
    rs256 = make_token(key, {"sun": "root", "iat": now, "exp": now + 600},
                       header={"alg": "RS256", "typ": "JWT"})
    tampered = t1.split(".")
    tampered[1] = b64(json.dumps({"sun": "root", "iat": now, "exp": now + 600}).encode())
    tampered = ".".join(tampered)
    for name, bad in [("forged", forged), ("expired", expired), ("alg none", alg_none),
                      ("RS256", rs256), ("tampered", tampered), ("garbage", "abc.def")]:
        for path in ("/slurmdb/v0.0.44/jobs/", "/slurm/v0.0.44/jobs/"):
            code, body = rest.request("GET", path, token=bad)
            assert code == 401, (name, path, code, body)
            assert body is None or body.get("errors"), (name, body)
    # A plain user's token may not name another user.
    for path in ("/slurmdb/v0.0.44/jobs/", "/slurm/v0.0.44/jobs/"):
        code, body = rest.request("GET", path, token=t1, user_name="shoaltest2")
        assert code in (401, 403), (path, code, body)
        code, body = rest.request("GET", path, token=t1, user_name="root")
        assert code in (401, 403), (path, code, body)

    # Still serving, as the right user.
    wait_until(lambda: rest.request("GET", f"/slurmdb/v0.0.44/job/{job_id}", token=t1)[0] == 200,
               30, "the REST job in accounting")
    code, body = rest.request("GET", f"/slurmdb/v0.0.44/job/{job_id}", token=t1)
    assert code == 200, body
    assert body["jobs"][0]["user"] == "shoaltest1"
    assert c.run(["scontrol", "ping"]).stdout.strip().endswith("is UP")
    c.run(["sacct", "-n", "-X", "-j", str(job_id)])
    code, body = rest.request("GET", "/slurmdb/v0.0.44/ping/", token=t1)
    assert code == 200 and body["pings"][0]["responding"], body
