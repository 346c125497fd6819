// Package cli holds traceaudit's cobra commands. Commands only parse flags
// into an options struct and call a run function; the work lives in the
// library packages. Errors map to exit codes in one place, Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/progress"
	"github.com/traceaudit/traceaudit/internal/version"
	"github.com/traceaudit/traceaudit/timeline"
)

// Exit codes (design.md).
const (
	ExitOK       = 0
	ExitFindings = 1
	ExitError    = 2
	// ExitInterrupted: Ctrl-C or SIGTERM stopped the command; nothing
	// was written (128 + SIGINT, as shells report).
	ExitInterrupted = 130
)

// IO is where a command reads and writes.
type IO struct {
	// In is standard input, read for the file name "-" (nil: none).
	In       io.Reader
	Out, Err io.Writer
	// InTTY says whether In is a terminal (then "-" is refused).
	InTTY bool
	// ErrTTY says whether Err is a terminal (progress is shown only then).
	ErrTTY bool
	// Color says whether text on Out may carry ANSI colours: Out is a
	// terminal and NO_COLOR is unset or empty (no-color.org).
	Color bool
	// Width is the terminal's width in columns when Out is one (0: not a
	// terminal; text then wraps at 100 columns).
	Width int
	// Args is the command line after the program name, quoted in reports.
	Args []string
	// OneShot says that the process exits after the command (the binary,
	// not a test): process-wide settings such as the memory limit of a run
	// over several traces may be left in place.
	OneShot bool
	// Ctx is cancelled when the user interrupts the command (Run sets it
	// from SIGINT and SIGTERM where it is nil; nil: never).
	Ctx context.Context
}

// context is the command's context: Ctx, or one never cancelled.
func (ios *IO) context() context.Context {
	if ios.Ctx == nil {
		return context.Background()
	}
	return ios.Ctx
}

// errInterrupted is the error of a command the user interrupted.
var errInterrupted = errors.New("interrupted")

// interrupted says whether ctx was cancelled, as the error to return.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

// usageError is bad usage: a wrong flag value or argument count. Main
// points the user to the command's help after the message.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// FailError means the run worked and found findings at or above --fail-on.
// Its message is printed on stderr as a last line.
type FailError struct{ Msg string }

func (e *FailError) Error() string { return e.Msg }

// Main runs the command line and returns the process exit code.
func Main() int {
	ios := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		InTTY:   term.IsTerminal(int(os.Stdin.Fd())),
		ErrTTY:  term.IsTerminal(int(os.Stderr.Fd())),
		Color:   colorAllowed(term.IsTerminal(int(os.Stdout.Fd())), os.Getenv("NO_COLOR"), os.Getenv("TERM")),
		OneShot: true, Width: termWidth(int(os.Stdout.Fd()))}
	return Run(os.Args[1:], ios)
}

// colorAllowed says whether to colour stdout: a terminal that is not
// "dumb", and NO_COLOR unset or empty.
func colorAllowed(tty bool, noColor, termName string) bool {
	return tty && noColor == "" && termName != "dumb"
}

// Run executes args with ios and returns the exit code. With
// TRACEAUDIT_CPUPROFILE=FILE set, it writes a CPU profile of the run there,
// and with TRACEAUDIT_MEMPROFILE=FILE a heap profile of every allocation
// (for `go tool pprof`, -sample_index=alloc_space).
func Run(args []string, ios *IO) int {
	if path := os.Getenv("TRACEAUDIT_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
		}
	}
	if path := os.Getenv("TRACEAUDIT_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			runtime.GC() // the profile covers the allocations up to the last collection
			if f, err := os.Create(path); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	ios.Args = args
	if ios.Ctx == nil {
		// The first Ctrl-C (or SIGTERM) stops the command cleanly: reading
		// stops, a report folder being written is removed, exit 130. A
		// second one kills the process as usual.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		go func() { <-ctx.Done(); stop() }()
		ios.Ctx = ctx
	}
	root := NewRoot(ios)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	return exitCode(err, cmd, ios)
}

// exitCode maps a command's error to the exit code and prints it as one
// line: findings at --fail-on exit 1; bad usage (followed by where to read
// the usage), bad input and failed runs exit 2.
func exitCode(err error, cmd *cobra.Command, ios *IO) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, errInterrupted) || errors.Is(err, context.Canceled) {
		fmt.Fprintln(ios.Err, "traceaudit: interrupted")
		return ExitInterrupted
	}
	var fail *FailError
	if errors.As(err, &fail) {
		if fail.Msg != "" {
			fmt.Fprintln(ios.Err, "traceaudit: "+fail.Msg)
		}
		return ExitFindings
	}
	msg := oneLine(err.Error())
	// Errors of the root command itself (an unknown command) are usage
	// errors too.
	if cmd != nil && (errors.As(err, new(usageError)) || !cmd.HasParent()) {
		msg += " (see " + cmd.CommandPath() + " --help)"
	}
	fmt.Fprintln(ios.Err, "traceaudit: "+msg)
	return ExitError
}

// oneLine keeps an error message on a single line.
func oneLine(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}

// NewRoot builds the command tree.
func NewRoot(ios *IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "traceaudit",
		Short: "Find out why a GPU training job starves, and prove the fix",
		Long: `traceaudit reads an Nsight Systems SQLite export (nsys export --type sqlite)
or a PyTorch profiler Chrome trace (.json, .json.gz), names what starves the GPU
with the time each cause costs per step, and replays the fixes on a GPU.`,
		Example: `  traceaudit stats run.sqlite
  traceaudit analyze --out audit/ run.sqlite
  traceaudit diff --fail-on warning before.json.gz after.json.gz
  traceaudit replay --dry-run run.sqlite
  source <(traceaudit completion bash)`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.Version = version.Get().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(NewCmdStats(ios, nil), NewCmdAnalyze(ios, nil), NewCmdDiff(ios, nil), NewCmdReplay(ios, nil), NewCmdJob(ios, nil), NewCmdVersion(ios, nil))
	return root
}

// exactArgs is cobra.ExactArgs with errors that map to exit code 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: want %d file argument(s), got %d", cmd.Name(), n, len(args))
		}
		return nil
	}
}

// Stdin is the file name that reads standard input.
const Stdin = "-"

// load reads one input file ("-": standard input), showing progress on a
// terminal and passing warnings, which name the file, to stderr.
//
// A trace without any kernel or copy is unusable (ingest.Usable): the one
// error line says what it holds, and its warnings are not shown.
func load(ios *IO, path string) (*timeline.Timeline, error) {
	return loadWith(ios, path, ingest.Options{})
}

// loadWith is load with what to read beyond the events (opts.Shapes); the
// rest of opts is load's own.
func loadWith(ios *IO, path string, want ingest.Options) (*timeline.Timeline, error) {
	bar := progress.New(ios.Err, "reading "+path, ios.ErrTTY)
	defer bar.Done()
	// Ctrl-C stops reading at once, and an nsys export cleanly (its
	// temporary files removed).
	ctx := ios.context()
	if err := interrupted(ctx); err != nil {
		return nil, err
	}
	var warnings []string
	opts := ingest.Options{
		Progress: bar.Update,
		Stage:    bar.Relabel,
		Context:  ctx,
		Warn:     func(msg string) { warnings = append(warnings, msg) },
		Note: func(msg string) {
			bar.Done()
			fmt.Fprintln(ios.Err, "traceaudit: "+oneLine(msg))
		},
		Shapes: want.Shapes,
	}
	if path == Stdin && (ios.In == nil || ios.InTTY) {
		return nil, usagef("-: standard input is a terminal: pipe a trace in (traceaudit analyze - < run.json)")
	}
	type read struct {
		tl  *timeline.Timeline
		err error
	}
	done := make(chan read, 1)
	go func() {
		var r read
		if path == Stdin {
			r.tl, r.err = ingest.OpenReader("stdin", ios.In, opts)
		} else {
			r.tl, r.err = ingest.Open(path, opts)
		}
		if r.err == nil {
			r.err = cutShort(ingest.Usable(r.tl), warnings)
		}
		done <- r
	}()
	var r read
	select {
	case r = <-done:
	case <-ctx.Done():
		// An nsys export stops on ctx and removes its files: give it a
		// moment. A parse still running ends with the process.
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		return nil, errInterrupted
	}
	tl, err := r.tl, r.err
	if err != nil {
		return nil, err
	}
	bar.Done()
	for _, msg := range warnings {
		fmt.Fprintln(ios.Err, "traceaudit: warning: "+oneLine(msg))
	}
	return tl, nil
}

// cutShort adds to an unusable trace's error that the file was cut short,
// where a warning says so: what it lacks may lie past the cut.
func cutShort(err error, warnings []string) error {
	var ie *ingest.Error
	if err == nil || !errors.As(err, &ie) {
		return err
	}
	for _, w := range warnings {
		if strings.Contains(w, "truncated") {
			ie.Err = fmt.Errorf("%w, and it is %s", ie.Err, strings.TrimPrefix(oneLine(w), ie.Path+": "))
			ie.Hint = "what it lacks may lie past the cut: copy or download the file again, whole"
			break
		}
	}
	return err
}

// checkStdin refuses reading standard input more than once.
func checkStdin(files ...string) error {
	n := 0
	for _, f := range files {
		if f == Stdin {
			n++
		}
	}
	if n > 1 {
		return usagef("-: standard input can be read once: give at most one \"-\"")
	}
	return nil
}

// checkFormat validates a --format value.
func checkFormat(got string, allowed ...string) error {
	for _, a := range allowed {
		if got == a {
			return nil
		}
	}
	return usagef("--format %q: want one of %v", got, allowed)
}

// termWidth is the width of terminal fd, within 60 to 200 columns, or 0
// when fd is not a terminal.
func termWidth(fd int) int {
	if !term.IsTerminal(fd) {
		return 0
	}
	w, _, err := term.GetSize(fd)
	if err != nil || w <= 0 {
		return 0
	}
	return min(max(w, 60), 200)
}
