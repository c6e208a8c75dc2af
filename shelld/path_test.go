package shelld

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A login profile that sets PATH outright (Debian's /etc/profile does)
// drops none of the daemon's PATH: the entries it lost come back after the
// profile's own, in exec and in an interactive shell, for every shell gsvfs
// starts; `env PATH=` still wins whole, and with rc off PATH is the daemon's.
func TestSessionKeepsDaemonPath(t *testing.T) {
	home, tools := t.TempDir(), t.TempDir()
	// The profile's reset, in every file a login shell of these reads.
	reset := "PATH=/usr/bin:/bin; export PATH\n"
	for _, name := range []string{".profile", ".bash_profile", ".zprofile"} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(reset), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	probe := filepath.Join(tools, "gsvfs-probe")
	if err := os.WriteFile(probe, []byte("#!/bin/sh\necho probe-found\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("PATH", tools+":/usr/bin:/bin")
	keep := "/usr/bin:/bin:" + tools
	tests := []struct {
		shell, mode string
		ctl         []string // env / rc lines given first
		want        string   // PATH the command sees
	}{
		{"/bin/bash", "exec", nil, keep},
		{"/bin/dash", "exec", nil, keep},
		{"/bin/zsh", "exec", nil, keep},
		{"/bin/bash", "shell", nil, keep},
		{"/bin/dash", "shell", nil, keep},
		{"/bin/zsh", "shell", nil, keep},
		{"/bin/bash", "exec", []string{"env PATH=/bin"}, "/bin"},
		{"/bin/bash", "exec", []string{"rc off"}, tools + ":/usr/bin:/bin"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.shell)+"-"+tt.mode+"-"+strings.Join(tt.ctl, ","), func(t *testing.T) {
			if _, err := exec.LookPath(tt.shell); err != nil {
				t.Skipf("SKIPPED: %s is not installed", tt.shell)
			}
			s := create(t, newManager(t, Config{Shell: tt.shell}))
			for _, line := range tt.ctl {
				var err error
				if v, ok := strings.CutPrefix(line, "env "); ok {
					err = s.SetEnv(v)
				} else {
					err = s.SetRC(false)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			line := `echo "path=[$PATH]"; command -v gsvfs-probe >/dev/null && gsvfs-probe`
			if tt.mode == "exec" {
				if err := s.Exec(line); err != nil {
					t.Fatal(err)
				}
				wait(t, s)
			} else {
				if err := s.StartShell(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Write([]byte(line + "; echo end-of-\"\"probe\n")); err != nil {
					t.Fatal(err)
				}
				waitOutput(t, s, "end-of-probe\r\n")
			}
			out := output(s)
			if got, want := pathSeen(out), tt.want; got != want {
				t.Errorf("PATH in the session = %q, want %q\noutput:\n%s", got, want, out)
			}
			if tt.want != "/bin" && !strings.Contains(out, "probe-found") {
				t.Errorf("the daemon's program was not found:\n%s", out)
			}
		})
	}
}

// pathSeen is the last "path=[…]" the probe printed (an interactive
// shell also echoes the line it reads).
func pathSeen(out string) string {
	i := strings.LastIndex(out, "path=[")
	if i < 0 {
		return ""
	}
	v, _, _ := strings.Cut(out[i+len("path=["):], "]")
	return v
}
