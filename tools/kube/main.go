// Command kube is a test-only multi-call binary: etcd, kube-apiserver and
// kube-controller-manager linked into one executable so they share one link.
// It lives in its own module so that pipebench's module never depends on
// k8s.io/kubernetes. Usage:
//
//	kube etcd [etcd flags]
//	kube kube-apiserver [flags]
//	kube kube-controller-manager [flags]
//
// The first argument (or the executable's name, when it is invoked through a
// symlink named after a component) picks the component.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if name == "kube" || name == "kube-tools" {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, "usage: kube etcd|kube-apiserver|kube-controller-manager [flags]")
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	switch name {
	case "etcd":
		etcdmain.Main(append([]string{"etcd"}, args...))
	case "kube-apiserver":
		cmd := apiserver.NewAPIServerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "kube-controller-manager":
		cmd := controllermanager.NewControllerManagerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown component %q (want etcd, kube-apiserver or kube-controller-manager)\n", name)
		os.Exit(2)
	}
}
