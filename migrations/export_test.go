package migrations

// ApplyTo is applyTo, for the external tests.
var ApplyTo = applyTo
