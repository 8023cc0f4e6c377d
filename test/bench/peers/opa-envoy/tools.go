//go:build tools

// Keeps what the plugin's main package imports required (scripts/peers-build.sh builds that
// package, github.com/open-policy-agent/opa-envoy-plugin/cmd/opa-envoy-plugin, which cannot be
// imported): its plugin, and OPA's command and runtime.
package tools

import (
	_ "github.com/open-policy-agent/opa-envoy-plugin/plugin"
	_ "github.com/open-policy-agent/opa/cmd"
	_ "github.com/open-policy-agent/opa/v1/runtime"
)
