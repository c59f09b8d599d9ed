package grpcdriver

// HealthSchema lends the external tests (the benchmark's server process)
// the compiled example schema the package's own test servers use.
var HealthSchema = healthSchema
