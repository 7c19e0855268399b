"""A mailhook webhook receiver in one file, Python 3.9+ standard library only.

Copy it, keep the verify functions, and replace ``accept_delivery`` with your own durable write.

    python3 docs/receivers/verify.py --port 4000 --secret whsec_... [--kid kid_...] [--db inbox.sqlite3]

Each POST is handled in this order (docs/receivers.md explains why):

1. read the raw body bytes: the signature covers bytes, never re-serialised JSON;
2. verify every signature scheme whose headers are present (at least one must be):
   ``X-Service-Signature`` (HMAC-SHA256 keyed with the whole ``whsec_...`` string over ``t.body``) and
   Standard Webhooks (``webhook-id/-timestamp/-signature``, key = base64 after ``whsec_``, over
   ``id.t.body``), with a 5 minute tolerance and ``hmac.compare_digest`` -> 401 when invalid;
3. dedupe by ``X-Idempotency-Key``: a key already accepted answers 200 again without new work;
4. insert the key and body into SQLite and commit, and only then answer 2xx. A failed commit
   answers 503 so mailhook retries. Do the side effects from the inbox table, after the response.
"""

import argparse
import base64
import hashlib
import hmac
import json
import sqlite3
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE_SEC = 300


def _b64_equal(candidate, expected):
    try:
        got = base64.b64decode(candidate, validate=True)
    except ValueError:
        return False
    return hmac.compare_digest(got, expected)


def verify_service_signature(raw_body, header, secrets, now=None):
    """Verify ``X-Service-Signature: t=<unix>, kid=<kid>, v1=<base64>``.

    ``secrets`` maps kid -> ``whsec_...`` secret (hold old and new while rotating). The HMAC key is
    the UTF-8 bytes of the whole secret string; the message is ``b"<t>." + raw_body``.
    Returns ``(True, kid)`` or ``(False, reason)``.
    """
    fields = {}
    for part in header.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            return False, "malformed header"
        fields.setdefault(key.strip(), []).append(value.strip())
    t, kid, candidates = fields.get("t", [""])[0], fields.get("kid", [""])[0], fields.get("v1", [])
    if not t.isdigit() or not kid or not candidates:
        return False, "malformed header"
    secret = secrets.get(kid)
    if secret is None:
        return False, "unknown kid " + kid
    now = int(time.time()) if now is None else now
    if abs(now - int(t)) > TOLERANCE_SEC:
        return False, "timestamp outside tolerance"
    expected = hmac.new(secret.encode("utf-8"), t.encode() + b"." + raw_body, hashlib.sha256).digest()
    if any(_b64_equal(c, expected) for c in candidates):
        return True, kid
    return False, "signature mismatch"


def verify_standard_webhook(raw_body, msg_id, timestamp, signature, secrets, now=None):
    """Verify Standard Webhooks headers (https://www.standardwebhooks.com/).

    ``signature`` is a space-separated list of ``v1,<base64>``. The key is the bytes the base64 after
    ``whsec_`` decodes to; the message is ``b"<id>.<timestamp>." + raw_body``.
    """
    if not timestamp.isdigit():
        return False, "malformed webhook-timestamp"
    now = int(time.time()) if now is None else now
    if abs(now - int(timestamp)) > TOLERANCE_SEC:
        return False, "timestamp outside tolerance"
    candidates = [s[3:] for s in signature.split(" ") if s.startswith("v1,")]
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + raw_body
    for secret in secrets:
        key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
        expected = hmac.new(key, signed, hashlib.sha256).digest()
        if any(_b64_equal(c, expected) for c in candidates):
            return True, None
    return False, "signature mismatch"


def verify_delivery(raw_body, headers, secrets, now=None):
    """Check every scheme whose headers are present; at least one must be, all present must pass."""
    service = headers.get("X-Service-Signature")
    sw_sig = headers.get("webhook-signature")
    if not service and not sw_sig:
        return False, "no signature headers"
    if service:
        ok, why = verify_service_signature(raw_body, service, secrets, now)
        if not ok:
            return False, why
    if sw_sig:
        msg_id, ts = headers.get("webhook-id"), headers.get("webhook-timestamp")
        if not msg_id or not ts:
            return False, "incomplete Standard Webhooks headers"
        ok, why = verify_standard_webhook(raw_body, msg_id, ts, sw_sig, list(secrets.values()), now)
        if not ok:
            return False, why
    return True, None


class Inbox:
    """Durable idempotency store: the key is the primary key, the body is kept for later processing."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("pragma journal_mode=wal")
        self.db.execute("pragma synchronous=full")
        self.db.execute(
            "create table if not exists inbox (key text primary key, received_at text, body text)"
        )

    def accept_delivery(self, key, body):
        """Stores the delivery; returns False when the key was already accepted (a duplicate)."""
        cur = self.db.execute(
            "insert into inbox (key, received_at, body) values (?, datetime('now'), ?) "
            "on conflict (key) do nothing",
            (key, body),
        )
        return cur.rowcount == 1


def make_handler(secrets_for, inbox):
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 (http.server's naming)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            ok, why = verify_delivery(raw, self.headers, secrets_for(self.headers))
            if not ok:
                print(json.dumps({"rejected": why}), flush=True)
                return self._send(401, {"error": why})
            key = self.headers.get("X-Idempotency-Key") or self.headers.get("webhook-id")
            if not key:
                return self._send(400, {"error": "missing X-Idempotency-Key"})
            try:
                fresh = inbox.accept_delivery(key, raw.decode("utf-8"))
            except sqlite3.Error as err:
                print("could not store the delivery:", err, file=sys.stderr, flush=True)
                return self._send(503, {"error": "not stored; retry later"})
            if not fresh:
                return self._send(200, {"duplicate": True})
            print(json.dumps({"accepted": key}), flush=True)
            return self._send(200, {"accepted": True})

        def log_message(self, *args):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description="mailhook webhook receiver")
    parser.add_argument("--secret", required=True)
    parser.add_argument("--kid")
    parser.add_argument("--port", type=int, default=4000)
    parser.add_argument("--db", default="inbox.sqlite3")
    args = parser.parse_args()
    if not args.secret.startswith("whsec_"):
        parser.error("--secret must be the whsec_... value shown when the signing secret was created")

    def secrets_for(headers):
        # With --kid only that key id is accepted; without it the one secret serves any named kid.
        if args.kid:
            return {args.kid: args.secret}
        header = headers.get("X-Service-Signature") or ""
        named = [p.split("=", 1)[1].strip() for p in header.split(",") if p.strip().startswith("kid=")]
        return {(named[0] if named else "default"): args.secret}

    server = HTTPServer(("127.0.0.1", args.port), make_handler(secrets_for, Inbox(args.db)))
    print("listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
