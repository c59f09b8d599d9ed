package main

import (
	"archive/tar"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image built from this checkout, twice: the same digest both times;
// its tarball read back as docker load reads it (manifest.json and the
// tags) and its OCI layout as an OCI tool does; its configuration (a
// non-root user, the entry point, PATH); and its filesystem, unpacked:
// the binary runs `version` from it and names the version and commit
// the image is tagged with. skopeo and podman, where installed, read the
// tarball as podman load does.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles pipebench for the image")
	}
	s, err := SpecFromGit("../..", "v0.0.0-imagetest")
	if err != nil {
		t.Skip(err)
	}
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of one commit: %s and %s", d1, d2)
	}
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "pipebench-image.tar")
	if err := WriteTarball(tarPath, img, s.Tags()); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(filepath.Join(dir, "layout"), img, s.Tags()); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(tarPath)
	idName, _ := img.ConfigName()
	t.Logf("image %s (ID %s), tarball %.1f MB, tags %v", d1, idName, float64(st.Size())/1e6, s.Tags())

	// Read back as the loaders read it: a docker-archive keeps the
	// configuration (its digest is the image ID docker load shows) and
	// the layers, not the manifest, which a loader makes anew.
	id, _ := img.ConfigName()
	layers, _ := img.Layers()
	for _, tag := range s.Tags() {
		tagged, err := tarball.ImageFromPath(tarPath, mustTag(t, tag))
		if err != nil {
			t.Fatalf("tag %s: %v", tag, err)
		}
		got, _ := tagged.ConfigName()
		gotLayers, _ := tagged.Layers()
		if got != id || len(gotLayers) != len(layers) {
			t.Errorf("tag %s: image ID %s (%d layers), want %s (%d)", tag, got, len(gotLayers), id, len(layers))
		}
		for i := range gotLayers {
			a, _ := gotLayers[i].Digest()
			b, _ := layers[i].Digest()
			if a != b {
				t.Errorf("tag %s: layer %d is %s, want %s", tag, i, a, b)
			}
		}
	}
	if !strings.HasSuffix(s.Tags()[0], ":v0.0.0-imagetest") || !strings.Contains(s.Tags()[1], ":sha-"+s.Commit[:12]) {
		t.Errorf("tags %v: want the version and the commit", s.Tags())
	}
	lp, err := layout.FromPath(filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	if li, err := lp.Image(d1); err != nil {
		t.Errorf("the OCI layout has no image %s: %v", d1, err)
	} else if mt, _ := li.MediaType(); !strings.Contains(string(mt), "oci") {
		t.Errorf("layout media type %s", mt)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || strings.HasPrefix(c.User, "0") || strings.HasPrefix(c.User, "root") {
		t.Errorf("user %q: want the non-root 65532", c.User)
	}
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != Binary {
		t.Errorf("entry point %v", c.Entrypoint)
	}
	if !contains(c.Env, "PATH=/usr/local/bin:/usr/bin:/bin") || cf.OS != "linux" || !cf.Created.Time.Equal(s.Created) {
		t.Errorf("env %v, os %s, created %s (commit time %s)", c.Env, cf.OS, cf.Created, s.Created)
	}
	if c.Labels["org.opencontainers.image.revision"] != s.Commit {
		t.Errorf("labels %v", c.Labels)
	}

	// The filesystem: owners, modes, and the binary running from it.
	root := filepath.Join(dir, "rootfs")
	files := unpack(t, img, root)
	for name, want := range map[string]string{
		"usr/local/bin/pipebench":      "0755 0:0",
		"usr/local/bin/pipebench-sut":  "0755 0:0",
		"usr/local/bin/pipebench-load": "0755 0:0",
		"etc/passwd":                   "0644 0:0",
		"tmp":                          "1777 0:0",
	} {
		if got := files[name]; got != want {
			t.Errorf("%s: mode and owner %q, want %q", name, got, want)
		}
	}
	passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd:\n%s", passwd)
	}
	out, err := exec.Command(filepath.Join(root, Binary), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("the image's binary: %v\n%s", err, out)
	}
	t.Logf("pipebench version, from the image:\n%s", out)
	linkedAsTagged(t, filepath.Join(root, Binary), BuildTags, cloudSDKs, "k8s.io/client-go")
	linkedAsTagged(t, filepath.Join(root, SUTBinary), BuildTags, cloudSDKs, "github.com/prometheus/prometheus")
	sut, err := exec.Command(filepath.Join(root, SUTBinary), "version").CombinedOutput()
	if err != nil || !strings.Contains(string(sut), "pipebench v0.0.0-imagetest") {
		t.Errorf("the image's pipebench-sut version: %v\n%s", err, sut)
	}
	// pipebench-load, the shards' program: its version, and the
	// readiness probe, which fails outside a ready shard's pod.
	load, err := exec.Command(filepath.Join(root, LoadBinary), "version").CombinedOutput()
	if err != nil || !strings.Contains(string(load), "pipebench v0.0.0-imagetest") {
		t.Errorf("the image's pipebench-load version: %v\n%s", err, load)
	}
	probe := exec.Command(filepath.Join(root, LoadBinary), "k8s", "ready")
	probe.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if out, err := probe.CombinedOutput(); probe.ProcessState == nil || probe.ProcessState.ExitCode() != 1 {
		t.Errorf("pipebench-load k8s ready, no shard waiting: %v (want exit 1)\n%s", err, out)
	}
	for _, want := range []string{"pipebench v0.0.0-imagetest", "commit:  " + s.Commit, "go:      go", "linux/"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	// podman load's own library, where installed.
	if skopeo, err := exec.LookPath("skopeo"); err == nil {
		out, err := exec.Command(skopeo, "inspect", "--raw", "docker-archive:"+tarPath).CombinedOutput()
		if err != nil {
			t.Errorf("skopeo cannot read the tarball: %v\n%s", err, out)
		}
		out, err = exec.Command(skopeo, "inspect", "oci:"+filepath.Join(dir, "layout")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), s.Commit) {
			t.Errorf("skopeo cannot read the OCI layout: %v\n%s", err, out)
		}
	} else {
		t.Log("skopeo not installed: the tarball was read back with go-containerregistry only")
	}
}

// The load generator's image (build -load): pipebench-load alone, its
// entry point, built with LoadBuildTags, under 20 MB compressed (what a
// node pulls for every shard); it runs `version` and the readiness probe
// from its filesystem, links neither the PNG renderer nor SQLite,
// and says so when asked for the results history.
func TestLoadImage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles pipebench-load for the image")
	}
	s, err := SpecFromGit("../..", "v0.0.0-imagetest")
	if err != nil {
		t.Skip(err)
	}
	s.Flavor, s.Repo = Load, LoadRepo
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if tags := s.Tags(); !strings.HasPrefix(tags[0], LoadRepo+":v0.0.0-imagetest") {
		t.Errorf("tags %v: want %s's", tags, LoadRepo)
	}
	layers, _ := img.Layers()
	var compressed int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		compressed += n
	}
	t.Logf("the load generator's image: %d layer(s), %.1f MB compressed", len(layers), float64(compressed)/1e6)
	if compressed >= 20e6 {
		t.Errorf("the load generator's image is %.1f MB compressed: want under 20 MB", float64(compressed)/1e6)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if ep := cf.Config.Entrypoint; len(ep) != 1 || ep[0] != LoadBinary || cf.Config.User != "65532:65532" {
		t.Errorf("entry point %v, user %q: want %s as 65532", ep, cf.Config.User, LoadBinary)
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	files := unpack(t, img, root)
	if files["usr/local/bin/pipebench-load"] != "0755 0:0" {
		t.Errorf("usr/local/bin/pipebench-load: %q", files["usr/local/bin/pipebench-load"])
	}
	for _, other := range []string{"usr/local/bin/pipebench", "usr/local/bin/pipebench-sut"} {
		if _, ok := files[other]; ok {
			t.Errorf("the load generator's image holds %s", other)
		}
	}
	bin := filepath.Join(root, LoadBinary)
	// (PostgreSQL's client stays: the effect observer reads a table.)
	linkedAsTagged(t, bin, LoadBuildTags, []string{"gonum.org/v1/plot", "modernc.org/sqlite"})
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.Contains(string(out), "pipebench v0.0.0-imagetest") {
		t.Errorf("pipebench-load version: %v\n%s", err, out)
	}
	probe := exec.Command(bin, "k8s", "ready")
	probe.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if out, err := probe.CombinedOutput(); probe.ProcessState == nil || probe.ProcessState.ExitCode() != 1 {
		t.Errorf("pipebench-load k8s ready, no shard waiting: %v (want exit 1)\n%s", err, out)
	}
	hist := exec.Command(bin, "history")
	hist.Env = append(os.Environ(), "PIPEBENCH_HOME="+t.TempDir())
	out, _ := hist.CombinedOutput()
	if hist.ProcessState == nil || hist.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "pipebench_nosqlstore") {
		t.Errorf("pipebench-load history in the load generator's image: exit %v, want non-zero naming the tag:\n%s", hist.ProcessState, out)
	}
}

// cloudSDKs are modules of the cloud providers' service discovery, which
// BuildTags leave out.
var cloudSDKs = []string{"github.com/aws/aws-sdk-go", "github.com/aws/aws-sdk-go-v2/service/ec2", "github.com/hetznercloud/hcloud-go/v2", "github.com/oracle/oci-go-sdk/v65"}

// linkedAsTagged checks, from the build information in the binary at
// path (an independent reading of what was linked), that it was built
// with tags, links the modules it must (pipebench the Kubernetes client,
// pipebench-sut Prometheus, whose Kubernetes discovery the tags keep) and
// none of those the tags leave out.
func linkedAsTagged(t *testing.T, path, tags string, leftOut []string, must ...string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("the image's binary: %v", err)
	}
	got := ""
	for _, s := range bi.Settings {
		if s.Key == "-tags" {
			got = s.Value
		}
	}
	if got != tags {
		t.Errorf("%s was built with tags %q, want %q", filepath.Base(path), got, tags)
	}
	linked := map[string]bool{}
	for _, m := range bi.Deps {
		linked[m.Path] = true
	}
	for _, m := range must {
		if !linked[m] {
			t.Errorf("%s does not link %s", filepath.Base(path), m)
		}
	}
	for _, m := range leftOut {
		if linked[m] {
			t.Errorf("%s links %s, which %s leaves out", filepath.Base(path), m, tags)
		}
	}
}

func mustTag(t *testing.T, s string) *name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return &tag
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// unpack writes the image's filesystem under root and returns each
// entry's mode and owner as the layer records them.
func unpack(t *testing.T, img v1.Image, root string) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		mode := h.FileInfo().Mode()
		perm := mode.Perm()
		if mode&os.ModeSticky != 0 {
			perm |= 0o1000
		}
		out[strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = fmt.Sprintf("%04o %d:%d", uint32(perm), h.Uid, h.Gid)
		p := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(p), 0o755)
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode)&0o777)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(f, tr)
			f.Close()
		}
	}
	return out
}
