# The 20 policies of `make bench`'s app (test/bench/decisions.ts) in Rego, for OPA
# in `make bench-peers`: the same rules over the same request, written as a Rego
# author would. As boxauth does first, the caller's ES256 JWT must verify against
# the box's keys (data.jwks, its published JWKS), issuer and audience; a request
# without one is refused whatever the rules say. Then any rule allows, tried in
# order: only the last two match GET /reports/7 by the bench's callers.
package envoy.authz

default allow := false

http := input.attributes.request.http

method := lower(http.method)

path := split(http.path, "?")[0]

claims := payload if {
	[scheme, token] := split(http.headers.authorization, " ")
	scheme == "Bearer"
	[valid, _, payload] := io.jwt.decode_verify(token, {"cert": data.jwks, "iss": data.issuer, "aud": data.audience})
	valid
}

client := claims.client_id

callers := {"bench-jwt", "bench-opaque"}

allow if {
	claims
	permitted
}

# 01-08: anyone may read these areas.
permitted if {
	some area in ["billing", "payroll", "admin", "audit", "exports", "imports", "search", "uploads"]
	regex.match(sprintf("^/%s(/|$)", [area]), path)
	method in {"get", "head"}
}

# 09-12: any client may write these collections.
permitted if {
	some collection in ["orders", "invoices", "tickets", "notes"]
	is_string(client)
	method in {"post", "put", "delete"}
	regex.match(sprintf("^/%s/", [collection]), path)
}

# 13-16: what else the bench's callers may do.
permitted if {
	client in callers
	regex.match(`^/metrics/`, path)
	method == "get"
}

permitted if {
	client in callers
	regex.match(`^/reports/[0-9]+/(edit|delete)$`, path)
}

# An MCP server's tools: the JSON-RPC body Envoy sends with the check (with_request_body),
# which OPA's Envoy plugin parses into input.parsed_body.
permitted if {
	client in callers
	method == "post"
	regex.match(`^/mcp$`, path)
	input.parsed_body.method == "tools/call"
	regex.match(`^(search|read_file)$`, input.parsed_body.params.name)
}

permitted if {
	client in callers
	regex.match(`\breports:admin\b`, claims.scope)
}

# 17-18: other clients.
permitted if {
	client in {"other-client-1", "other-client-2"}
	regex.match(`^/reports/`, path)
}

# 19-20: the two that allow.
permitted if {
	client in callers
	method == "get"
	regex.match(`^/reports/[0-9]+$`, path)
	claims.aud == data.audience
}

permitted if {
	client in callers
	method == "get"
	regex.match(`^/reports/`, path)
}
