package main

// The image holds no CA certificates (no distribution, one static
// binary): these roots, Mozilla's, verify TLS where the machine offers
// none; a machine's own roots, where it has them, are used instead.
import _ "golang.org/x/crypto/x509roots/fallback"
