//! The shell deny list: whether one shell command an agent is about to run is a Git command
//! bay refuses (`SHELL_DENIED`), judged from its text alone.
//!
//! `bay hook tool.before` calls [`judge`] with the Bash tool's `tool_input.command` and the
//! rules read from the clone: main's branch name (or `None` when bay cannot read it), the
//! `[[target]]` refs, and the `[[lane]]` ref patterns to keep out of this view. The answer is
//! [`Verdict::Allowed`] or a [`Denial`] that names the [`Shape`] matched and the wrappers it
//! hid behind, with a sentence of why and the next step. The denial never holds the command's
//! text, so the session's record cannot leak a secret typed on a command line.
//!
//! The shapes are the spec's list (Agents and hooks, "Blocked shell commands"; lanes and
//! targets on their own pages). They are found:
//!
//! - in every simple command of the script: across `;`, `&&`, `||`, `|`, `&` and newlines, in
//!   subshells and groups, and in `$( ... )`, backticks and `<( ... )`, which all run;
//! - with the words the shell would pass, so quotes and escapes change nothing (`g'i't`);
//! - behind leading `VAR=value` assignments, `env` (its options, `-S` included, and its
//!   assignments), `sudo`, `xargs`, `command` and `exec` with their options, and `eval`;
//! - through `bash`, `sh`, `zsh`, `dash` and `ksh`, with `-c '<script>'` or a script on stdin
//!   (`bash <<EOF`), [`MAX_SHELLS`] shells deep; a deeper script that mentions Git is denied;
//! - after Git's own options (`-C dir`, `-c k=v`, `--git-dir x`, `--no-pager`...), for `git`
//!   spelt as any path (`/usr/bin/git`).
//!
//! A word that only mentions Git as data, such as `echo "git reset --hard"` or a commit message,
//! is allowed: only a shell's script (`-c`, `eval`, stdin) is read as commands.
//!
//! It matches shapes and never runs anything, so another spelling of the same command can get
//! past it, as the spec says: an alias in the Git config (`-c alias.x=...` included), a script
//! file, a script piped into a shell (`echo ... | sh`), a variable holding `git`, a wrapper not
//! listed here (`nohup`, `timeout`, `nice`), or `git push origin HEAD` from a view on main
//! (the judge does not know the current branch). Where it cannot read the command at all (an
//! unclosed quote, subshells or substitutions nested 16 deep, a `case` statement, whose
//! patterns end in a bare `)`, a command over [`MAX_COMMAND_BYTES`] or its work budget), it
//! denies the command if the text mentions Git, as [`Shape::Unjudged`]: a hook that cannot
//! judge never lets a write through.
//!
//! Judging is linear in the command's length: each text is read once, and a shell's script or
//! a backtick's body (a part of the command) is read once more, within a budget of
//! [`WORK_PER_BYTE`] bytes read per byte of the command.

mod args;
mod git;
mod lex;
mod refs;
mod wrap;

use serde::Serialize;

use crate::reason::ReasonCode;
pub use wrap::Wrapper;

/// How many shells deep a script is read: `bash -c "sh -c '...'"` is two.
pub const MAX_SHELLS: usize = 2;

/// The longest command judged by its words; a longer one is denied if it mentions Git.
pub const MAX_COMMAND_BYTES: usize = 1 << 20;

/// Bytes the reader may read per byte of the command, counting every text read again (a
/// shell's script, a backtick's body, an expanding here-document).
pub const WORK_PER_BYTE: usize = 8;

/// What bay's deny list needs to know about the clone, read by the hook.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DenyRules {
    /// Main's branch name, such as `main`; `None` when bay cannot read it, and then every push
    /// of anything but bay's own refs (`refs/bay/*`, `refs/notes/bay/*`) is denied.
    pub main: Option<String>,
    /// The full refs of the `[[target]]` promotion targets, such as `refs/heads/staging`.
    pub targets: Vec<String>,
    /// The `[[lane]]` ref patterns (full refs, at most one `*`) whose work must not be copied
    /// into this view: every lane's in a view of no lane, none in a lane's own view.
    pub lanes: Vec<String>,
}

/// A command shape on the deny list, as the session's record names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// `git reset --hard`.
    ResetHard,
    /// `git clean` with `-f` in any cluster (`-f`, `-fd`, `-xdf`) or `--force`.
    CleanForce,
    /// `git branch -D`, or `--delete` with `--force`.
    BranchForceDelete,
    /// `git checkout .`: every unsaved edit thrown away.
    CheckoutDot,
    /// `git restore .` (of the work tree, not only `--staged`).
    RestoreDot,
    /// `git push` with `-f` in any cluster (`-fu`, `-vf`), `--force`, `--force-with-lease` or
    /// `--force-if-includes`.
    PushForce,
    /// `git push` of a `+<ref>` refspec.
    PushForceRefspec,
    /// `git push --all`, `--mirror`, `--branches`, or the matching refspec `:`.
    PushAll,
    /// `git push` to main: `main`, `refs/heads/main`, `HEAD:main`, any `src:dst` whose `dst`
    /// names main, a pattern matching it, or its deletion.
    PushMain,
    /// `git push` to a `[[target]]` ref, in any refspec form.
    PushTarget,
    /// `git push` of anything but `refs/bay/*` while bay cannot read main.
    PushWithoutMain,
    /// `git push` of a ref the shell fills in (`"$REF"`, `$(...)`) or `xargs` appends, so bay
    /// cannot read whether it is main.
    PushUnread,
    /// `git merge` of a lane ref.
    LaneMerge,
    /// `git cherry-pick` of a lane ref.
    LaneCherryPick,
    /// `git checkout <lane ref> -- <paths>`.
    LaneCheckout,
    /// `git restore --source <lane ref>`.
    LaneRestore,
    /// A command bay could not read, or a script past [`MAX_SHELLS`], that mentions Git.
    Unjudged,
}

/// The next step for a command that is never allowed.
const NEVER: &str = "Do not run that command again; it is never allowed. Ask the user if the \
                     work truly needs it.";

/// The next step for copying lane work.
const LANE: &str = "Redo the work here without the lane's commits, or start it in the lane \
                    with `bay start <intent> --lane <lane>`.";

impl Shape {
    /// Every shape, in declaration order.
    pub const ALL: [Shape; 17] = [
        Shape::ResetHard,
        Shape::CleanForce,
        Shape::BranchForceDelete,
        Shape::CheckoutDot,
        Shape::RestoreDot,
        Shape::PushForce,
        Shape::PushForceRefspec,
        Shape::PushAll,
        Shape::PushMain,
        Shape::PushTarget,
        Shape::PushWithoutMain,
        Shape::PushUnread,
        Shape::LaneMerge,
        Shape::LaneCherryPick,
        Shape::LaneCheckout,
        Shape::LaneRestore,
        Shape::Unjudged,
    ];

    /// The shape's name, as the record shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::ResetHard => "reset_hard",
            Shape::CleanForce => "clean_force",
            Shape::BranchForceDelete => "branch_force_delete",
            Shape::CheckoutDot => "checkout_dot",
            Shape::RestoreDot => "restore_dot",
            Shape::PushForce => "push_force",
            Shape::PushForceRefspec => "push_force_refspec",
            Shape::PushAll => "push_all",
            Shape::PushMain => "push_main",
            Shape::PushTarget => "push_target",
            Shape::PushWithoutMain => "push_without_main",
            Shape::PushUnread => "push_unread",
            Shape::LaneMerge => "lane_merge",
            Shape::LaneCherryPick => "lane_cherry_pick",
            Shape::LaneCheckout => "lane_checkout",
            Shape::LaneRestore => "lane_restore",
            Shape::Unjudged => "unjudged",
        }
    }

    /// Why bay denies the shape, in one sentence.
    pub fn why(self) -> &'static str {
        match self {
            Shape::ResetHard => "`git reset --hard` throws away every edit not yet saved.",
            Shape::CleanForce => "`git clean -f` deletes untracked files for good.",
            Shape::BranchForceDelete => {
                "`git branch -D` deletes a branch even when its work is saved nowhere else."
            }
            Shape::CheckoutDot => "`git checkout .` throws away every unsaved edit in the tree.",
            Shape::RestoreDot => "`git restore .` throws away every unsaved edit in the tree.",
            Shape::PushForce | Shape::PushForceRefspec => {
                "A force push can overwrite work that others already pushed."
            }
            Shape::PushAll => "This push sends every branch at once, main included.",
            Shape::PushMain => "Only bay moves main, once a change's checks pass.",
            Shape::PushTarget => "A promotion target moves only by its rule, never by a push.",
            Shape::PushWithoutMain => {
                "bay cannot read which branch is main here, so it allows only pushes of \
                 `refs/bay/*`."
            }
            Shape::PushUnread => {
                "The push names a ref the shell fills in when it runs, so bay cannot tell \
                 that it is not main."
            }
            Shape::LaneMerge | Shape::LaneCherryPick | Shape::LaneCheckout | Shape::LaneRestore => {
                "This copies a sandbox lane's work into a change outside the lane, which \
                 `bay merge` refuses with `LANE_LEAK`."
            }
            Shape::Unjudged => {
                "bay could not read this command (an unclosed quote, deep nesting or great \
                 length), and it mentions Git; a hook that cannot judge lets no write through."
            }
        }
    }

    /// The step the agent takes instead.
    pub fn next_step(self) -> &'static str {
        match self {
            Shape::PushMain | Shape::PushAll => {
                "Run `bay merge`: bay checks the change and moves main itself."
            }
            Shape::PushTarget => {
                "Leave the target to bay; `bay status` names the newest commit it may move to."
            }
            Shape::PushWithoutMain => {
                "Push nothing but `refs/bay/*`, and tell the user bay cannot read main here."
            }
            Shape::PushUnread => "Spell the ref out; to move main, run `bay merge`.",
            Shape::LaneMerge | Shape::LaneCherryPick | Shape::LaneCheckout | Shape::LaneRestore => {
                LANE
            }
            Shape::Unjudged => {
                "Run the Git command by itself, spelt plainly, outside nested shells."
            }
            Shape::ResetHard
            | Shape::CleanForce
            | Shape::BranchForceDelete
            | Shape::CheckoutDot
            | Shape::RestoreDot
            | Shape::PushForce
            | Shape::PushForceRefspec => NEVER,
        }
    }
}

/// A denied command, as the session's record keeps it: the shape and the wrappers it was
/// found behind, outermost first, never the command's text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Denial {
    pub shape: Shape,
    pub wrappers: Vec<Wrapper>,
}

impl Denial {
    /// The reason code of every denial.
    pub const CODE: ReasonCode = ReasonCode::ShellDenied;

    /// Why bay denied it, in one sentence.
    pub fn why(&self) -> &'static str {
        self.shape.why()
    }

    /// What the agent does instead.
    pub fn next_step(&self) -> &'static str {
        self.shape.next_step()
    }
}

/// The deny list's answer about one command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Allowed,
    Denied(Denial),
}

/// Judges one shell command, as an agent's shell tool would run it, against bay's deny list.
/// It reads the text and never runs any of it.
pub fn judge(command: &str, rules: &DenyRules) -> Verdict {
    judge_counting(command, rules).0
}

/// [`judge`], and how many bytes the reader read to reach the verdict: at most
/// [`WORK_PER_BYTE`] per byte of the command (or of 1 KiB, for a shorter one), a bound the
/// `shell` fuzz body holds it to.
pub fn judge_counting(command: &str, rules: &DenyRules) -> (Verdict, usize) {
    let mut judge = Judge {
        rules,
        work: Work::for_command(command),
        wrappers: Vec::new(),
    };
    let denial = if command.len() > MAX_COMMAND_BYTES {
        mentions_git(command).then(|| judge.deny(Shape::Unjudged))
    } else {
        judge.script(command, 0)
    };
    let verdict = denial.map_or(Verdict::Allowed, Verdict::Denied);
    (verdict, judge.work.spent)
}

/// The reading a judgement may still do. Each pass of the reader over a text is charged its
/// length up front, since the reader never steps back.
#[derive(Debug)]
struct Work {
    left: usize,
    spent: usize,
}

impl Work {
    /// The budget for judging `command`: [`WORK_PER_BYTE`] per byte, and a floor so that a
    /// short command's scripts are always read.
    fn for_command(command: &str) -> Work {
        Work {
            left: WORK_PER_BYTE * command.len().max(1024),
            spent: 0,
        }
    }

    fn charge(&mut self, bytes: usize) -> Result<(), lex::Unread> {
        self.left = self.left.checked_sub(bytes).ok_or(lex::Unread::TooLong)?;
        self.spent += bytes;
        Ok(())
    }
}

/// Whether `text` mentions Git: the word `git` in any case, not inside a longer word
/// (`digit`, `legit` are not Git; `/usr/bin/git`, `git-lfs` and `$(which git)` are).
fn mentions_git(text: &str) -> bool {
    let bytes = text.as_bytes();
    let part_of_word = |at: usize| {
        bytes
            .get(at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    bytes.windows(3).enumerate().any(|(at, three)| {
        three.eq_ignore_ascii_case(b"git")
            && (at == 0 || !part_of_word(at - 1))
            && !part_of_word(at + 3)
    })
}

/// One judgement: the rules, the work left, and the wrappers around the command being read.
struct Judge<'r> {
    rules: &'r DenyRules,
    work: Work,
    wrappers: Vec<Wrapper>,
}

impl Judge<'_> {
    fn deny(&self, shape: Shape) -> Denial {
        Denial {
            shape,
            wrappers: self.wrappers.clone(),
        }
    }

    /// A script run `shells` shells deep (the command itself is 0).
    fn script(&mut self, text: &str, shells: usize) -> Option<Denial> {
        if shells > MAX_SHELLS {
            return mentions_git(text).then(|| self.deny(Shape::Unjudged));
        }
        match lex::commands(text, &mut self.work) {
            Ok(commands) => commands
                .iter()
                .find_map(|command| self.command(&command.words, &command.stdin, shells)),
            Err(_) => mentions_git(text).then(|| self.deny(Shape::Unjudged)),
        }
    }

    /// One simple command, read past its wrappers to what it runs.
    fn command(&mut self, words: &[lex::Word], stdin: &[String], shells: usize) -> Option<Denial> {
        let outer = self.wrappers.len();
        let mut owned: Vec<lex::Word>;
        let mut words = words;
        let mut unread_tail = false;
        let denial = loop {
            match wrap::runs(words, &mut self.work) {
                wrap::Runs::Git(args) => {
                    break git::judge(args, self.rules, unread_tail).map(|s| self.deny(s));
                }
                wrap::Runs::Wrapped {
                    wrapper,
                    command,
                    unread_tail: appends,
                } => {
                    self.wrappers.push(wrapper);
                    unread_tail |= appends;
                    owned = command;
                    words = &owned;
                }
                wrap::Runs::Script(wrapper, script) => {
                    self.wrappers.push(wrapper);
                    break self.script(&script, shells + 1);
                }
                wrap::Runs::Stdin(wrapper) => {
                    self.wrappers.push(wrapper);
                    break stdin.iter().find_map(|body| self.script(body, shells + 1));
                }
                wrap::Runs::Other => break None,
            }
        };
        self.wrappers.truncate(outer);
        denial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> DenyRules {
        DenyRules {
            main: Some("main".into()),
            targets: vec!["refs/heads/staging".into()],
            lanes: vec!["refs/heads/research/*".into()],
        }
    }

    fn shape(command: &str) -> Option<Shape> {
        match judge(command, &rules()) {
            Verdict::Allowed => None,
            Verdict::Denied(denial) => Some(denial.shape),
        }
    }

    #[test]
    fn git_is_mentioned_only_as_a_word() {
        for text in [
            "git",
            "/usr/bin/git push",
            "$(which GIT)",
            "x;git-lfs",
            "'git'",
        ] {
            assert!(mentions_git(text), "{text}");
        }
        for text in ["digit", "legit", "gitter", "git_dir", "", "gi"] {
            assert!(!mentions_git(text), "{text}");
        }
    }

    #[test]
    fn a_denial_names_its_wrappers_outermost_first() {
        let Verdict::Denied(denial) =
            judge("sudo -u x env A=1 bash -c 'xargs git push -f'", &rules())
        else {
            panic!("denied");
        };
        assert_eq!(denial.shape, Shape::PushForce);
        assert_eq!(
            denial.wrappers,
            [Wrapper::Sudo, Wrapper::Env, Wrapper::Bash, Wrapper::Xargs]
        );
        let json = serde_json::to_value(Verdict::Denied(denial)).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({
                "verdict": "denied",
                "shape": "push_force",
                "wrappers": ["sudo", "env", "bash", "xargs"]
            })
        );
        let allowed = serde_json::to_value(Verdict::Allowed).expect("serializes");
        assert_eq!(allowed, serde_json::json!({"verdict": "allowed"}));
    }

    #[test]
    fn every_shape_says_why_and_what_next_in_sentences() {
        for shape in Shape::ALL {
            let json = serde_json::to_value(shape).expect("serializes");
            assert_eq!(json, shape.as_str());
            assert!(shape.why().ends_with('.'), "{shape:?}");
            assert!(shape.next_step().ends_with('.'), "{shape:?}");
        }
        assert_eq!(Denial::CODE.as_str(), "SHELL_DENIED");
    }

    #[test]
    fn a_script_past_two_shells_is_denied_only_when_it_mentions_git() {
        let deep = "bash -c \"sh -c 'zsh -c \\\"git status\\\"'\"";
        assert_eq!(shape(deep), Some(Shape::Unjudged));
        assert_eq!(shape("bash -c \"sh -c 'zsh -c ls'\""), None);
        assert_eq!(
            shape("bash -c \"sh -c 'git reset --hard'\""),
            Some(Shape::ResetHard)
        );
    }

    #[test]
    fn an_over_long_command_is_denied_only_when_it_mentions_git() {
        let long = "x".repeat(MAX_COMMAND_BYTES + 1);
        assert_eq!(shape(&long), None);
        assert_eq!(shape(&format!("git status #{long}")), Some(Shape::Unjudged));
    }

    #[test]
    fn work_stays_within_its_budget() {
        let nested = format!("{}git status{}", "$(".repeat(16), ")".repeat(16));
        let (verdict, spent) = judge_counting(&nested, &rules());
        assert_eq!(verdict, Verdict::Allowed);
        assert!(spent <= WORK_PER_BYTE * nested.len().max(1024));
        let ticks = "`".repeat(40);
        let (verdict, _) = judge_counting(&format!("git {ticks}"), &rules());
        assert_eq!(verdict, Verdict::Allowed);
    }
}
