// Command probe is the whole userland of the test pods of
// scripts/cluster-check.sh (no busybox image can be pulled here): a static
// binary that serves HTTP, fetches a URL and resolves a name, printing what
// it saw, so a check can ask a pod "what do you reach from inside?".
//
//	probe serve <port>         answer every GET with "probe <hostname>\n"
//	probe get <url>            print the body of GET <url> (exit 1 on error)
//	probe resolve <name>       print the addresses of <name> (resolv.conf)
//	probe sleep                wait for SIGTERM/SIGINT (a long-running pod)
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: probe serve <port> | get <url> | resolve <name> | sleep")
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
		client := http.Client{Timeout: 10 * time.Second}
		res, err := client.Get(args[0])
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
		fail("usage: probe serve <port> | get <url> | resolve <name> | sleep")
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
