// Command probe is the whole userland of the test pods of
// scripts/cluster-check.sh (no busybox image can be pulled here): a static
// binary that serves HTTP, fetches a URL and resolves a name, printing what
// it saw, so a check can ask a pod "what do you reach from inside?".
//
//	probe serve <port>         answer every GET with "probe <hostname>\n"
//	probe get <url>            print the body of GET <url> (exit 1 on error)
//	probe get-api <path>       the same for https://kubernetes.default.svc<path>,
//	                           with the pod's ServiceAccount CA and token
//	probe resolve <name>       print the addresses of <name> (resolv.conf)
//	probe sleep                wait for SIGTERM/SIGINT (a long-running pod)
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const usage = "usage: probe serve <port> | get <url> | get-api <path> | resolve <name> | sleep"

func main() {
	if len(os.Args) < 2 {
		fail(usage)
	}
	switch cmd, args := os.Args[1], os.Args[2:]; {
	case cmd == "serve" && len(args) == 1:
		host, _ := os.Hostname()
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "probe %s\n", host)
		})
		go waitForStop()
		fmt.Printf("probe: serving on :%s\n", args[0]) // what `kubectl logs` shows
		fail(http.ListenAndServe(":"+args[0], nil))
	case cmd == "get" && len(args) == 1:
		req, err := http.NewRequest(http.MethodGet, args[0], nil)
		if err != nil {
			fail(err)
		}
		get(&http.Client{Timeout: 10 * time.Second}, req)
	case cmd == "get-api" && len(args) == 1:
		// What a kubelet mounts for the pod's ServiceAccount: the cluster's
		// CA and a token it requested (projected, rotated). Sent only to the
		// API server's own Service name.
		const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
		ca, err := os.ReadFile(sa + "ca.crt")
		if err != nil {
			fail(err)
		}
		token, err := os.ReadFile(sa + "token")
		if err != nil {
			fail(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			fail("no certificate in " + sa + "ca.crt")
		}
		req, err := http.NewRequest(http.MethodGet, "https://kubernetes.default.svc"+args[0], nil)
		if err != nil {
			fail(err)
		}
		req.Header.Set("Authorization", "Bearer "+string(token))
		get(&http.Client{
			Timeout:   10 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}},
		}, req)
	case cmd == "resolve" && len(args) == 1:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// PreferGo: read /etc/resolv.conf as a pod's libc would, with its
		// search list and ndots, not a host resolver.
		addrs, err := (&net.Resolver{PreferGo: true}).LookupHost(ctx, args[0])
		if err != nil {
			fail(err)
		}
		for _, a := range addrs {
			fmt.Println(a)
		}
	case cmd == "sleep" && len(args) == 0:
		waitForStop()
	default:
		fail(usage)
	}
}

// get prints the body of req's answer; exits 1 unless it is 200 OK.
func get(client *http.Client, req *http.Request) {
	res, err := client.Do(req)
	if err != nil {
		fail(err)
	}
	defer res.Body.Close()
	if _, err := io.Copy(os.Stdout, res.Body); err != nil {
		fail(err)
	}
	if res.StatusCode != http.StatusOK {
		fail(res.Status)
	}
}

// waitForStop returns never: it exits 0 on SIGTERM or SIGINT (as PID 1 a
// process has no default handlers for them).
func waitForStop() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	os.Exit(0)
}

func fail(why any) {
	fmt.Fprintln(os.Stderr, "probe:", why)
	os.Exit(1)
}
