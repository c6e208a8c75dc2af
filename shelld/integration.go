package shelld

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// integration is how an interactive shell is made to print prompt markers
// (marker.go): files in a private directory that the shell reads at
// start instead of the user's, which they read in turn, so the user's
// login set-up is kept, and which then install hooks gsvfs controls.
type integration struct {
	kind   string   // bash, zsh or sh
	nonce  string   // of this session's markers
	dir    string   // the private directory, removed once the shell runs
	args   []string // the shell's arguments
	env    []string // additions to its environment
	hasC   bool     // the shell reports when a command starts (marker C)
	editor bool     // it echoes a line itself when it reads it
}

// shellKind tells by a shell's name which integration it takes: "bash",
// "zsh", "sh" (dash, busybox sh, ash, ksh, mksh: POSIX shells that read
// $ENV and expand PS1), or "" for one gsvfs cannot follow (fish, tcsh…).
func shellKind(path string) string {
	base := filepath.Base(path)
	if base == "sh" {
		// /bin/sh may be bash, which does not read $ENV when it is
		// started as sh by a login.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			if b := filepath.Base(real); b == "bash" {
				return "bash"
			}
		}
	}
	switch base {
	case "bash", "zsh":
		return base
	case "sh", "dash", "ash", "ksh", "mksh", "ksh93", "busybox":
		return "sh"
	}
	return ""
}

// isBusybox reports whether the shell at path is busybox's ash, whose line
// editor counts every byte of the prompt unless told with \[ \].
func isBusybox(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	return err == nil && filepath.Base(real) == "busybox"
}

// startup is how a session's shell starts: which shell, with what
// environment, and whether it reads its login and rc files.
type startup struct {
	shell string   // the shell's path
	env   []string // its environment: the allowed part of the daemon's, then ctl's
	set   []string // ctl's NAME=VALUE, exported again after the start-up files so they win
	rc    bool     // it reads the login and rc files (not `rc off`)
	path  string   // the daemon's PATH, kept after the login files (keepPath)
}

// keepPath is a line of shell, run after the login files, that appends
// to PATH each entry of the daemon's PATH that the files dropped: a
// session finds the programs the user who started gsvfs finds, as
// tmux's sessions do, where Debian's /etc/profile sets PATH outright (and
// so loses /usr/local/go/bin, ~/go/bin…). The files' own entries stay
// first, so what they choose wins. Empty with rc off: PATH is then the
// daemon's already.
func (su startup) keepPath() string {
	var dirs []string
	for _, dir := range filepath.SplitList(su.path) {
		if dir != "" && !slices.Contains(dirs, shQuote(dir)) {
			dirs = append(dirs, shQuote(dir))
		}
	}
	if !su.rc || len(dirs) == 0 {
		return ""
	}
	return "for __gsvfs_p in " + strings.Join(dirs, " ") + `; do case ":$PATH:" in *":$__gsvfs_p:"*) ;; ` +
		`*) PATH=${PATH:+$PATH:}$__gsvfs_p ;; esac; done; unset __gsvfs_p; export PATH`
}

// envLookup returns the value env gives name last, as a process sees it.
func envLookup(env []string, name string) (value string, ok bool) {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			value, ok = v, true
		}
	}
	return value, ok
}

// afterLogin is what runs after the login files, its lines joined by
// sep: the daemon's PATH kept, then ctl's exports, which so win over both.
func (su startup) afterLogin(sep string) string {
	return strings.Join(slices.DeleteFunc([]string{su.keepPath(), su.exports()},
		func(line string) bool { return line == "" }), sep)
}

// exports is a line of shell that exports su.set, for bash, zsh and
// POSIX sh; empty when there is nothing to export.
func (su startup) exports() string {
	if len(su.set) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("export")
	for _, kv := range su.set {
		name, value, _ := strings.Cut(kv, "=")
		b.WriteString(" " + name + "=" + shQuote(value))
	}
	return b.String()
}

// execArgs are the arguments of the shell that runs command once: a
// login shell (-l) unless rc is off, and for a shell gsvfs knows, the
// daemon's PATH kept and ctl's variables exported in front of the
// command, after the login files.
func (su startup) execArgs(command string) []string {
	kind := shellKind(su.shell)
	if after := su.afterLogin("; "); kind != "" && after != "" {
		command = after + "; " + command
	}
	if su.rc {
		return []string{"-lc", command}
	}
	switch kind {
	case "bash":
		return []string{"--noprofile", "--norc", "-c", command}
	case "zsh":
		return []string{"-f", "-c", command} // /etc/zshenv is still read
	}
	return []string{"-c", command}
}

// plainArgs are the arguments of an interactive shell without the
// integration.
func (su startup) plainArgs() []string {
	if su.rc {
		return []string{"-l"}
	}
	return nil
}

// newIntegration writes the start-up files for the shell su starts (the
// user's ENV or ZDOTDIR in su.env are honoured). It returns nil for a
// shell it cannot follow.
func newIntegration(su startup) (*integration, error) {
	kind := shellKind(su.shell)
	if kind == "" {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "gsvfs-shell-")
	if err != nil {
		return nil, err
	}
	in := &integration{kind: kind, nonce: newNonce(), dir: dir}
	lookup := func(name string) (string, bool) { return envLookup(su.env, name) }
	mark := `\033]6973;` + in.nonce + `;`
	set := su.afterLogin("\n") + "\n"
	var files map[string]string
	switch kind {
	case "bash":
		in.hasC, in.editor = true, true
		files = map[string]string{"bashrc": bashRC(mark, su.rc, set)}
		in.args = []string{"--rcfile", filepath.Join(dir, "bashrc"), "-i"}
	case "zsh":
		in.hasC, in.editor = true, true
		user := "$HOME"
		if zd, ok := lookup("ZDOTDIR"); ok {
			user = shQuote(zd)
		}
		files = zshFiles(mark, user, su.rc, set)
		in.args = []string{"-l", "-i"}
		if !su.rc {
			in.args = []string{"-d", "-l", "-i"} // no global files but /etc/zshenv
		}
	case "sh":
		userEnv, hadEnv := lookup("ENV")
		in.editor = isBusybox(su.shell) // dash has none; ksh's is off by default
		files = map[string]string{"env.sh": shEnv(mark, userEnv, hadEnv && su.rc, in.editor) + set}
		in.args = []string{"-l", "-i"}
		if !su.rc {
			in.args = []string{"-i"} // no profile; $ENV is ours alone
		}
	}
	if kind == "zsh" {
		in.env = []string{"ZDOTDIR=" + dir}
	} else if kind == "sh" {
		in.env = []string{"ENV=" + filepath.Join(dir, "env.sh")}
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return in, nil
}

// remove deletes the start-up files; the shell has read them by its first
// prompt.
func (in *integration) remove() {
	if in != nil && in.dir != "" {
		os.RemoveAll(in.dir)
	}
}

func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// bashRC is the --rcfile of bash. bash -l ignores --rcfile, so the file
// reads what a login shell reads, in its order (unless rc is off), then
// runs set (ctl's exports, which so win), then puts its hook first
// in PROMPT_COMMAND (to see $? of the command) and its markers at the end
// of PS1, PS2 and PS0, again at each prompt if a user's change dropped them.
// The markers are written with prompt escapes (\e, \a), so printing $PS1
// shows text, not a marker.
func bashRC(mark string, rc bool, set string) string {
	m := strings.ReplaceAll(mark, `\033`, `\e`)
	login := ""
	if rc {
		login = `if [ -r /etc/profile ]; then . /etc/profile; fi
for __gsvfs_f in ~/.bash_profile ~/.bash_login ~/.profile; do
	if [ -r "$__gsvfs_f" ]; then . "$__gsvfs_f"; break; fi
done
unset __gsvfs_f
`
	}
	return fmt.Sprintf(`# gsvfs shell integration: the login files, ctl's variables, then prompt markers.
%[3]s%[4]s__gsvfs_n=0
__gsvfs_prompt() {
	local s=$?
	printf '%[1]s%%s;D;%%s;%%s\a' "$$" "$s" "$((++__gsvfs_n))"
	case $PS1 in *'%[2]s'"$$;B"*) ;; *) PS1+='\[%[2]s'"$$"';B\a\]';; esac
	case ${PS2-} in *'%[2]s'"$$;S"*) ;; *) PS2=${PS2-}'\[%[2]s'"$$"';S\a\]';; esac
	case ${PS0-} in *'%[2]s'"$$;C"*) ;; *) PS0=${PS0-}'%[2]s'"$$"';C\a';; esac
	return $s
}
if (( BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1) )); then
	PROMPT_COMMAND=(__gsvfs_prompt ${PROMPT_COMMAND[@]+"${PROMPT_COMMAND[@]}"})
else
	PROMPT_COMMAND="__gsvfs_prompt${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
fi
`, mark, m, login, set)
}

// shEnv is the $ENV file of a POSIX sh: it restores the user's ENV (and
// reads that file), then wraps PS1 in markers: the D marker with $? and a
// prompt count first, B last; S at the end of PS2. The shell expands PS1
// at each prompt, so no process is started for it. The escape bytes are
// put in by printf when the file is read. Busybox's line editor is told
// that the markers take no room (\[ \]); dash would print those.
func shEnv(mark, userEnv string, hadEnv, busybox bool) string {
	open, shut := "", ""
	if busybox {
		open, shut = `\\[`, `\\]`
	}
	restore := "unset ENV\n"
	if hadEnv {
		restore = "ENV=" + shQuote(userEnv) + "\nexport ENV\n" +
			`if [ -r "$ENV" ]; then . "$ENV"; fi` + "\n"
	}
	return fmt.Sprintf(`# gsvfs shell integration: the user's $ENV, then prompt markers.
%[1]s__gsvfs_n=0
__gsvfs_m=$(printf '%[2]s')$$
__gsvfs_a=$(printf '\007')
PS1="%[3]s${__gsvfs_m};D;\$?;\$((__gsvfs_n=__gsvfs_n+1))${__gsvfs_a}%[4]s${PS1-\$ }%[3]s${__gsvfs_m};B${__gsvfs_a}%[4]s"
PS2="${PS2-> }%[3]s${__gsvfs_m};S${__gsvfs_a}%[4]s"
unset __gsvfs_m __gsvfs_a
`, restore, mark, open, shut)
}

// zshFiles are the start-up files of a private ZDOTDIR. Each reads the
// user's own file of the same name from the user's ZDOTDIR (which the
// user's .zshenv may change), the .zshrc then installs the hooks, and the
// .zlogin, read last, gives ZDOTDIR back to the user, so a zsh started
// inside reads only the user's files. PROMPT_SP, which zsh prints before
// precmd, is done by the hook after the D marker instead, so it is not
// counted in a command's output.
//
// With rc off the user's files are not read. set (ctl's exports) runs at
// the end of .zlogin, the last file read, so its values win.
func zshFiles(mark, userZdotdir string, rc bool, set string) map[string]string {
	read := func(name string) string {
		if !rc {
			return ""
		}
		return fmt.Sprintf(`ZDOTDIR=$__gsvfs_uzd
if [[ -r $ZDOTDIR/%[1]s ]]; then . $ZDOTDIR/%[1]s; fi
__gsvfs_uzd=$ZDOTDIR
ZDOTDIR=$__gsvfs_zd
`, name)
	}
	m := strings.ReplaceAll(mark, `\033`, `\e`)
	hooks := fmt.Sprintf(`__gsvfs_m=$'%[1]s'$$
typeset -gi __gsvfs_n=0 __gsvfs_sp=0
if [[ -o prompt_sp ]]; then __gsvfs_sp=1; unsetopt prompt_sp; fi
__gsvfs_precmd() {
	local s=$?
	print -rn -- "$__gsvfs_m;D;$s;$((++__gsvfs_n))"$'\a'
	if (( __gsvfs_sp )) && [[ -o prompt_cr ]]; then
		local mark=${PROMPT_EOL_MARK-'%%B%%S%%#%%s%%b'}
		local w=${#${(%%)${mark//\%%[BbSsUu]/}}}
		print -rn -- "${(%%)mark}${(l:COLUMNS-w:: :)}"$'\r'"${(l:w:: :)}"$'\r'
	fi
	__gsvfs_ps
	return s
}
__gsvfs_ps() {
	[[ $PS1 == *"$__gsvfs_m;B"* ]] || PS1+="%%{$__gsvfs_m;B"$'\a'"%%}"
	[[ $PS2 == *"$__gsvfs_m;S"* ]] || PS2+="%%{$__gsvfs_m;S"$'\a'"%%}"
}
__gsvfs_preexec() { print -rn -- "$__gsvfs_m;C"$'\a'; }
precmd_functions=(__gsvfs_precmd $precmd_functions __gsvfs_ps)
preexec_functions+=(__gsvfs_preexec)
`, m)
	return map[string]string{
		".zshenv":   "# gsvfs shell integration\n__gsvfs_zd=$ZDOTDIR\n__gsvfs_uzd=" + userZdotdir + "\n" + read(".zshenv"),
		".zprofile": "# gsvfs shell integration\n" + read(".zprofile"),
		".zshrc":    "# gsvfs shell integration\n" + read(".zshrc") + hooks,
		".zlogin": "# gsvfs shell integration\n" + read(".zlogin") + set +
			"ZDOTDIR=$__gsvfs_uzd\nunset __gsvfs_zd __gsvfs_uzd\n",
	}
}
