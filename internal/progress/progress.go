// Package progress shows the progress of long work on a terminal's stderr:
// one line, rewritten in place at most ten times a second, shown only once
// the work has run for more than a second, and erased when the work ends.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Bar reports the progress of one task. A nil *Bar is valid and shows
// nothing, so callers need not check whether stderr is a terminal.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	start   time.Time
	last    time.Time
	shown   bool
	now     func() time.Time
	delay   time.Duration
	minStep time.Duration
}

// New returns a bar that writes to w, or nil when enabled is false (stderr
// is not a terminal).
func New(w io.Writer, label string, enabled bool) *Bar {
	if !enabled {
		return nil
	}
	return &Bar{w: w, label: label, start: time.Now(), now: time.Now, delay: time.Second, minStep: 100 * time.Millisecond}
}

// Update reports done out of total units (total <= 0: unknown). It is safe
// for concurrent use.
func (b *Bar) Update(done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if now.Sub(b.start) < b.delay || now.Sub(b.last) < b.minStep {
		return
	}
	b.last = now
	b.shown = true
	if total <= 0 && done <= 0 {
		fmt.Fprintf(b.w, "\r%s (%s)\x1b[K", b.label, now.Sub(b.start).Round(100*time.Millisecond))
		return
	}
	if total > 0 {
		pct := float64(done) / float64(total) * 100
		fmt.Fprintf(b.w, "\r%s %5.1f %% (%s)\x1b[K", b.label, min(pct, 100), now.Sub(b.start).Round(100*time.Millisecond))
		return
	}
	fmt.Fprintf(b.w, "\r%s %d (%s)\x1b[K", b.label, done, now.Sub(b.start).Round(100*time.Millisecond))
}

// Relabel names the next stage of the task (elapsed time keeps counting).
func (b *Bar) Relabel(label string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.label = label
	b.mu.Unlock()
}

// Done erases the line if one was shown.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.shown = false
	}
}
