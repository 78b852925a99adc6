"""Run as any user: asks the auth agent for a credential and prints it as JSON.

    agent_client.py AUTH_SOCKET [CONTROLLER_PORT JOB_ID FORGE_UID]

With the last three arguments it also sends a cancel of JOB_ID to the controller twice: once
with the credential as issued, once with its uid replaced by FORGE_UID, and prints both rc's.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402


def effective_rc(response):
    """Response.rc, or the first per-job rc of a CancelJobResponse (Response field 14)."""
    rc = wire.first(response, 1, 0)
    error = wire.first(response, 2, b"").decode(errors="replace")
    cancel = wire.first(response, 14)
    if rc == 0 and cancel is not None:
        result = wire.first(wire.parse(cancel), 1)
        if result is not None:
            fields = wire.parse(result)
            rc = wire.first(fields, 2, 0)
            error = wire.first(fields, 3, b"").decode(errors="replace")
    return rc, error


def main():
    sock = sys.argv[1]
    out = {"my_uid": os.getuid()}
    body = wire.cancel_request(sys.argv[3]) if len(sys.argv) > 3 else b"hello"
    rc, error, cred = wire.ask_agent(sock, body)
    out.update(agent_rc=rc, agent_error=error,
               cred_uid=cred["uid"] if cred else None, cred_gid=cred["gid"] if cred else None)
    if cred and len(sys.argv) > 4:
        port, forge_uid = int(sys.argv[2]), int(sys.argv[4])
        honest = wire.call(("127.0.0.1", port), body, wire.encode_credential(cred))
        out["honest_rc"], out["honest_error"] = effective_rc(honest)
        forged_cred = dict(cred, uid=forge_uid)
        forged = wire.call(("127.0.0.1", port), body, wire.encode_credential(forged_cred))
        out["forged_rc"], out["forged_error"] = effective_rc(forged)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
