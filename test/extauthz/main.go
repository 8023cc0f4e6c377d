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
//	extauthz http -url http://HOST:PORT -requests FILE [-c 32] [-d 10s] [-rate N]
//	    the same for an HTTP door (forward-auth): FILE's requests are JSON lines
//	    {method, path, headers, body}, sent over -c keep-alive connections; a
//	    status under 300 is allowed. wrk has no fixed rate: this is the open loop
//	    of `make bench`'s HTTP decision rows, the same schedule as the gRPC ones.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
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
	var reqs []*authv3.CheckRequest
	for _, line := range jsonLines(*file) {
		reqs = append(reqs, parse(line))
	}
	clients := make([]authv3.AuthorizationClient, *conns)
	for i := range clients {
		clients[i] = authv3.NewAuthorizationClient(dial(*addr, *ca))
	}
	drive(*streams, *duration, *rate, func(stream, i int) (bool, error) {
		res, err := clients[stream%len(clients)].Check(context.Background(), reqs[i%len(reqs)])
		if err != nil {
			return false, err
		}
		return res.GetStatus().GetCode() == 0, nil
	})
}

// httpRequest is one request of `extauthz http`'s file: what load.ts's BenchRequest holds.
type httpRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

// httpLoad is load's twin for a forward-auth door: the same streams, schedule and summary, over
// HTTP/1.1 with one keep-alive connection a stream (as wrk and a gateway's pool keep them).
func httpLoad(args []string) {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	base := fs.String("url", "", "the server, http://host:port")
	file := fs.String("requests", "", "requests, JSON lines of {method, path, headers, body}")
	streams := fs.Int("c", 32, "concurrent requests (connections)")
	duration := fs.Duration("d", 10*time.Second, "how long")
	rate := fs.Int("rate", 0, "requests a second on a fixed schedule (0: as fast as answered)")
	_ = fs.Parse(args)
	var reqs []httpRequest
	for _, line := range jsonLines(*file) {
		var r httpRequest
		if err := json.Unmarshal(line, &r); err != nil {
			die("not a request: %v: %s", err, line)
		}
		reqs = append(reqs, r)
	}
	clients := make([]*http.Client, *streams)
	for i := range clients {
		clients[i] = &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}}
	}
	drive(*streams, *duration, *rate, func(stream, i int) (bool, error) {
		r := reqs[i%len(reqs)]
		var body io.Reader
		if r.Body != nil {
			body = strings.NewReader(*r.Body)
		}
		req, err := http.NewRequest(r.Method, *base+r.Path, body)
		if err != nil {
			return false, err
		}
		for k, v := range r.Headers {
			if strings.EqualFold(k, "host") {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		res, err := clients[stream].Do(req)
		if err != nil {
			return false, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode < 300, nil
	})
}

// jsonLines reads file's non-empty lines.
func jsonLines(file string) [][]byte {
	data, err := os.ReadFile(file)
	if err != nil {
		die("%v", err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
	}
	if len(lines) == 0 {
		die("%s holds no request", file)
	}
	return lines
}

// drive sends request i of stream `stream` with send (true: allowed) from `streams` goroutines for
// `duration`, closed loop, or with rate > 0 on a fixed schedule, and writes the JSON summary.
func drive(streams int, duration time.Duration, rate int, send func(stream, i int) (bool, error)) {
	type tally struct {
		lat                    []time.Duration
		allowed, denied, fails int
		firstError             string
	}
	tallies := make([]tally, streams)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	start := time.Now()
	// With -rate, the times requests are due; every stream takes the next one.
	var due chan time.Time
	if rate > 0 {
		due = make(chan time.Time, 1<<16)
		go schedule(due, start, deadline, rate)
	}
	for s := 0; s < streams; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			t := &tallies[s]
			for i := s; ; i += streams {
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
				allowed, err := send(s, i)
				t.lat = append(t.lat, time.Since(began))
				switch {
				case err != nil:
					t.fails++
					if t.firstError == "" {
						t.firstError = err.Error()
					}
				case allowed:
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
		die("usage: extauthz check|load|http -addr HOST:PORT … (see the comment atop test/extauthz/main.go)")
	}
	switch os.Args[1] {
	case "check":
		check(os.Args[2:])
	case "load":
		load(os.Args[2:])
	case "http":
		httpLoad(os.Args[2:])
	default:
		die("unknown command %q: check, load or http", os.Args[1])
	}
}
