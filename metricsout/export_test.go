package metricsout

// ParseExposition is parseExposition, for the tests of package
// metricsout_test.
var ParseExposition = parseExposition
