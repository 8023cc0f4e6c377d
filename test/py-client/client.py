"""A command-line driver of requests-oauth2client, for test/e2e/python-client.test.ts.

One JSON command in (the first argument, else standard input), one JSON result out
(standard output). Everything it does goes through the library's own API, so a test
sees what a Python application using it would: how it reads the discovery document,
what it sends, how it parses the answer and which of its exception classes it
raises on an error.

Command (fields not used by an action are ignored):
  action            "client_credentials" | "token_exchange" | "introspect" | "par"
  issuer            the box's URL: the client comes from its discovery document
                    (OAuth2Client.from_discovery_endpoint); "endpoints" instead
                    gives them explicitly ({"token_endpoint": ..., ...}, the
                    keyword arguments of OAuth2Client)
  client_id, client_secret
  auth_method       "client_secret_post" (the library's default) | "client_secret_basic"
  scope, audience, resource               client_credentials, token_exchange
  subject_token, subject_token_type,
  actor_token, actor_token_type,
  requested_token_type                    token_exchange
  token, token_type_hint                  introspect
  redirect_uri, extra                     par (extra: more authorization request parameters)
  dpop              true: a DPoPKey (dpop_alg, default ES256) proves possession at the
                    token endpoint (client_credentials, token_exchange) and binds the
                    token; with par, the request carries the key's dpop_jkt
  dpop_jwk          with dpop: the private JWK to use (a "dpop_private_jwk" of an earlier
                    result), so that several commands share one key; else a new one
  resource_url      with a token: GET it with the token as the library presents it
                    (Authorization: Bearer, or DPoP with a proof)

Result, exit status 0:
  {"ok": true, "token": {...the token response: access_token, token_type,
   expires_in, scope, issued_token_type...}, "token_class": "BearerToken" | "DPoPToken",
   "resource": {"status": ..., "body": ..., "www_authenticate": ...}}
  {"ok": true, "introspection": {...}}
  {"ok": true, "request_uri": ..., "expires_at": ..., "authorization_url": ...,
   "state": ..., "nonce": ..., "code_verifier": ...}
  with dpop, also "dpop_jkt" and "dpop_private_jwk" (to pass back as dpop_jwk)
  {"ok": false, "error": {"class": "InvalidScope", "error": "invalid_scope",
   "description": ..., "status": 400}}   the library raised one of its errors
Exit status 2: the command itself is wrong; 1: anything else (traceback on stderr).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import requests
from requests_oauth2client import (
    ClientSecretBasic,
    ClientSecretPost,
    DPoPKey,
    DPoPToken,
    OAuth2Client,
)
from requests_oauth2client.exceptions import EndpointError, OAuth2Error


class BadCommand(Exception):
    pass


def make_client(cmd: dict[str, Any]) -> OAuth2Client:
    client_id = cmd.get("client_id")
    secret = cmd.get("client_secret")
    auth: Any = None
    if client_id and secret:
        method = cmd.get("auth_method", "client_secret_post")
        if method == "client_secret_basic":
            auth = ClientSecretBasic(client_id, secret)
        elif method == "client_secret_post":
            auth = ClientSecretPost(client_id, secret)
        else:
            raise BadCommand(f"auth_method {method!r}: client_secret_post or client_secret_basic")
    elif client_id:
        auth = client_id  # a public client: client_id only
    options: dict[str, Any] = {"dpop_alg": cmd["dpop_alg"]} if cmd.get("dpop_alg") else {}
    if cmd.get("endpoints"):
        return OAuth2Client(auth=auth, testing=True, **options, **cmd["endpoints"])
    if not cmd.get("issuer"):
        raise BadCommand("issuer (or endpoints) is required")
    # testing=True: the box under test answers on http://127.0.0.1, which the library
    # otherwise refuses (it wants https issuers and endpoints).
    return OAuth2Client.from_discovery_endpoint(issuer=cmd["issuer"], auth=auth, testing=True, **options)


def target(cmd: dict[str, Any]) -> dict[str, Any]:
    """The token request's extra parameters: audience and resource, when given."""
    return {k: cmd[k] for k in ("audience", "resource") if cmd.get(k) is not None}


def dpop_key(cmd: dict[str, Any], client: OAuth2Client) -> DPoPKey | None:
    if not cmd.get("dpop"):
        return None
    alg = cmd.get("dpop_alg") or client.dpop_alg
    return DPoPKey(cmd["dpop_jwk"], alg=alg) if cmd.get("dpop_jwk") else DPoPKey.generate(alg=alg)


def proof_of_possession(cmd: dict[str, Any], client: OAuth2Client) -> dict[str, Any]:
    key = dpop_key(cmd, client)
    return {"dpop": True, "dpop_key": key} if key else {}


def dpop_fields(key: DPoPKey | None) -> dict[str, Any]:
    return {"dpop_jkt": key.dpop_jkt, "dpop_private_jwk": key.private_key.to_dict()} if key else {}


def client_credentials(cmd: dict[str, Any], client: OAuth2Client) -> Any:
    return client.client_credentials(cmd.get("scope"), **proof_of_possession(cmd, client), **target(cmd))


def token_exchange(cmd: dict[str, Any], client: OAuth2Client) -> Any:
    if not cmd.get("subject_token"):
        raise BadCommand("token_exchange needs subject_token")
    scope = {"scope": cmd["scope"]} if cmd.get("scope") else {}
    return client.token_exchange(
        subject_token=cmd["subject_token"],
        subject_token_type=cmd.get("subject_token_type"),
        actor_token=cmd.get("actor_token"),
        actor_token_type=cmd.get("actor_token_type"),
        requested_token_type=cmd.get("requested_token_type"),
        **proof_of_possession(cmd, client),
        **target(cmd),
        **scope,
    )


def introspect(cmd: dict[str, Any], client: OAuth2Client) -> dict[str, Any]:
    if not cmd.get("token"):
        raise BadCommand("introspect needs token")
    return {"introspection": client.introspect_token(cmd["token"], token_type_hint=cmd.get("token_type_hint"))}


def par(cmd: dict[str, Any], client: OAuth2Client) -> dict[str, Any]:
    key = dpop_key(cmd, client)
    request = client.authorization_request(
        scope=cmd.get("scope", "openid"),
        redirect_uri=cmd.get("redirect_uri"),
        dpop=key is not None,
        dpop_key=key,
        **cmd.get("extra", {}),
    )
    pushed = client.pushed_authorization_request(request)
    return {
        "request_uri": pushed.request_uri,
        "expires_at": pushed.expires_at.isoformat() if pushed.expires_at else None,
        "authorization_url": pushed.uri,
        "state": request.state,
        "nonce": request.nonce,
        "code_verifier": request.code_verifier,
        **dpop_fields(key),
    }


TOKEN_ACTIONS: dict[str, Callable[[dict[str, Any], OAuth2Client], Any]] = {
    "client_credentials": client_credentials,
    "token_exchange": token_exchange,
}
OTHER_ACTIONS: dict[str, Callable[[dict[str, Any], OAuth2Client], dict[str, Any]]] = {
    "introspect": introspect,
    "par": par,
}


def token_result(cmd: dict[str, Any], token: Any) -> dict[str, Any]:
    fields = token.as_dict()
    fields.pop("dpop_key", None)
    if fields.get("id_token") is not None:
        fields["id_token"] = str(fields["id_token"])
    result: dict[str, Any] = {"token": fields, "token_class": type(token).__name__}
    if isinstance(token, DPoPToken):
        result.update(dpop_fields(token.dpop_key))
    if cmd.get("resource_url"):
        # The token is a requests auth handler: it adds the Authorization (and DPoP) headers itself.
        res = requests.get(cmd["resource_url"], auth=token, timeout=30)
        try:
            body: Any = res.json()
        except ValueError:
            body = res.text
        result["resource"] = {"status": res.status_code, "body": body, "www_authenticate": res.headers.get("WWW-Authenticate")}
    return result


def library_error(exc: OAuth2Error) -> dict[str, Any]:
    return {
        "class": type(exc).__name__,
        "error": exc.error if isinstance(exc, EndpointError) else None,
        "description": exc.description,
        "status": exc.response.status_code,
    }


def run(cmd: dict[str, Any]) -> dict[str, Any]:
    action = cmd.get("action")
    if action not in TOKEN_ACTIONS and action not in OTHER_ACTIONS:
        raise BadCommand(f"action {action!r}: one of {', '.join([*TOKEN_ACTIONS, *OTHER_ACTIONS])}")
    client = make_client(cmd)
    try:
        if action in TOKEN_ACTIONS:
            return {"ok": True, **token_result(cmd, TOKEN_ACTIONS[action](cmd, client))}
        return {"ok": True, **OTHER_ACTIONS[action](cmd, client)}
    except OAuth2Error as exc:
        return {"ok": False, "error": library_error(exc)}


def main() -> int:
    raw = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    try:
        cmd = json.loads(raw)
        if not isinstance(cmd, dict):
            raise BadCommand("the command is a JSON object")
        result = run(cmd)
    except (BadCommand, json.JSONDecodeError) as exc:
        print(f"client.py: {exc}", file=sys.stderr)
        return 2
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
