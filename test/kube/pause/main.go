// Command pause is the sandbox ("pause") container of the cluster of
// scripts/cluster-up.sh: registry.k8s.io/pause cannot be pulled here, so
// this does what its C original does. As PID 1 of the pod it holds the pod's
// namespaces open, exits 0 on SIGTERM or SIGINT (PID 1 gets no default signal
// handlers from the kernel, hence the explicit ones), and reaps the orphans
// re-parented to it so no zombie stays.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (boxauth test/kube/pause)")
		return
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
