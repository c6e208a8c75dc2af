package testenv

import (
	"testing"
	"time"
)

// maxPollDelay bounds the pause between two looks at a condition: polls
// start at a millisecond, so a condition that holds at once costs nothing,
// and back off to this so that a long wait does not spin.
const maxPollDelay = 100 * time.Millisecond

// Poll looks at cond until it holds or within has passed, and says whether
// it held. It is for the callers that decide themselves what a condition
// that never held means; Eventually and WaitFor fail the test instead.
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	delay := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
		delay = min(2*delay, maxPollDelay)
	}
	return true
}

// Eventually polls cond until it holds, failing the test with what (and
// what cond said last, which should show how far things got) if it does
// not hold within the bound.
func Eventually(t testing.TB, within time.Duration, what string, cond func() (ok bool, last string)) {
	t.Helper()
	var last string
	if !Poll(within, func() (ok bool) { ok, last = cond(); return ok }) {
		t.Fatalf("%s: not so after %v; last seen: %s", what, within, last)
	}
}

// WaitFor polls cond until it holds, failing the test with what if it
// does not hold within the bound.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("%s: not so after %v", what, within)
	}
}
