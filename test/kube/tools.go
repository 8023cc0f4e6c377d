//go:build tools

// Package tools records the main packages that scripts/kube-build.sh builds,
// so that `go mod tidy` keeps their dependencies in go.mod/go.sum.
package tools

import (
	// etcd: the module root of go.etcd.io/etcd/server/v3 is the etcd binary's
	// main package (a wrapper around etcdmain.Main).
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	// kubectl of the same release, so kube-up.sh needs nothing from PATH.
	_ "k8s.io/kubernetes/cmd/kubectl"
	// The node of the one-node cluster of cluster-up.sh
	// (`kube-build.sh --node`).
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
