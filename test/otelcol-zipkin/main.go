// The OpenTelemetry Collector of the screenshot of docs/operations/traces.md (test/screenshots/traces.ts,
// through scripts/trace-screenshot.sh): the OTLP receiver the box exports to, and the contrib Zipkin
// exporter that hands its spans to a Zipkin server, whose UI shows them. The Zipkin exporter's last
// release is v0.148.0 (OpenTelemetry deprecated it), so this Collector is that release, not the
// one of test/otelcol. Not part of the TypeScript build, nor of make test.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/zipkinexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](zipkinexporter.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{Receivers: receivers, Exporters: exporters, Telemetry: otelconftelemetry.NewFactory()}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-zipkin", Description: "boxauth's Collector for the traces' screenshot", Version: version},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}

// The Collector release of go.mod, stamped by scripts/trace-screenshot.sh (-X main.version=…).
var version = "dev"
