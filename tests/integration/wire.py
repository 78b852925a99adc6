"""Just enough protobuf and framing to speak Shoal's wire protocol from a test without generated
code: each frame is a 4-byte little-endian length and a serialized Frame (see proto/shoal.proto).
"""

import hashlib
import socket
import struct


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((num << 3) | 2) + varint(len(data)) + data


def parse(data):
    """Message bytes -> {field number: [values]} (ints for varints, bytes otherwise)."""
    fields = {}
    i = 0

    def read_varint():
        nonlocal i
        shift = value = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while i < len(data):
        key = read_varint()
        num, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value = read_varint()
        elif wire_type == 2:
            n = read_varint()
            value = data[i:i + n]
            i += n
        elif wire_type == 1:
            value = data[i:i + 8]
            i += 8
        elif wire_type == 5:
            value = data[i:i + 4]
            i += 4
        else:
            raise ValueError(f"wire type {wire_type}")
        fields.setdefault(num, []).append(value)
    return fields


def first(fields, num, default=None):
    return fields.get(num, [default])[0]


# Credential {uid=1, gid=2, expires=3, body_sha256=4, nonce=5, hmac=6}
def encode_credential(c):
    return (field_varint(1, c["uid"]) + field_varint(2, c["gid"]) +
            field_varint(3, c["expires"]) + field_bytes(4, c["body_sha256"]) +
            field_bytes(5, c["nonce"]) + field_bytes(6, c["hmac"]))


def decode_credential(data):
    f = parse(data)
    return {"uid": first(f, 1, 0), "gid": first(f, 2, 0), "expires": first(f, 3, 0),
            "body_sha256": first(f, 4, b""), "nonce": first(f, 5, b""), "hmac": first(f, 6, b"")}


def call(address, body, cred=b"", frame_id=1, timeout=10):
    """Sends Frame{id, cred, body} and returns the Response's fields."""
    frame = field_varint(1, frame_id) + (field_bytes(3, cred) if cred else b"") + \
        field_bytes(4, body)
    if isinstance(address, tuple):
        s = socket.create_connection(address, timeout=timeout)
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(address)
    with s:
        s.sendall(struct.pack("<I", len(frame)) + frame)
        header = recv_exact(s, 4)
        (n,) = struct.unpack("<I", header)
        response_frame = parse(recv_exact(s, n))
    return parse(first(response_frame, 4, b""))


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def cancel_request(job_id):
    """Request{cancel_job(5): CancelJobRequest{job_ids(1): [job_id]}}"""
    return field_bytes(5, field_bytes(1, str(job_id)))


def ask_agent(socket_path, body):
    """Asks the auth agent for a credential for `body`: Request{auth(40)} -> Response{auth(30)}.
    Returns (rc, error, credential dict or None)."""
    request = field_bytes(40, field_bytes(1, hashlib.sha256(body).digest()))
    response = call(socket_path, request)
    rc = first(response, 1, 0)
    error = first(response, 2, b"").decode(errors="replace")
    auth = first(response, 30)
    cred = None
    if auth is not None:
        agent = parse(auth)
        error = error or first(agent, 2, b"").decode(errors="replace")
        if 1 in agent:
            cred = decode_credential(first(agent, 1))
    return rc, error, cred
