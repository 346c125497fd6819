// Package traceaudit is the root of the traceaudit module. The command is
// cmd/traceaudit; the work lives in timeline, ingest, analyze, report and
// replay. This package holds only module-wide tests (deps_test.go).
package traceaudit
