// Package testenv is the harness the integration tests share: waiting on
// conditions with a deadline, running commands, building the gsvfs binary
// once per test run, and collecting a daemon's log while a test reads it.
//
// It is for tests only: no package outside a _test.go file may import it
// (TestOnlyTestsImport checks that). Its helpers fail the test they are
// given with what they were waiting for or running, so that a test reads
// as the steps it takes and says which one failed.
//
// Waits poll a real condition until a deadline: the deadline bounds a
// wait on a loaded machine, it never stands in for the condition. A test
// that needs time itself to pass (a timeout, a cache's lifetime) sleeps,
// and says so.
package testenv
