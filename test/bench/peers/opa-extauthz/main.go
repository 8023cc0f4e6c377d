// opa-extauthz: OPA, as a library from the Go module proxy, answering Envoy's
// ext_authz v3 Check over gRPC, for `make bench-peers`. It stands in for OPA's
// Envoy plugin (github.com/open-policy-agent/opa-envoy-plugin, built from
// test/bench/peers/opa-envoy) only where the Go module proxy refuses to serve
// the plugin's version: scripts/peers-build.sh falls back to it then. It does what the
// plugin's gRPC server does for a request, and no more: the CheckRequest as
// protojson becomes `input` (input.attributes.request.http…), with the
// plugin's input.parsed_path and input.parsed_query beside it; one prepared
// query (the plugin's `path`, data.envoy.authz.allow by default) decides; true
// is OK, anything else PERMISSION_DENIED with 403. The inter-query built-in
// cache is configured as OPA's server configures it by default (parsed JWKS
// cached, verified tokens not), and no decision is logged (the plugin's
// default without decision_logs).
//
//	opa-extauthz -addr 127.0.0.1:9191 -policy policy.rego -data data.json [-query data.envoy.authz.allow]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown/cache"
	"github.com/open-policy-agent/opa/v1/util"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
)

type server struct {
	authv3.UnimplementedAuthorizationServer
	query rego.PreparedEvalQuery
	cache cache.InterQueryValueCache
}

// input is the plugin's: the request's attributes as protojson names them, the path split on "/", the query parsed.
func input(req *authv3.CheckRequest) (ast.Value, error) {
	raw, err := protojson.Marshal(req)
	if err != nil {
		return nil, err
	}
	var in map[string]any
	if err := util.UnmarshalJSON(raw, &in); err != nil {
		return nil, err
	}
	path := req.GetAttributes().GetRequest().GetHttp().GetPath()
	rawPath, rawQuery, _ := strings.Cut(path, "?")
	parsedPath := []any{}
	for _, segment := range strings.Split(strings.TrimLeft(rawPath, "/"), "/") {
		if segment != "" {
			parsedPath = append(parsedPath, segment)
		}
	}
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, err
	}
	parsedQuery := map[string]any{}
	for k, vs := range query {
		values := make([]any, len(vs))
		for i, v := range vs {
			values[i] = v
		}
		parsedQuery[k] = values
	}
	in["parsed_path"] = parsedPath
	in["parsed_query"] = parsedQuery
	return ast.InterfaceToValue(in)
}

func (s *server) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	in, err := input(req)
	if err != nil {
		return nil, err
	}
	rs, err := s.query.Eval(ctx, rego.EvalParsedInput(in), rego.EvalInterQueryBuiltinValueCache(s.cache))
	if err != nil {
		return nil, err
	}
	if rs.Allowed() {
		return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.OK)}}, nil
	}
	return &authv3.CheckResponse{
		Status: &rpcstatus.Status{Code: int32(codes.PermissionDenied)},
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden},
			Headers: []*corev3.HeaderValueOption{},
		}},
	}, nil
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "opa-extauthz: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9191", "where to serve ext_authz (gRPC)")
	policyFile := flag.String("policy", "", "the Rego module")
	dataFile := flag.String("data", "", "a JSON document: data")
	queryText := flag.String("query", "data.envoy.authz.allow", "the decision: true allows")
	flag.Parse()
	policy, err := os.ReadFile(*policyFile)
	if err != nil {
		die("%v", err)
	}
	var data map[string]any
	if *dataFile != "" {
		raw, err := os.ReadFile(*dataFile)
		if err != nil {
			die("%v", err)
		}
		if err := json.Unmarshal(raw, &data); err != nil {
			die("%s: %v", *dataFile, err)
		}
	}
	ctx := context.Background()
	query, err := rego.New(
		rego.Query(*queryText),
		rego.Module(*policyFile, string(policy)),
		rego.Store(inmem.NewFromObject(data)),
	).PrepareForEval(ctx)
	if err != nil {
		die("%v", err)
	}
	config, err := cache.ParseCachingConfig(nil)
	if err != nil {
		die("%v", err)
	}
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		die("%v", err)
	}
	grpcServer := grpc.NewServer()
	authv3.RegisterAuthorizationServer(grpcServer, &server{query: query, cache: cache.NewInterQueryValueCache(ctx, config)})
	fmt.Fprintf(os.Stderr, "opa-extauthz: serving ext_authz on %s\n", listener.Addr())
	if err := grpcServer.Serve(listener); err != nil {
		die("%v", err)
	}
}
