package pod

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/pipebench/pipebench"
)

// Config loads the client configuration: the kubeconfig file given,
// $KUBECONFIG, ~/.kube/config, or the pod's service account; namespace,
// if set, overrides the configuration's, which is returned (default when
// there is none). The client keeps to 50 requests a second (bursts of
// 100).
func Config(kubeconfig, namespace string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	if kubeconfig != "" {
		// client-go reads it whole: a regular file, bounded, checked
		// first.
		if err := pipebench.CheckFile("--kubeconfig", kubeconfig, 0); err != nil {
			return nil, "", err
		}
	}
	over := &clientcmd.ConfigOverrides{}
	if namespace != "" {
		over.Context.Namespace = namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", pipebench.UsageError("no Kubernetes cluster to talk to", "give --kubeconfig FILE or set KUBECONFIG", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

// Connect connects a pod to the API server (see Config) with the pods'
// own client (NewClient), and returns the namespace.
func Connect(namespace string) (Client, string, error) {
	cfg, ns, err := Config("", namespace)
	if err != nil {
		return nil, "", err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}
