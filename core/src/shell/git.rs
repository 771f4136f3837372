//! One `git` command line against the deny list: Git's own options first (`-C dir`,
//! `-c k=v`, `--git-dir x`, `--no-pager`...), then the subcommand and its arguments.

use super::args::{Opt, Spec, parse};
use super::lex::Word;
use super::refs;
use super::{DenyRules, Shape};

/// Git's options before the subcommand that take a value.
const GLOBAL: Spec = Spec::posix(
    b"Cc",
    &[
        "git-dir",
        "work-tree",
        "namespace",
        "config-env",
        "attr-source",
        "super-prefix",
    ],
);

/// Git's options before the subcommand that print something and run no subcommand.
const INFO: [&str; 6] = [
    "version",
    "help",
    "html-path",
    "man-path",
    "info-path",
    "list-cmds",
];

/// The judgement of `git` with `args` (everything after the program's name). `unread_tail`
/// says more arguments follow that the command does not show (`xargs` appends them).
pub fn judge(args: &[Word], rules: &DenyRules, unread_tail: bool) -> Option<Shape> {
    let global = parse(args, &GLOBAL);
    let prints_only = global.short(b'h')
        || global.short(b'v')
        || global.long(&INFO)
        || global.options.contains(&Opt::Long("exec-path", None));
    // Under a POSIX spec the operands are the tail of the words: the subcommand, then its
    // arguments.
    let (subcommand, args) = args[args.len() - global.operands.len()..].split_first()?;
    if prints_only || subcommand.dynamic {
        return None;
    }
    match subcommand.text.as_str() {
        "reset" => reset(args),
        "clean" => clean(args),
        "branch" => branch(args),
        "checkout" => checkout(args, rules),
        "restore" => restore(args, rules),
        "push" => push(args, rules, unread_tail),
        "merge" => merge(args, rules),
        "cherry-pick" => cherry_pick(args, rules),
        _ => None,
    }
}

fn reset(args: &[Word]) -> Option<Shape> {
    let parsed = parse(args, &Spec::mixed(b"", &["pathspec-from-file"]));
    parsed.long(&["hard"]).then_some(Shape::ResetHard)
}

fn clean(args: &[Word]) -> Option<Shape> {
    let parsed = parse(args, &Spec::mixed(b"e", &["exclude"]));
    (parsed.short(b'f') || parsed.long(&["force"])).then_some(Shape::CleanForce)
}

fn branch(args: &[Word]) -> Option<Shape> {
    let parsed = parse(args, &Spec::mixed(b"u", &["set-upstream-to"]));
    let delete = parsed.short(b'd') || parsed.long(&["delete"]);
    let force = parsed.short(b'f') || parsed.long(&["force"]);
    (parsed.short(b'D') || delete && force).then_some(Shape::BranchForceDelete)
}

/// A pathspec that covers the whole tree, so a checkout or restore of it throws away every
/// edit: `.`, `./`, and `:/` (the top of the tree from anywhere).
fn whole_tree(pathspec: &str) -> bool {
    pathspec.trim_end_matches('/') == "." || matches!(pathspec, ":/" | ":/.")
}

fn checkout(args: &[Word], rules: &DenyRules) -> Option<Shape> {
    let parsed = parse(
        args,
        &Spec::mixed(b"bB", &["orphan", "conflict", "pathspec-from-file"]),
    );
    if parsed.operands.iter().any(|w| whole_tree(&w.text)) {
        return Some(Shape::CheckoutDot);
    }
    // `git checkout <tree-ish> -- <paths>`, or `<tree-ish> <paths>`: files from the tree-ish.
    // A lone `git checkout <lane ref>` only moves HEAD, which `bay merge` then refuses.
    let before = &parsed.operands[..parsed.dashdash.unwrap_or(parsed.operands.len())];
    let source = before.first()?;
    let with_paths = parsed.dashdash.is_some() || before.len() > 1;
    (with_paths && refs::names_any(&source.text, &rules.lanes)).then_some(Shape::LaneCheckout)
}

fn restore(args: &[Word], rules: &DenyRules) -> Option<Shape> {
    let parsed = parse(args, &Spec::mixed(b"s", &["source", "pathspec-from-file"]));
    let staged_only = (parsed.short(b'S') || parsed.long(&["staged"]))
        && !(parsed.short(b'W') || parsed.long(&["worktree"]));
    if !staged_only && parsed.operands.iter().any(|w| whole_tree(&w.text)) {
        return Some(Shape::RestoreDot);
    }
    let source = parsed.value(b's', "source")?;
    refs::names_any(source, &rules.lanes).then_some(Shape::LaneRestore)
}

fn merge(args: &[Word], rules: &DenyRules) -> Option<Shape> {
    let parsed = parse(
        args,
        &Spec::mixed(
            b"mFsX",
            &[
                "message",
                "file",
                "strategy",
                "strategy-option",
                "into-name",
                "cleanup",
            ],
        ),
    );
    lane_revision(&parsed.operands, rules).then_some(Shape::LaneMerge)
}

fn cherry_pick(args: &[Word], rules: &DenyRules) -> Option<Shape> {
    let parsed = parse(
        args,
        &Spec::mixed(
            b"mX",
            &["mainline", "strategy", "strategy-option", "cleanup"],
        ),
    );
    lane_revision(&parsed.operands, rules).then_some(Shape::LaneCherryPick)
}

/// Whether any operand is a revision that reads a lane ref.
fn lane_revision(operands: &[&Word], rules: &DenyRules) -> bool {
    operands
        .iter()
        .any(|w| refs::in_revision(&w.text).any(|name| refs::names_any(name, &rules.lanes)))
}

/// Git's options of `push` that take a value.
const PUSH: Spec = Spec::mixed(b"o", &["repo", "receive-pack", "exec", "push-option"]);

fn push(args: &[Word], rules: &DenyRules, unread_tail: bool) -> Option<Shape> {
    let parsed = parse(args, &PUSH);
    if parsed.short(b'f') || parsed.long(&["force", "force-with-lease", "force-if-includes"]) {
        return Some(Shape::PushForce);
    }
    if parsed.long(&["all", "mirror", "branches"]) {
        return Some(Shape::PushAll);
    }
    let delete = parsed.short(b'd') || parsed.long(&["delete"]);
    // The first operand is the remote; the rest are refspecs.
    let mut specs = parsed.operands.iter().skip(1);
    let mut pushed_any = false;
    while let Some(word) = specs.next() {
        pushed_any = true;
        let shape = if word.text == "tag" && !word.dynamic {
            specs.next().and_then(|name| {
                let tag = Word {
                    text: format!("refs/tags/{}", name.text),
                    dynamic: name.dynamic,
                };
                refspec(&tag, true, rules)
            })
        } else {
            refspec(word, delete, rules)
        };
        if shape.is_some() {
            return shape;
        }
    }
    if unread_tail {
        let unread = Word {
            text: String::new(),
            dynamic: true,
        };
        return refspec(&unread, delete, rules);
    }
    // With no refspec, `push.default` picks what to push: never only bay's refs.
    (!pushed_any && rules.main.is_none()).then_some(Shape::PushWithoutMain)
}

/// Where bay keeps its own records, which an agent may push.
fn is_bay(dst: &str) -> bool {
    dst.starts_with("refs/bay/") || dst.starts_with("refs/notes/bay/")
}

/// One refspec of a push (`src:dst`, `src`, `:dst`, `+src:dst`), or, when `bare`, a ref named
/// whole (one to delete, or a tag).
fn refspec(spec: &Word, bare: bool, rules: &DenyRules) -> Option<Shape> {
    let text = spec.text.as_str();
    if text.starts_with('+') {
        return Some(Shape::PushForceRefspec);
    }
    if text == ":" {
        // The matching refspec pushes every branch both sides have.
        return Some(Shape::PushAll);
    }
    let dst = match text.rsplit_once(':') {
        Some((_, dst)) if !bare && !dst.is_empty() => dst,
        Some((src, _)) if !bare => src,
        _ => text,
    };
    if is_bay(dst) {
        return None;
    }
    let Some(main) = &rules.main else {
        return Some(Shape::PushWithoutMain);
    };
    if spec.dynamic {
        return Some(Shape::PushUnread);
    }
    if refs::names(dst, &format!("refs/heads/{main}")) {
        return Some(Shape::PushMain);
    }
    rules
        .targets
        .iter()
        .any(|target| refs::names(dst, target))
        .then_some(Shape::PushTarget)
}
