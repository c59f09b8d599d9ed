// Command image builds pipebench's container image without Docker: Go's
// own build of the static binaries, from the commit's files (git archive:
// not the working tree's uncommitted changes), then an OCI image of one
// layer written with go-containerregistry, reproducibly (the same commit,
// toolchain and version give the same digest: every time in it is the
// commit's, every file's owner and mode fixed, the layer's files in one
// order).
//
//	go run . build [-load] [-src ../..] [-version V] [-o pipebench-image.tar] [-layout DIR]
//	go run . push -image pipebench-image.tar REPO:TAG...
//
// build writes a tarball (docker-archive: manifest.json, config, layer)
// that `docker load`, `podman load` and `kind load image-archive` take,
// tagged REPO:VERSION and REPO:sha-COMMIT (REPO is
// ghcr.io/pipebench/pipebench unless -repo says otherwise), and, with
// -layout, an OCI image layout too. It prints the image's digest. push
// sends the tarball's image to a registry under the tags given, with the
// credentials in $REGISTRY_USER and $REGISTRY_PASSWORD (the release
// workflow's).
//
// The image: /usr/local/bin/pipebench (the entry point; PATH has it, so
// the system under test's pod's command `pipebench k8s sut` finds it),
// pipebench-sut and pipebench-load beside it (the shards' `pipebench-load
// k8s worker`, the in-cluster sink's `pipebench-load k8s sink`), /etc/passwd and
// /etc/group naming the non-root user nonroot (65532) it runs as, and a
// /tmp writable by it. No shell, no package manager. TLS roots: the
// binary's own (internal/proc/tlsroots), since the image has none.
//
// build -load makes the load generator's image instead: pipebench-load
// alone (the entry point), built without the PNG renderer and the SQL
// results history (the tags pipebench_nopng and pipebench_nosqlstore:
// a shard and the in-cluster sink hand their results to the launcher and
// draw nothing), tagged ghcr.io/pipebench/pipebench-load:VERSION; the
// launcher's --load-image runs the shards and the sink from it.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: distroless's nonroot.
const (
	UID  = 65532
	User = "nonroot"
	// Binary is where the image holds pipebench.
	Binary = "/usr/local/bin/pipebench"
	// SUTBinary is where it holds pipebench-sut, beside pipebench, where
	// pipebench looks for it.
	SUTBinary = "/usr/local/bin/pipebench-sut"
	// LoadBinary is where it holds pipebench-load, the load generator
	// alone, which the shards and the in-cluster sink run.
	LoadBinary = "/usr/local/bin/pipebench-load"
	// Repo is where the release workflow pushes the image.
	Repo = "ghcr.io/pipebench/pipebench"
	// LoadRepo is where it pushes the load generator's image.
	LoadRepo = "ghcr.io/pipebench/pipebench-load"
	// LoadBuildTags leave out of the load generator's image what a
	// shard and the in-cluster sink never use and that is a third of the
	// program: the PNG renderer (gonum/plot and its twelve fonts) and the
	// SQL results history (SQLite and PostgreSQL); what asks for them
	// there fails, saying so.
	LoadBuildTags = "pipebench_nopng,pipebench_nosqlstore"
	// BuildTags are Prometheus's own build tags: they leave out of the
	// image's binary the service discovery of cloud providers (AWS,
	// EC2, OCI, Hetzner, Linode and the others), which the embedded
	// collector's Prometheus receiver links by default, and keep
	// Kubernetes' (a pod's own); static, file and HTTP discovery (what
	// pipebench writes) are always built. The binary is 40 MB smaller, a
	// process of it starts with about 20 MB less resident and half the
	// initialisation (docs/kubernetes.md, "The image").
	BuildTags = "remove_all_sd,enable_kubernetes_sd"
)

// Program is a program of an image: the package built and where the
// image holds it.
type Program struct{ Package, Path string }

// Flavor is one of the images tools/image builds.
type Flavor struct {
	// Name names it in messages and the image's history.
	Name string
	// Programs are what it holds, the first its entry point.
	Programs []Program
	// Tags are their build tags; Repo names the image's tags by default.
	Tags, Repo string
}

// Full is the image of Programs; Load the load generator's alone.
var (
	Full = Flavor{Name: "pipebench", Programs: Programs, Tags: BuildTags, Repo: Repo}
	Load = Flavor{Name: "pipebench-load", Programs: []Program{{"./cmd/pipebench-load", LoadBinary}}, Tags: LoadBuildTags, Repo: LoadRepo}
)

// Programs are what the image holds: pipebench, with the Kubernetes
// launcher and every pod's command (cmd/pipebench-k8s: pipebench's every
// command, and k8s run in-process), which the system under test's pod
// runs; beside it pipebench-sut, the heavy embedded systems under test's
// child processes (the collector, the health-event service), which
// pipebench finds beside itself; and pipebench-load, the load generator
// alone, which the shards and the in-cluster sink run (a scenario that
// embeds a system under test aside).
var Programs = []Program{
	{"./cmd/pipebench-k8s", Binary},
	{"./cmd/pipebench-sut", SUTBinary},
	{"./cmd/pipebench-load", LoadBinary},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|push [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = buildCmd(os.Args[2:])
	case "push":
		err = pushCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want build or push", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// Spec is what an image is built from.
type Spec struct {
	// Src is the pipebench module's folder.
	Src string
	// Version is the version the binary reports (-X .../internal/cli/buildinfo.Version) and
	// the image's version tag; Commit and Created name the commit built
	// and its time, which is every time in the image.
	Version, Commit string
	Created         time.Time
	// Arch is the GOARCH (default amd64).
	Arch string
	// Repo names the tags (default the flavor's).
	Repo string
	// Flavor is the image built (default Full).
	Flavor Flavor
}

func (s Spec) flavor() Flavor {
	if s.Flavor.Name == "" {
		return Full
	}
	return s.Flavor
}

// Tags are the image's tags: REPO:VERSION and REPO:sha-COMMIT (the
// commit's first 12 characters).
func (s Spec) Tags() []string {
	tags := []string{s.Repo + ":" + tagSafe(s.Version)}
	if s.Commit != "" {
		tags = append(tags, s.Repo+":sha-"+s.Commit[:min(12, len(s.Commit))])
	}
	return tags
}

func tagSafe(v string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, v)
}

func buildCmd(args []string) error {
	fl := flag.NewFlagSet("build", flag.ContinueOnError)
	src := fl.String("src", "../..", "the pipebench module's folder")
	version := fl.String("version", "", "version (default: git describe --tags --always --dirty)")
	out := fl.String("o", "pipebench-image.tar", "the image tarball (docker load, podman load, kind load image-archive)")
	lay := fl.String("layout", "", "also write an OCI image layout into this folder")
	arch := fl.String("arch", "amd64", "GOARCH")
	repo := fl.String("repo", "", "repository of the tags (default "+Repo+", with -load "+LoadRepo+")")
	load := fl.Bool("load", false, "build the load generator's image (pipebench-load alone, which the shards and the in-cluster sink run) instead")
	if err := fl.Parse(args); err != nil {
		return err
	}
	s, err := SpecFromGit(*src, *version)
	if err != nil {
		return err
	}
	if *load {
		s.Flavor = Load
	}
	s.Arch, s.Repo = *arch, *repo
	if s.Repo == "" {
		s.Repo = s.flavor().Repo
	}
	img, err := Build(s)
	if err != nil {
		return err
	}
	if err := WriteTarball(*out, img, s.Tags()); err != nil {
		return err
	}
	if *lay != "" {
		if err := WriteLayout(*lay, img, s.Tags()); err != nil {
			return err
		}
	}
	d, _ := img.Digest()
	fmt.Printf("%s %s\n", d, strings.Join(s.Tags(), " "))
	return nil
}

// SpecFromGit reads the commit, its time and (unless given) the version
// from the repository at src: git describe --tags --always --dirty.
// $SOURCE_DATE_EPOCH, if set, overrides the time.
func SpecFromGit(src, version string) (Spec, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		b, err := cmd.Output()
		return strings.TrimSpace(string(b)), err
	}
	s := Spec{Src: src, Version: version, Arch: "amd64", Repo: Repo}
	var err error
	if s.Commit, err = git("rev-parse", "HEAD"); err != nil {
		return s, fmt.Errorf("%s is not a git checkout: %w", src, err)
	}
	ts, err := git("log", "-1", "--format=%ct")
	if err != nil {
		return s, err
	}
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		ts = e
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return s, fmt.Errorf("commit time %q: %w", ts, err)
	}
	s.Created = time.Unix(sec, 0).UTC()
	if s.Version == "" {
		if s.Version, err = git("describe", "--tags", "--always", "--dirty"); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Build compiles the flavor's programs for linux/Arch and makes its image.
func Build(s Spec) (v1.Image, error) {
	fv := s.flavor()
	if s.Arch == "" {
		s.Arch = "amd64"
	}
	if s.Repo == "" {
		s.Repo = fv.Repo
	}
	dir, err := os.MkdirTemp("", "pipebench-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// The commit's files, not the working tree's: the image is what its
	// tags name.
	src := s.Src
	if s.Commit != "" {
		src = filepath.Join(dir, "src")
		if err := checkout(s.Src, s.Commit, src); err != nil {
			return nil, err
		}
	}
	ld := fmt.Sprintf("-s -w -buildid= -X github.com/pipebench/pipebench/internal/cli/buildinfo.Version=%s -X github.com/pipebench/pipebench/internal/cli/buildinfo.LinkedCommit=%s -X github.com/pipebench/pipebench/internal/cli/buildinfo.LinkedCommitTime=%s",
		s.Version, s.Commit, s.Created.Format(time.RFC3339))
	// Every program in one go build, which compiles what they share once.
	bins := filepath.Join(dir, "bin")
	args := []string{"build", "-trimpath", "-buildvcs=false", "-tags", fv.Tags, "-ldflags", ld, "-o", bins + string(filepath.Separator)}
	var pkgs []string
	for _, p := range fv.Programs {
		pkgs = append(pkgs, p.Package)
	}
	args = append(args, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+s.Arch, "GOFLAGS=-buildvcs=false")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build: %w", err)
	}
	files := map[string][]byte{}
	for _, p := range fv.Programs {
		data, err := os.ReadFile(filepath.Join(bins, filepath.Base(p.Package)))
		if err != nil {
			return nil, err
		}
		files[p.Path] = data
	}
	layerTar, err := rootfs(fv.Programs, files, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: s.Created}, CreatedBy: "tools/image: go build -tags " + fv.Tags + " " + strings.Join(pkgs, " "), Comment: fv.Name + " " + s.Version}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = s.Arch, "linux"
	cf.Created = v1.Time{Time: s.Created}
	cf.Author = "pipebench"
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, UID),
		Entrypoint: []string{fv.Programs[0].Path},
		Cmd:        []string{"--help"},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin",
			// The results history of a run inside a pod is not kept:
			// k8s run merges and saves on the launcher's side.
			"PIPEBENCH_HOME=/tmp/pipebench", "TMPDIR=/tmp"},
		WorkingDir: "/tmp",
		Labels: map[string]string{
			"org.opencontainers.image.title":    fv.Name,
			"org.opencontainers.image.version":  s.Version,
			"org.opencontainers.image.revision": s.Commit,
			"org.opencontainers.image.created":  s.Created.Format(time.RFC3339),
			"org.opencontainers.image.source":   "https://github.com/pipebench/pipebench",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// checkout writes the files of commit in the repository at repo into
// dir (git archive), without touching the repository.
func checkout(repo, commit, dir string) error {
	cmd := exec.Command("git", "archive", "--format=tar", commit)
	cmd.Dir = repo
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("git archive %s: %w", commit, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("git archive %s: %q is outside the tree", commit, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				var f *os.File
				if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777|0o600); err == nil {
					_, err = io.Copy(f, tr)
					err = errors.Join(err, f.Close())
				}
			}
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		}
		if err != nil {
			return err
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", commit, err, stderr.String())
	}
	return nil
}

// rootfs is the image's one layer, as a tar: every entry owned by root
// (but /tmp, open to all with the sticky bit), its time the commit's, in
// a fixed order.
func rootfs(list []Program, programs map[string][]byte, at time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: at, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: at, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", User, UID, UID, User, User)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", User, UID)
	err := errors.Join(
		dir("etc/", 0o755),
		file("etc/group", 0o644, []byte(group)),
		file("etc/passwd", 0o644, []byte(passwd)),
		dir("home/", 0o755),
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "home/" + User + "/", Mode: 0o700, Uid: UID, Gid: UID, ModTime: at, Format: tar.FormatPAX}),
		dir("tmp/", 0o1777),
		dir("usr/", 0o755),
		dir("usr/local/", 0o755),
		dir("usr/local/bin/", 0o755),
	)
	for _, p := range list { // in a fixed order: one commit, one digest
		err = errors.Join(err, file(strings.TrimPrefix(p.Path, "/"), 0o755, programs[p.Path]))
	}
	err = errors.Join(err, tw.Close())
	return b.Bytes(), err
}

// WriteTarball writes img as a docker-archive tarball under tags.
func WriteTarball(path string, img v1.Image, tags []string) error {
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return err
		}
		refs[ref] = img
	}
	return tarball.MultiRefWriteToFile(path, refs)
}

// WriteLayout writes img into an OCI image layout at dir, named by its
// first tag.
func WriteLayout(dir string, img v1.Image, tags []string) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tags[0]}))
}

func pushCmd(args []string) error {
	fl := flag.NewFlagSet("push", flag.ContinueOnError)
	path := fl.String("image", "pipebench-image.tar", "the image tarball build wrote")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() == 0 {
		return errors.New("give the tags to push: REPO:TAG...")
	}
	img, err := tarball.ImageFromPath(*path, nil)
	if err != nil {
		return err
	}
	auth := authn.Anonymous
	if u := os.Getenv("REGISTRY_USER"); u != "" {
		auth = &authn.Basic{Username: u, Password: os.Getenv("REGISTRY_PASSWORD")}
	}
	for _, t := range fl.Args() {
		ref, err := name.NewTag(t)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
			return fmt.Errorf("push %s: %w", t, err)
		}
		d, _ := img.Digest()
		fmt.Printf("pushed %s@%s\n", t, d)
	}
	return nil
}
