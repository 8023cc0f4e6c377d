"""A hook of boxauth's (docs/guides/hooks.md) for the tests, in Python's standard library only.

Serves HTTPS (CERT and KEY) on HOST (127.0.0.1 unless set; 0.0.0.0 in a Pod behind a Service) and
PORT (0: any; the first line out is "listening <port>").
Every POST is checked as a Standard Webhooks receiver does: the webhook-id, webhook-timestamp
(within five minutes) and webhook-signature headers, an HMAC-SHA256 of "id.timestamp.body" under
SECRET ("whsec_" and base64); an id seen before is a replay. A request that fails is answered 401.
What it answers then depends on the path (see answer()). GET /seen lists what it got.
"""
import base64, hashlib, hmac, json, os, ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = base64.b64decode(os.environ["SECRET"].removeprefix("whsec_"))
TOLERANCE = 300
seen_ids = set()
seen = []
lock = threading.Lock()


def verify(headers, body):
    msg_id, stamp, signatures = headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature")
    if not (msg_id and stamp and signatures):
        return "unsigned"
    if abs(time.time() - int(stamp)) > TOLERANCE:
        return "stale"
    expected = base64.b64encode(hmac.new(SECRET, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()).decode()
    if not any(hmac.compare_digest(s.split(",", 1)[-1], expected) for s in signatures.split(" ")):
        return "bad signature"
    with lock:
        if msg_id in seen_ids:
            return "replayed"
        seen_ids.add(msg_id)
    return None


def answer(path, call):
    """What the hook says, by its path: /<behaviour>[/<arg>]."""
    parts = path.strip("/").split("/")
    kind, arg = parts[0], (parts[1] if len(parts) > 1 else "")
    req = call.get("request", {})
    if kind == "claims":
        # A claim of its own, and claims the box alone states: the box must drop those.
        return 200, {"allowed": True, "claims": {"licence": "gold", "hook_lang": "python", "sub": "admin", "iss": "https://evil.example",
                                                 "acr": "phr", "groups": ["admins"], "email": "root@evil.example"}}
    if kind == "echo":
        return 200, {"allowed": True, "claims": {"seen": {"box": call.get("box"), "hook": call.get("hook"), "moment": call.get("moment"),
                                                          "email": req.get("user", {}).get("email"), "client": req.get("client", {}).get("id")}}}
    if kind == "refuse":
        return 200, {"allowed": False, "message": "the licence of this team has expired"}
    if kind == "refuse-markup":
        # Words a hook chose, with markup and what an error_description may not carry: shown as text, never as HTML.
        return 200, {"allowed": False, "message": '<img src=x onerror=alert(1)> "no licence" \u2014 \u00fcber'}
    if kind == "slow":
        time.sleep(int(arg) / 1000)
        return 200, {"allowed": True, "claims": {"slow": True}}
    if kind == "hang":
        time.sleep(3600)
    if kind == "garbage":
        return 200, "this is not JSON"
    if kind == "redirect":
        return 307, {"location": f"https://127.0.0.1:{arg}/claims"}
    if kind == "stepup":
        return 200, {"allowed": True, "acr": arg or "urn:boxauth:acr:mfa"}
    if kind == "person":
        email = req.get("person", {}).get("email", "")
        if not email.endswith("@example.com"):
            return 200, {"allowed": False, "message": "only addresses of example.com may sign up"}
        return 200, {"allowed": True, "data": {"employee": "E-1"}, "groups": ["staff"]}
    if kind == "password":
        return 200, {"valid": req.get("password", {}).get("password") == arg}
    return 200, {"allowed": True}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, headers=None):
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with lock:
            self.send(200, seen)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        problem = verify(headers, body)
        call = json.loads(body) if problem is None else {}
        with lock:
            seen.append({"path": self.path, "problem": problem, "headers": headers, "body": body.decode(), "box": call.get("box"),
                         "hook": call.get("hook"), "moment": call.get("moment")})
        if problem:
            return self.send(401, {"error": problem})
        status, out = answer(self.path, call)
        if status == 307:
            return self.send(307, {}, {"Location": out["location"]})
        self.send(status, out)


server = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "0"))), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(os.environ["CERT"], os.environ["KEY"])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
