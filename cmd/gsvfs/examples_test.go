//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's shell examples and the EXAMPLES sections of the manual
// pages are run as written, on a fresh tree, as root and as an ordinary
// user. Each example block is marked in its source, on the line before
// it, so extraction never guesses:
//
//	<!-- example: KIND -->          before a ```sh block of the README
//	.\" example: KIND               before an .EX of a man page's EXAMPLES
//
// KIND is "run" (as root and as an ordinary user), "root", "user", or
// "skip: REASON" for one that cannot run here (a second machine, a
// terminal, a command that never ends). An unmarked block fails the test.
// In a man page a command is a line with a "$ " or "# " prompt and bold
// text (and its continuation lines); the other lines are its output, and a command whose
// first output line starts with "bash: " is shown failing, so it must fail.

// exampleDoc is a file with examples and what its examples assume.
type exampleDoc struct {
	file    string // relative to the repository's root
	man     bool   // a man page (else markdown)
	mounted bool   // the examples assume the tree is mounted on ~/gsv
	dir     string // where each example starts (~ expands)
}

var exampleDocs = []exampleDoc{
	{file: "README.md", mounted: true, dir: "."}, // "." holds bin/gsvfs, as after `make run`
	{file: "docs/man/gsvfs-mount.1", man: true, dir: "~"},
	{file: "docs/man/gsvfs-proc.7", man: true, mounted: true, dir: "~/gsv/proc"},
	{file: "docs/man/gsvfs-ps.1", man: true, mounted: true, dir: "~"},
	{file: "docs/man/gsvfs-serve.1", man: true, dir: "~"},
	{file: "docs/man/gsvfs-attach.1", man: true, dir: "~"},
}

// example is one marked block.
type example struct {
	file string
	line int    // of the block's first line
	kind string // run, root, user or skip
	why  string // a skip's reason
	cmds []exampleCmd
}

// exampleCmd is one command of a block.
type exampleCmd struct {
	line  int
	text  string
	fails bool     // the example shows it failing
	want  []string // "status" and "exitCode" pairs its shown output has
}

// shownPair finds the JSON pairs of a status that an example's output
// shows, which the real output must have too.
var shownPair = regexp.MustCompile(`"(status|exitCode)":("[a-z]+"|[0-9]+)`)

// TestExamples runs every runnable example of exampleDocs, a file's in
// order in one shell (so later examples see what earlier ones made), as
// root and as an ordinary user, each file on a fresh home and state
// directory.
func TestExamples(t *testing.T) {
	var all []example
	for _, doc := range exampleDocs {
		text, err := os.ReadFile(filepath.Join("..", "..", doc.file))
		if err != nil {
			t.Fatal(err)
		}
		exs, err := extractExamples(doc, string(text))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, exs...)
	}
	if pages := manPagesWithExamples(t); len(pages) != len(exampleDocs)-1 {
		t.Fatalf("man pages with EXAMPLES: %v; exampleDocs lists %d: add the new ones", pages, len(exampleDocs)-1)
	}
	for _, ex := range all {
		if ex.kind == "skip" {
			t.Logf("not run: %s:%d: %s", ex.file, ex.line, ex.why)
		}
	}
	for _, who := range []string{"root", "user"} {
		t.Run(who, func(t *testing.T) {
			for _, doc := range exampleDocs {
				if script := exampleScript(doc, all, who); script != "" {
					t.Run(filepath.Base(doc.file), func(t *testing.T) { newExampleEnv(t, who).run(t, script) })
				}
			}
		})
	}
}

// manPagesWithExamples are the manual pages that have an EXAMPLES section.
func manPagesWithExamples(t *testing.T) []string {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "man", "*.[1-8]"))
	if err != nil {
		t.Fatal(err)
	}
	var with []string
	for _, p := range pages {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), "\n.SH EXAMPLES\n") {
			with = append(with, filepath.Base(p))
		}
	}
	return with
}

// extractExamples returns the marked blocks of doc's text, or an error
// naming a block that has no mark.
func extractExamples(doc exampleDoc, text string) ([]example, error) {
	lines := strings.Split(text, "\n")
	var exs []example
	inExamples := !doc.man // a man page's examples are in its EXAMPLES section
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if doc.man && strings.HasPrefix(line, ".SH ") {
			inExamples = line == ".SH EXAMPLES"
		}
		open := doc.man && line == ".EX" || !doc.man && line == "```sh"
		if !inExamples || !open {
			continue
		}
		ex := example{file: doc.file, line: i + 2}
		mark, ok := exampleMark(doc, lines, i)
		if !ok {
			return nil, fmt.Errorf("%s:%d: an example with no mark on the line before it (see examples_test.go)", doc.file, i+1)
		}
		ex.kind, ex.why, _ = strings.Cut(mark, ":")
		ex.why = strings.TrimSpace(ex.why)
		if ex.kind == "skip" && ex.why == "" || !strings.Contains(" run root user skip ", " "+ex.kind+" ") {
			return nil, fmt.Errorf("%s:%d: bad mark %q", doc.file, i, mark)
		}
		end := i + 1
		for end < len(lines) && lines[end] != ".EE" && lines[end] != "```" {
			end++
		}
		ex.cmds = blockCommands(doc.man, lines[i+1:end], i+2)
		exs = append(exs, ex)
		i = end
	}
	return exs, nil
}

// exampleMark is the mark on the line before line i, if there is one.
func exampleMark(doc exampleDoc, lines []string, i int) (string, bool) {
	if i == 0 {
		return "", false
	}
	prev := strings.TrimSpace(lines[i-1])
	if doc.man {
		mark, ok := strings.CutPrefix(prev, `.\" example: `)
		return strings.TrimSpace(mark), ok
	}
	mark, ok := strings.CutPrefix(prev, "<!-- example: ")
	mark, closed := strings.CutSuffix(mark, "-->")
	return strings.TrimSpace(mark), ok && closed
}

// blockCommands are the commands of a block whose first line is number
// first: every line of a markdown block, the prompted lines of a man
// page's, each with the lines it continues on (after \ or |).
func blockCommands(man bool, block []string, first int) []exampleCmd {
	var cmds []exampleCmd
	cont := false
	for i, raw := range block {
		line := raw
		if man {
			line = unroff(raw)
		}
		switch {
		case cont:
			cmds[len(cmds)-1].text += "\n" + line
		case !man && strings.TrimSpace(line) != "":
			// A comment after the command shows what it prints.
			_, shown, _ := strings.Cut(line, " # ")
			cmds = append(cmds, exampleCmd{line: first + i, text: line, want: shownPair.FindAllString(shown, -1)})
		case strings.HasPrefix(raw, `$ \fB`) || strings.HasPrefix(raw, `# \fB`):
			cmds = append(cmds, exampleCmd{line: first + i, text: line[2:]})
		case len(cmds) > 0 && strings.HasPrefix(line, "bash: ") && cmds[len(cmds)-1].line == first+i-1:
			cmds[len(cmds)-1].fails = true
		case len(cmds) > 0:
			last := &cmds[len(cmds)-1]
			last.want = append(last.want, shownPair.FindAllString(line, -1)...)
		}
		trimmed := strings.TrimSpace(line)
		cont = len(cmds) > 0 && (strings.HasSuffix(trimmed, `\`) || strings.HasSuffix(trimmed, "|")) &&
			(!man || cont || cmds[len(cmds)-1].line == first+i)
	}
	return cmds
}

// unroff is the text a man page's example line shows.
func unroff(s string) string {
	r := strings.NewReplacer(`\fB`, "", `\fP`, "", `\fI`, "", `\fR`, "", `\-`, "-",
		`\(ti`, "~", `\(aq`, "'", `\(dq`, `"`, `\e`, `\`, `\&`, "", `\|`, "")
	return r.Replace(s)
}

// exampleScript is the shell script of doc's examples that who runs, or
// "" if it runs none: before each block the tree is mounted if the doc
// assumes it and the shell goes to the doc's directory; each command's
// exit status is checked against the example's.
func exampleScript(doc exampleDoc, all []example, who string) string {
	var b strings.Builder
	for _, ex := range all {
		if ex.file != doc.file || ex.kind == "skip" || ex.kind != "run" && ex.kind != who {
			continue
		}
		if doc.mounted {
			b.WriteString("mountpoint -q ~/gsv || { mkdir -p ~/gsv && gsvfs mount ~/gsv; } || exit 1\n")
		}
		fmt.Fprintf(&b, "cd %s || exit 1\n", doc.dir)
		for _, c := range ex.cmds {
			where := fmt.Sprintf("%s:%d", ex.file, c.line)
			switch {
			case c.fails:
				fmt.Fprintf(&b, "%s\nif [ $? -eq 0 ]; then echo '%s: succeeded; the example shows it failing'; exit 1; fi\n", c.text, where)
			case len(c.want) > 0:
				// Its output must show the status the example shows.
				fmt.Fprintf(&b, "__o=$(%s\n)\n__s=$?; printf '%%s\\n' \"$__o\"\n", c.text)
				fmt.Fprintf(&b, "if [ $__s -ne 0 ]; then echo \"%s: exit status $__s\"; exit 1; fi\n", where)
				for _, w := range c.want {
					fmt.Fprintf(&b, "case $__o in *%s*) ;; *) echo '%s: the output lacks %s'; exit 1;; esac\n", shQuote(w), where, w)
				}
			default:
				fmt.Fprintf(&b, "%s\n__s=$?; if [ $__s -ne 0 ]; then echo \"%s: exit status $__s\"; exit 1; fi\n", c.text, where)
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return b.String()
}

// exampleEnv is a fresh home, with gsvfs on PATH and in ./bin, for root
// or for the ordinary user smOther.
type exampleEnv struct {
	who, base, home string
	env             []string
}

func newExampleEnv(t *testing.T, who string) *exampleEnv {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root (to run the examples as root and as another user)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the examples run go: %v", err)
	}
	e := &exampleEnv{who: who}
	var bin string
	if who == "user" {
		openDevFuseToAll(t)
		e.base, e.home, bin = ordinaryUser(t)
	} else {
		e.base = t.TempDir()
		e.home, bin = filepath.Join(e.base, "home"), filepath.Join(e.base, "gsvfs")
		if err := os.Mkdir(e.home, 0o700); err != nil {
			t.Fatal(err)
		}
		copyExecutable(t, binary, bin)
	}
	// ./bin/gsvfs as `make run` leaves it, and gsvfs as `make install` does.
	binDir := filepath.Join(e.base, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyExecutable(t, bin, filepath.Join(binDir, "gsvfs"))
	name := "root"
	if who == "user" {
		u, err := user.LookupId(fmt.Sprint(smOther))
		if err != nil {
			t.Fatal(err)
		}
		name = u.Username
	}
	e.env = []string{"HOME=" + e.home, "USER=" + name, "LOGNAME=" + name, "SHELL=/bin/bash", "LANG=C.UTF-8",
		"PATH=" + binDir + ":" + filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
	return e
}

// run runs script in bash as e.who and fails with its output when it
// fails; whatever it left mounted under the home is unmounted.
func (e *exampleEnv) run(t *testing.T, script string) {
	if e.who == "root" {
		// The examples use root's default state directory, the whole
		// machine's: give this shell (and the daemons it starts) a
		// private one, in a mount namespace of its own.
		script = "mkdir -p /var/lib/gsvfs /run/gsvfs && mount -t tmpfs -o mode=0755 gsvfs-examples /var/lib/gsvfs &&" +
			" mount -t tmpfs -o mode=0700 gsvfs-examples /run/gsvfs || exit 1\n" + script
	}
	script += "cd / && if mountpoint -q ~/gsv; then gsvfs umount ~/gsv; fi\n"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "-c", script)
	cmd.Dir, cmd.Env = e.base, e.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if e.who == "user" {
		cmd.SysProcAttr.Credential = userCred()
	} else {
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	syscall.Unmount(filepath.Join(e.home, "gsv"), syscall.MNT_DETACH) // a failed script's mount
	if err != nil {
		t.Fatalf("the examples failed as %s: %v\n%s\nthe script:\n%s", e.who, err, out, script)
	}
	t.Logf("as %s:\n%s", e.who, out)
}

// shQuote quotes s for the shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The extraction of examples: marks, prompts, continuations, failing
// commands and shown statuses, and an unmarked block refused.
func TestExtractExamples(t *testing.T) {
	readme := exampleDoc{file: "R"}
	man := exampleDoc{file: "M", man: true}
	tests := []struct {
		name string
		doc  exampleDoc
		text string
		want string // the examples, one "KIND[why] cmd|cmd" a line; or "error"
	}{
		{"readme", readme, "<!-- example: run -->\n```sh\nls ~/gsv\n\ncat w   # \"status\":\"waiting\"\n```\n",
			`run[] ls ~/gsv|cat w   # "status":"waiting"{"status":"waiting"}`},
		{"readme unmarked", readme, "text\n```sh\nls\n```\n", "error"},
		{"readme plain block", readme, "```\nnot shell\n```\n", ""},
		{"man", man, ".SH EXAMPLES\n.\\\" example: user\n.EX\n$ \\fBcat \\(ti/x \\e\\fP\n  \\fB| wc\\fP\nout\n# \\fBecho \\(aqa\\(aq > q\\fP\nbash: echo: write error\n.EE\n",
			"user[] cat ~/x \\\n  | wc|echo 'a' > q(fails)"},
		{"man output with a hash", man, ".SH EXAMPLES\n.\\\" example: skip: a terminal\n.EX\n$ \\fBcat s\\fP\n# not a command\n{\"exitCode\":2}\n.EE\n",
			`skip[a terminal] cat s{"exitCode":2}`},
		{"man unmarked", man, ".SH EXAMPLES\n.EX\n$ \\fBls\\fP\n.EE\n", "error"},
		{"man outside EXAMPLES", man, ".SH DESCRIPTION\n.EX\n$ \\fBls\\fP\n.EE\n", ""},
		{"skip without a reason", man, ".SH EXAMPLES\n.\\\" example: skip\n.EX\n.EE\n", "error"},
	}
	for _, tt := range tests {
		exs, err := extractExamples(tt.doc, tt.text)
		var lines []string
		for _, ex := range exs {
			var cmds []string
			for _, c := range ex.cmds {
				s := c.text
				if len(c.want) > 0 {
					s += "{" + strings.Join(c.want, ",") + "}"
				}
				if c.fails {
					s += "(fails)"
				}
				cmds = append(cmds, s)
			}
			lines = append(lines, ex.kind+"["+ex.why+"] "+strings.Join(cmds, "|"))
		}
		got := strings.Join(lines, "\n")
		if err != nil {
			got = "error"
		}
		if got != tt.want {
			t.Errorf("%s: got %q, want %q (err %v)", tt.name, got, tt.want, err)
		}
	}
}
