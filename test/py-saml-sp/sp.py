"""A SAML 2.0 service provider made with pysaml2, for test/e2e/saml-python-sp.test.ts.

    python sp.py --idp-metadata-url URL [--name NAME] [--port PORT] [--unsigned-requests] [--post-requests]
                 [--allow-unsolicited] [--single-logout]

Serves on 127.0.0.1 (PORT, or one the system picks) with wsgiref, and prints one line of JSON
once it listens: {"url", "entity_id", "metadata_url", "acs_url"}. It makes a key and a
self-signed certificate of its own at start, and reads the IdP's metadata (the box's
`{issuer}/auth/saml/metadata`) once, at start, as pysaml2's "remote" metadata.

  GET  /login     SP-initiated SSO: an AuthnRequest (signed, RSA-SHA256, unless --unsigned-requests)
                  sent to the IdP's SingleSignOnService over HTTP-Redirect (the signature over the
                  query), or with --post-requests over HTTP-POST (an enveloped signature; pysaml2's
                  page that posts its form on load).
  POST /acs       the IdP's Response over HTTP-POST, checked by pysaml2 (signatures with xmlsec1
                  against the IdP metadata's certificate, InResponseTo one of this SP's requests,
                  or none with --allow-unsolicited: IdP-initiated SSO; Destination, Audience, validity), decrypted when encrypted; answers a page that
                  shows the NameID, its format, the issuer, the authentication context, whether the
                  Assertion came encrypted, and every attribute as the assertion names it; a
                  refusal answers 400 with pysaml2's error.
  GET  /metadata  this SP's metadata, written by pysaml2 (entity ID, ACS, signing and encryption
                  certificate; with --single-logout, its SingleLogoutService: HTTP-Redirect only).
  GET  /session   whether this browser is signed in here (a cookie set by /acs): a page "Signed in to
                  NAME" with the NameID, or "Not signed in to NAME".
  GET  /slo       with --single-logout: the IdP's LogoutRequest over HTTP-Redirect, handled by
                  pysaml2 (handle_logout_request); the session of this browser ends when the request
                  names its NameID, and the LogoutResponse goes back to the IdP's SingleLogoutService
                  over HTTP-Redirect, signed over the query (logout_responses_signed: True).
"""

import argparse
import base64
import datetime
import html
import json
import os
import secrets
import sys
import tempfile
import traceback
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_PERSISTENT
from saml2.samlp import response_from_string
from saml2.sigver import get_xmlsec_binary
from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256


def key_and_certificate(directory, name):
    """An RSA key and a self-signed certificate for it, as PEM files: (key_file, cert_file)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_file = os.path.join(directory, "sp.key")
    cert_file = os.path.join(directory, "sp.crt")
    with open(key_file, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
            )
        )
    with open(cert_file, "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


def sp_config(base_url, name, idp_metadata_url, key_file, cert_file, sign_requests, allow_unsolicited, single_logout):
    endpoints = {"assertion_consumer_service": [(f"{base_url}/acs", BINDING_HTTP_POST)]}
    if single_logout:
        endpoints["single_logout_service"] = [(f"{base_url}/slo", BINDING_HTTP_REDIRECT)]
    config = SPConfig()
    config.load(
        {
            "entityid": f"{base_url}/metadata",
            "name": name,
            "xmlsec_binary": get_xmlsec_binary(["/usr/bin"]),
            "key_file": key_file,
            "cert_file": cert_file,
            "encryption_keypairs": [{"key_file": key_file, "cert_file": cert_file}],
            "metadata": {"remote": [{"url": idp_metadata_url}]},
            # The attributes as the IdP names them, whatever pysaml2's converters know.
            "allow_unknown_attributes": True,
            "accepted_time_diff": 60,
            "service": {
                "sp": {
                    "name": name,
                    "endpoints": endpoints,
                    # pysaml2's default is False: an unsigned LogoutResponse, which an IdP must not trust on the front channel.
                    "logout_responses_signed": True,
                    "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                    "authn_requests_signed": sign_requests,
                    "want_response_signed": True,
                    "want_assertions_signed": True,
                    "allow_unsolicited": allow_unsolicited,
                    "signing_algorithm": SIG_RSA_SHA256,
                    "digest_algorithm": DIGEST_SHA256,
                }
            },
        }
    )
    return config


def page(status, title, body):
    text = f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>'
    return status, [("Content-Type", "text/html; charset=utf-8")], text.encode()


def signed_in_page(name, response, encrypted):
    """What the person sees after signing in: the assertion's subject and attributes, as the IdP sent them."""
    assertion = response.assertion
    name_id = response.name_id
    classes = [ref for ref, _authorities, _instant in response.authn_info()]
    rows = "".join(
        f'<tr><th scope="row">{html.escape(attribute.name)}</th><td>{html.escape(", ".join(value.text or "" for value in attribute.attribute_value))}</td></tr>'
        for statement in assertion.attribute_statement
        for attribute in statement.attribute
    )
    return page(
        "200 OK",
        f"Signed in to {name}",
        "<dl>"
        f'<dt>NameID</dt><dd id="name-id">{html.escape(name_id.text or "")}</dd>'
        f'<dt>NameID format</dt><dd id="name-id-format">{html.escape(name_id.format or "")}</dd>'
        f'<dt>Issuer</dt><dd id="issuer">{html.escape(assertion.issuer.text)}</dd>'
        f'<dt>Authentication context</dt><dd id="authn-context">{html.escape(" ".join(classes))}</dd>'
        f'<dt>Assertion encrypted</dt><dd id="assertion-encrypted">{"yes" if encrypted else "no"}</dd>'
        "</dl>"
        f'<h2>Attributes</h2><table id="attributes"><tbody>{rows}</tbody></table>',
    )


class ServiceProvider:
    def __init__(self, client, name, request_binding):
        self.client = client
        self.name = name
        self.request_binding = request_binding
        # InResponseTo: the IDs of the AuthnRequests this SP sent and has not had a Response to.
        self.outstanding = {}
        # This SP's own sessions: a cookie's value to the NameID the IdP gave.
        self.sessions = {}

    def __call__(self, environ, start_response):
        status, headers, body = self.route(environ)
        start_response(status, headers)
        return [body]

    def route(self, environ):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "/")
        if method == "GET" and path == "/metadata":
            xml = create_metadata_string(None, config=self.client.config, valid=24)
            return "200 OK", [("Content-Type", "application/samlmetadata+xml")], xml
        if method == "GET" and path == "/login":
            return self.login()
        if method == "POST" and path == "/acs":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            form = parse_qs(environ["wsgi.input"].read(length).decode())
            return self.acs(form.get("SAMLResponse", [""])[0])
        if method == "GET" and path == "/session":
            name_id = self.sessions.get(self.session_of(environ))
            if name_id is None:
                return page("200 OK", f"Not signed in to {self.name}", "")
            return page("200 OK", f"Signed in to {self.name}", f'<p id="name-id">{html.escape(name_id.text or "")}</p>')
        if method == "GET" and path == "/slo":
            return self.slo(environ)
        return page("404 Not Found", "Not found", "")

    def login(self):
        (idp,) = self.client.metadata.identity_providers()
        request_id, info = self.client.prepare_for_authenticate(
            entityid=idp,
            relay_state="/",
            binding=self.request_binding,
            sigalg=SIG_RSA_SHA256,
            digest_alg=DIGEST_SHA256,
        )
        self.outstanding[request_id] = "/"
        if self.request_binding == BINDING_HTTP_POST:
            return "200 OK", [("Content-Type", "text/html; charset=utf-8")], info["data"].encode()
        location = dict(info["headers"])["Location"]
        return "303 See Other", [("Location", location)], b""

    def acs(self, saml_response):
        try:
            response = self.client.parse_authn_request_response(saml_response, BINDING_HTTP_POST, self.outstanding)
            # pysaml2 gives back a Response whose Assertion it could not decrypt with none in it.
            if response is None or response.assertion is None:
                raise ValueError("pysaml2 found no assertion it could read in the response")
        except Exception as error:  # what pysaml2 says of the IdP's Response, shown to the test
            traceback.print_exc(file=sys.stderr)
            return page(
                "400 Bad Request",
                "The SAML response was refused",
                f'<p id="error">{html.escape(type(error).__name__)}: {html.escape(str(error))}</p>',
            )
        self.outstanding.pop(response.in_response_to, None)
        # Whether the IdP sent the Assertion encrypted: pysaml2 empties the list once it has decrypted it.
        encrypted = bool(response_from_string(base64.b64decode(saml_response)).encrypted_assertion)
        session = secrets.token_urlsafe(16)
        self.sessions[session] = response.name_id
        status, headers, body = signed_in_page(self.name, response, encrypted)
        # Named after the app: cookies ignore ports, and every SP of a test shares 127.0.0.1.
        return status, headers + [("Set-Cookie", f"sp_session_{self.name}={session}; Path=/; HttpOnly; SameSite=Lax")], body

    def session_of(self, environ):
        for pair in environ.get("HTTP_COOKIE", "").split(";"):
            name, _, value = pair.strip().partition("=")
            if name == f"sp_session_{self.name}":
                return value
        return None

    def slo(self, environ):
        query = {name: values[0] for name, values in parse_qs(environ.get("QUERY_STRING", "")).items()}
        session = self.session_of(environ)
        name_id = self.sessions.get(session)
        try:
            request = self.client.parse_logout_request(
                query.get("SAMLRequest", ""),
                BINDING_HTTP_REDIRECT,
                relay_state=query.get("RelayState"),
                sigalg=query.get("SigAlg"),
                signature=query.get("Signature"),
            )
            if name_id is not None and request.message.name_id == name_id:
                self.sessions.pop(session, None)
            answer = self.client.handle_logout_request(
                query.get("SAMLRequest", ""),
                name_id,
                BINDING_HTTP_REDIRECT,
                sign=True,
                sign_alg=SIG_RSA_SHA256,
                digest_alg=DIGEST_SHA256,
                relay_state=query.get("RelayState"),
                sigalg=query.get("SigAlg"),
                signature=query.get("Signature"),
            )
        except Exception as error:  # what pysaml2 says of the IdP's LogoutRequest, shown to the test
            traceback.print_exc(file=sys.stderr)
            return page("400 Bad Request", "The SAML logout request was refused", f'<p id="error">{html.escape(str(error))}</p>')
        return "303 See Other", [("Location", dict(answer["headers"])["Location"])], b""


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # one line per request, on stderr (the test keeps it)
        sys.stderr.write("sp: " + (format % args) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idp-metadata-url", required=True)
    parser.add_argument("--name", default="py-saml-sp")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--unsigned-requests", action="store_true")
    parser.add_argument("--post-requests", action="store_true")
    parser.add_argument("--allow-unsolicited", action="store_true")
    parser.add_argument("--single-logout", action="store_true")
    args = parser.parse_args()

    server = make_server("127.0.0.1", args.port, lambda e, s: app(e, s), handler_class=QuietHandler)
    base_url = f"http://127.0.0.1:{server.server_port}"
    key_file, cert_file = key_and_certificate(tempfile.mkdtemp(prefix="py-saml-sp-"), args.name)
    config = sp_config(
        base_url,
        args.name,
        args.idp_metadata_url,
        key_file,
        cert_file,
        not args.unsigned_requests,
        args.allow_unsolicited,
        args.single_logout,
    )
    app = ServiceProvider(
        Saml2Client(config=config), args.name, BINDING_HTTP_POST if args.post_requests else BINDING_HTTP_REDIRECT
    )
    print(
        json.dumps(
            {
                "url": base_url,
                "entity_id": config.entityid,
                "metadata_url": f"{base_url}/metadata",
                "acs_url": f"{base_url}/acs",
            }
        ),
        flush=True,
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
