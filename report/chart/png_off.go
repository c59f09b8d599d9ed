//go:build pipebench_nopng

package chart

import (
	"errors"
	"io"
)

// HasPNG tells that this build draws PNG images: this one, built with the
// tag pipebench_nopng (the Kubernetes shards' image), does not.
const HasPNG = false

// ErrNoPNG is PNG's error in a build without the renderer.
var ErrNoPNG = errors.New("this build has no PNG renderer (built with the tag pipebench_nopng, as the shards' image is): draw PNG charts with pipebench, or a build without the tag")

// PNG fails with ErrNoPNG: this build has no PNG renderer.
func (c *Chart) PNG(io.Writer) error { return ErrNoPNG }
