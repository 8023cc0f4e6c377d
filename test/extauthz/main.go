// extauthz: an Envoy ext_authz v3 gRPC client, built from Envoy's own protos
// (github.com/envoyproxy/go-control-plane), for boxauth's tests and `make bench`.
// scripts/test-tools-build.sh builds it into ~/.cache/boxauth/tools/bin.
//
//	extauthz check -addr HOST:PORT [-ca FILE]
//	    reads CheckRequests as JSON lines (protojson) on stdin and writes, a line
//	    each, the CheckResponse (protojson) or {"grpcError":{"code":N,"name":S,"message":S}}.
//	extauthz load -addr HOST:PORT -requests FILE [-c 32] [-d 10s] [-conns 2] [-rate N] [-ca FILE]
//	    sends the CheckRequests of FILE (JSON lines), round robin, from -c
//	    concurrent streams for -d, and writes one JSON summary: checks/s,
//	    latency percentiles, and how many were allowed, denied or failed.
//	    Closed loop by default (each stream sends its next check when the last
//	    is answered: the throughput the server reaches). With -rate, open loop:
//	    N checks a second on a fixed schedule, whatever the answers, at most -c
//	    in flight; a check's latency counts from when it was due, so a server
//	    that falls behind shows it in the percentiles (no coordinated omission).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "extauthz: "+format+"\n", args...)
	os.Exit(2)
}

func dial(addr, ca string) *grpc.ClientConn {
	creds := insecure.NewCredentials()
	if ca != "" {
		c, err := credentials.NewClientTLSFromFile(ca, "")
		if err != nil {
			die("%s: %v", ca, err)
		}
		creds = c
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		die("%s: %v", addr, err)
	}
	return conn
}

func parse(line []byte) *authv3.CheckRequest {
	req := &authv3.CheckRequest{}
	if err := protojson.Unmarshal(line, req); err != nil {
		die("not a CheckRequest: %v: %s", err, line)
	}
	return req
}

func check(args []string) {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	addr := fs.String("addr", "", "the ext_authz server, host:port")
	ca := fs.String("ca", "", "PEM CA to trust: speak TLS")
	timeout := fs.Duration("timeout", 10*time.Second, "per check")
	_ = fs.Parse(args)
	client := authv3.NewAuthorizationClient(dial(*addr, *ca))
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		res, err := client.Check(ctx, parse(in.Bytes()))
		cancel()
		if err != nil {
			s := status.Convert(err)
			line, _ := json.Marshal(map[string]any{"grpcError": map[string]any{"code": int(s.Code()), "name": s.Code().String(), "message": s.Message()}})
			out.Write(line)
		} else {
			line, _ := protojson.Marshal(res)
			out.Write(line)
		}
		out.WriteString("\n")
		out.Flush()
	}
}

func load(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	addr := fs.String("addr", "", "the ext_authz server, host:port")
	ca := fs.String("ca", "", "PEM CA to trust: speak TLS")
	file := fs.String("requests", "", "CheckRequests, JSON lines")
	streams := fs.Int("c", 32, "concurrent checks")
	duration := fs.Duration("d", 10*time.Second, "how long")
	conns := fs.Int("conns", 2, "HTTP/2 connections the streams share")
	rate := fs.Int("rate", 0, "checks a second on a fixed schedule (0: as fast as answered)")
	_ = fs.Parse(args)
	data, err := os.ReadFile(*file)
	if err != nil {
		die("%v", err)
	}
	var reqs []*authv3.CheckRequest
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			reqs = append(reqs, parse(sc.Bytes()))
		}
	}
	if len(reqs) == 0 {
		die("%s holds no request", *file)
	}
	clients := make([]authv3.AuthorizationClient, *conns)
	for i := range clients {
		clients[i] = authv3.NewAuthorizationClient(dial(*addr, *ca))
	}
	type tally struct {
		lat                    []time.Duration
		allowed, denied, fails int
		firstError             string
	}
	tallies := make([]tally, *streams)
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	start := time.Now()
	// With -rate, the times checks are due; every stream takes the next one.
	var due chan time.Time
	if *rate > 0 {
		due = make(chan time.Time, 1<<16)
		go schedule(due, start, deadline, *rate)
	}
	for s := 0; s < *streams; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			t := &tallies[s]
			client := clients[s%len(clients)]
			for i := s; ; i += *streams {
				var began time.Time
				if due != nil {
					at, open := <-due
					if !open {
						return
					}
					began = at
				} else if began = time.Now(); !began.Before(deadline) {
					return
				}
				res, err := client.Check(context.Background(), reqs[i%len(reqs)])
				t.lat = append(t.lat, time.Since(began))
				switch {
				case err != nil:
					t.fails++
					if t.firstError == "" {
						t.firstError = err.Error()
					}
				case res.GetStatus().GetCode() == 0:
					t.allowed++
				default:
					t.denied++
				}
			}
		}(s)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	sum := tally{}
	for _, t := range tallies {
		all = append(all, t.lat...)
		sum.allowed += t.allowed
		sum.denied += t.denied
		sum.fails += t.fails
		if sum.firstError == "" {
			sum.firstError = t.firstError
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	summary := map[string]any{
		"checks": len(all), "seconds": elapsed.Seconds(), "perSecond": float64(len(all)) / elapsed.Seconds(),
		"p50Ms": pct(0.5), "p90Ms": pct(0.9), "p99Ms": pct(0.99), "maxMs": pct(1),
		"allowed": sum.allowed, "denied": sum.denied, "errors": sum.fails,
	}
	if sum.firstError != "" {
		summary["firstError"] = sum.firstError
	}
	line, _ := json.Marshal(summary)
	fmt.Println(string(line))
}

// schedule sends, until deadline, the time each check is due: rate a second from start.
func schedule(due chan<- time.Time, start, deadline time.Time, rate int) {
	defer close(due)
	interval := time.Second / time.Duration(rate)
	next := start
	for next.Before(deadline) {
		if wait := time.Until(next); wait > 0 {
			time.Sleep(wait)
		}
		// Sleeps overshoot: everything due by now goes at once, on its own due time.
		for now := time.Now(); !next.After(now) && next.Before(deadline); next = next.Add(interval) {
			due <- next
		}
	}
}

func main() {
	if len(os.Args) < 2 {
		die("usage: extauthz check|load -addr HOST:PORT … (see the comment atop test/extauthz/main.go)")
	}
	switch os.Args[1] {
	case "check":
		check(os.Args[2:])
	case "load":
		load(os.Args[2:])
	default:
		die("unknown command %q: check or load", os.Args[1])
	}
}
