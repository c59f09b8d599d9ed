package k8s

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/k8s/pod"
)

var release = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// DefaultImage is the image the pods run when --image is not given: the
// image of this pipebench's own version, ImageRepository:VERSION, for a
// release build (version v1.2.3), so that the launcher and its pods
// speak alike; ImageRepository:latest for any other build, which should
// be given the image built from its own commit (tools/image).
func DefaultImage(version string) string {
	if release.MatchString(version) {
		return ImageRepository + ":" + version
	}
	return ImageRepository + ":latest"
}

// DefaultLoadImage is the image the shards and the in-cluster sink run
// when neither --image nor --load-image is given: the load generator's
// image (pipebench-load alone) of the version DefaultImage names.
func DefaultLoadImage(version string) string {
	if release.MatchString(version) {
		return LoadImageRepository + ":" + version
	}
	return LoadImageRepository + ":latest"
}

// RunLength is the length of the load and drain of the run whose
// ConfigMap is ns/name, compiled from its scenario; an hour when it
// cannot be compiled here (its ${VAR}s may be the pods' only).
func RunLength(ctx context.Context, c kubernetes.Interface, reg *pipebench.Registry, ns, name string) time.Duration {
	run, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return time.Hour
	}
	plan, err := pod.RunPlan(reg, run)
	if err != nil {
		return time.Hour
	}
	return plan.Duration() + plan.Drain.D()
}

// WriteKustomize writes the objects into dir as a kustomize base: one
// file per object, NN-KIND-NAME.yaml in creation order, each exactly the
// document WriteYAML prints, and a kustomization.yaml listing them. An
// overlay sets what a team's GitOps repository changes (images, labels,
// patches); the namespace is the one the objects were made for (the
// shards find the in-cluster sink by its Service's name in it).
func (obj *Objects) WriteKustomize(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	docs, err := obj.documents()
	if err != nil {
		return err
	}
	var files []string
	for i, d := range docs {
		f := strconv.Itoa(i+1) + "-" + d.kind + "-" + d.name + ".yaml"
		if i < 9 {
			f = "0" + f
		}
		if err := os.WriteFile(filepath.Join(dir, f), d.yaml, 0o644); err != nil {
			return err
		}
		files = append(files, f)
	}
	sort.Strings(files)
	k, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  files,
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), k, 0o644)
}
