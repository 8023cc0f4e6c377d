// The ext_authz gRPC client of the decision point's tests and `make bench`
// (main.go): built by scripts/test-tools-build.sh into ~/.cache/boxauth/tools/bin;
// not part of the TypeScript build.
module boxauth/test/extauthz

go 1.25.0

require (
	github.com/envoyproxy/go-control-plane/envoy v1.36.0
	google.golang.org/grpc v1.77.0
	google.golang.org/protobuf v1.36.10
)

require (
	github.com/cncf/xds/go v0.0.0-20251022180443-0feb69152e9f // indirect
	github.com/envoyproxy/protoc-gen-validate v1.2.1 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	golang.org/x/net v0.46.1-0.20251013234738-63d1a5100f82 // indirect
	golang.org/x/sys v0.37.0 // indirect
	golang.org/x/text v0.30.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20251022142026-3a174f9686a8 // indirect
)
