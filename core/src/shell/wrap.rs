//! What the first words of a simple command run: leading assignments and reserved words are
//! skipped, a wrapper (`env`, `sudo`, `xargs`, `command`, `exec`) runs the rest, a shell runs
//! a script (`bash -c '...'`, or its stdin), and `git` is judged.

use serde::Serialize;

use super::args::{Spec, parse};
use super::lex::{self, Word};
use super::{Work, mentions_git};

/// A program or builtin that runs the command after its own options, as the record names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wrapper {
    Env,
    Sudo,
    Xargs,
    Command,
    Exec,
    Eval,
    Bash,
    Sh,
    Zsh,
    Dash,
    Ksh,
}

impl Wrapper {
    /// Every wrapper, in declaration order.
    pub const ALL: [Wrapper; 11] = [
        Wrapper::Env,
        Wrapper::Sudo,
        Wrapper::Xargs,
        Wrapper::Command,
        Wrapper::Exec,
        Wrapper::Eval,
        Wrapper::Bash,
        Wrapper::Sh,
        Wrapper::Zsh,
        Wrapper::Dash,
        Wrapper::Ksh,
    ];

    /// The wrapper's name, as the record shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Wrapper::Env => "env",
            Wrapper::Sudo => "sudo",
            Wrapper::Xargs => "xargs",
            Wrapper::Command => "command",
            Wrapper::Exec => "exec",
            Wrapper::Eval => "eval",
            Wrapper::Bash => "bash",
            Wrapper::Sh => "sh",
            Wrapper::Zsh => "zsh",
            Wrapper::Dash => "dash",
            Wrapper::Ksh => "ksh",
        }
    }
}

/// What a simple command runs, once its leading words are read.
#[derive(Debug)]
pub enum Runs<'w> {
    /// `git` with these arguments.
    Git(&'w [Word]),
    /// A wrapper, and the command it runs after its options; `xargs` adds arguments the
    /// command does not show (`unread_tail`).
    Wrapped {
        wrapper: Wrapper,
        command: Vec<Word>,
        unread_tail: bool,
    },
    /// A shell running this script (`-c`, or `eval`'s words).
    Script(Wrapper, String),
    /// A shell reading its script from stdin.
    Stdin(Wrapper),
    /// Anything else: nothing on the deny list.
    Other,
}

/// Words a simple command may start with before the program: reserved words that only group
/// or time commands.
const RESERVED: [&str; 13] = [
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time",
];

/// Whether `word` assigns a variable (`NAME=value`, `NAME+=value`) rather than naming a
/// program.
fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The program a word names: its last path part (`/usr/bin/git` is `git`). A word the shell
/// fills in is unknown, unless it mentions Git (`$(which git)`), which is judged as Git.
fn program(word: &Word) -> &str {
    if word.dynamic {
        return if mentions_git(&word.text) { "git" } else { "" };
    }
    word.text.rsplit('/').next().unwrap_or_default()
}

/// What `words` (one simple command's, or what a wrapper runs) run.
pub fn runs<'w>(words: &'w [Word], work: &mut Work) -> Runs<'w> {
    let mut skip = 0;
    while let Some(word) = words.get(skip) {
        let time_flag = word.text == "-p" && skip > 0 && words[skip - 1].text == "time";
        if !(RESERVED.contains(&word.text.as_str()) || is_assignment(word) || time_flag) {
            break;
        }
        skip += 1;
    }
    let Some((first, args)) = words[skip..].split_first() else {
        return Runs::Other;
    };
    let name = program(first);
    if name.eq_ignore_ascii_case("git") {
        return Runs::Git(args);
    }
    match name {
        "env" => env(args, work),
        "sudo" => wrapped(Wrapper::Sudo, &SUDO, args, b"el"),
        "xargs" => wrapped(Wrapper::Xargs, &XARGS, args, &[]),
        "command" => wrapped(Wrapper::Command, &COMMAND, args, b"vV"),
        "exec" => wrapped(Wrapper::Exec, &EXEC, args, &[]),
        "eval" => Runs::Script(
            Wrapper::Eval,
            args.iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "bash" => shell(Wrapper::Bash, args),
        "sh" => shell(Wrapper::Sh, args),
        "zsh" => shell(Wrapper::Zsh, args),
        "dash" => shell(Wrapper::Dash, args),
        "ksh" => shell(Wrapper::Ksh, args),
        _ => Runs::Other,
    }
}

const SUDO: Spec = Spec::posix(
    b"CDgpRrTtUu",
    &[
        "chdir",
        "close-from",
        "group",
        "host",
        "prompt",
        "chroot",
        "role",
        "command-timeout",
        "type",
        "other-user",
        "user",
    ],
);

/// GNU and BSD xargs' options that need a value; `-i`, `-e` and `-l` take one only attached.
const XARGS: Spec = Spec::posix(
    b"aEdILnPs",
    &[
        "arg-file",
        "delimiter",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
);

const COMMAND: Spec = Spec::posix(b"", &[]);

const EXEC: Spec = Spec::posix(b"a", &[]);

const ENV: Spec = Spec::posix(b"uCS", &["unset", "chdir", "split-string"]);

/// The shells' options that need a value: `-o name`, `-O name` (and their `+` forms), and
/// bash's `--rcfile file`.
const SHELL: Spec = Spec {
    plus: true,
    ..Spec::posix(b"oO", &["rcfile", "init-file"])
};

/// A wrapper's options read by `spec`, and the command after them. It runs nothing when no
/// command follows, or when it was given one of the `lookups` flags (`command -v git` only
/// looks `git` up; `sudo -l` lists, `sudo -e` edits).
fn wrapped<'w>(wrapper: Wrapper, spec: &Spec, args: &'w [Word], lookups: &[u8]) -> Runs<'w> {
    let parsed = parse(args, spec);
    if parsed.operands.is_empty() || lookups.iter().any(|flag| parsed.short(*flag)) {
        return Runs::Other;
    }
    Runs::Wrapped {
        wrapper,
        command: parsed.operands.into_iter().cloned().collect(),
        unread_tail: wrapper == Wrapper::Xargs,
    }
}

/// `env`: its options, where `-S 'words'` splits one word into several (read here as shell
/// words), then the command.
fn env<'w>(args: &'w [Word], work: &mut Work) -> Runs<'w> {
    let parsed = parse(args, &ENV);
    let mut command: Vec<Word> = Vec::new();
    if let Some(split) = parsed.value(b'S', "split-string") {
        match lex::commands(split, work) {
            Ok(read) => command.extend(read.into_iter().flat_map(|c| c.words)),
            // Judged as a script instead, which denies what it cannot read if it mentions Git.
            Err(_) => return Runs::Script(Wrapper::Env, split.to_owned()),
        }
    }
    command.extend(parsed.operands.iter().map(|w| (*w).clone()));
    if command.is_empty() {
        return Runs::Other;
    }
    Runs::Wrapped {
        wrapper: Wrapper::Env,
        command,
        unread_tail: false,
    }
}

/// A shell with `args`: `-c` runs its first operand as a script; without `-c` and without a
/// script file (or with `-s`) it reads its script from stdin. A script file it runs is not
/// read.
fn shell(wrapper: Wrapper, args: &[Word]) -> Runs<'static> {
    let parsed = parse(args, &SHELL);
    if parsed.short(b'c') {
        return parsed.operands.first().map_or(Runs::Other, |script| {
            Runs::Script(wrapper, script.text.clone())
        });
    }
    if parsed.operands.is_empty() || parsed.short(b's') {
        return Runs::Stdin(wrapper);
    }
    Runs::Other
}
