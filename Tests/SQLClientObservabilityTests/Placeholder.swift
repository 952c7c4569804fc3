// The trait tests live in this target's other files, each compiled only under its trait (`#if`).
// This file keeps the target non-empty when no trait is enabled.
enum SQLClientObservabilityTestsTarget {}
