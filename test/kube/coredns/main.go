// Command coredns is CoreDNS with only the plugins the cluster DNS of
// scripts/cluster-up.sh uses (its Corefile: errors, health, ready,
// kubernetes, cache), log to debug one, and loop for a Corefile that adds a
// forward (none has an upstream inside the cluster's namespace), so the build
// stays small. The plugin order is
// CoreDNS's own (core/dnsserver/zdirectives.go); a plugin not imported here
// is unknown to the Corefile parser.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
