// Command nsforward publishes one TCP port of a network namespace on the
// host's loopback: it listens on <listen> (e.g. 127.0.0.1:6444) where it was
// started and dials <target> from inside the namespace whose file is <netns>
// (e.g. the bind mount scripts/cluster-up.sh keeps), copying bytes both ways.
// So the cluster's API server stays inside its namespace while kubectl on the
// host reaches it through loopback, with no route, address or firewall rule
// added to the host. A socket belongs to the namespace of the thread that
// created it: the dialing thread enters the namespace for the socket() call
// and is then thrown away (never unlocked), so no other goroutine runs there.
//
//	nsforward <listen> <netns file> <target>
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 4 {
		fail("usage: nsforward <listen addr> <netns file> <target addr>")
	}
	listen, nsPath, target := os.Args[1], os.Args[2], os.Args[3]
	if _, err := os.Stat(nsPath); err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fail(err)
	}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		os.Exit(0)
	}()
	for {
		client, err := ln.Accept()
		if err != nil {
			fail(err)
		}
		go forward(client, nsPath, target)
	}
}

func forward(client net.Conn, nsPath, target string) {
	defer client.Close()
	server, err := dialIn(nsPath, target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nsforward:", err)
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}

// dialIn connects to target from inside the network namespace nsPath.
func dialIn(nsPath, target string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	out := make(chan result, 1)
	go func() {
		// Locked and never unlocked: the goroutine's thread exits with it
		// rather than returning to the pool still inside the namespace.
		runtime.LockOSThread()
		ns, err := os.Open(nsPath)
		if err != nil {
			out <- result{nil, err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			out <- result{nil, fmt.Errorf("setns %s: %w", nsPath, err)}
			return
		}
		conn, err := net.DialTimeout("tcp", target, 10*time.Second)
		out <- result{conn, err}
	}()
	r := <-out
	return r.conn, r.err
}

func fail(why any) {
	fmt.Fprintln(os.Stderr, "nsforward:", why)
	os.Exit(1)
}
