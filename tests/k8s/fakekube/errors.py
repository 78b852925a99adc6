"""Kubernetes `Status` errors."""


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self):
        out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            out["details"] = self.details
        return out


def _res(rt):
    return rt.plural if not rt.group else f"{rt.plural}.{rt.group}"


def not_found(rt, name):
    return ApiError(404, "NotFound", f'{_res(rt)} "{name}" not found',
                    {"name": name, "group": rt.group, "kind": rt.plural})


def already_exists(rt, name):
    return ApiError(409, "AlreadyExists", f'{_res(rt)} "{name}" already exists',
                    {"name": name, "group": rt.group, "kind": rt.plural})


def conflict(rt, name, why=None):
    why = why or ("the object has been modified; please apply your changes to the latest "
                  "version and try again")
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {_res(rt)} "{name}": {why}',
                    {"name": name, "group": rt.group, "kind": rt.plural})


def invalid(rt, name, causes):
    """causes: list of (field, message)."""
    text = "; ".join(f"{f}: {m}" if f else m for f, m in causes)
    msg = f'{rt.kind}.{rt.group or ""} "{name}" is invalid: {text}'.replace(". \"", " \"")
    if not rt.group:
        msg = f'{rt.kind} "{name}" is invalid: {text}'
    return ApiError(422, "Invalid", msg, {
        "name": name, "group": rt.group, "kind": rt.kind,
        "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]})


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message="the server does not allow this method on the requested resource"):
    return ApiError(405, "MethodNotAllowed", message, {})


def unsupported_media(message):
    return ApiError(415, "UnsupportedMediaType", message, {})


def gone(message):
    return ApiError(410, "Expired", message)


def forbidden(rt, name, message):
    return ApiError(403, "Forbidden", message, {"name": name, "group": rt.group, "kind": rt.plural})
