//! Ref names as Git takes them: the rules of `git check-ref-format`, in one place, for every
//! name bay reads from a person (`main`, `[[target]] ref`, `[[lane]] refs`, `bay start --from`,
//! `bay install --main`) before it puts the name in a ref, a refspec or a command.
//!
//! A name is refused when Git would refuse it: a part (between `/`) that is empty, starts with
//! `.` or ends with `.lock`; `..` or `@{` anywhere; a last character `.`; the name `@`; a
//! control character, a space, `~`, `^`, `:`, `?`, `[`, `\` or `*` (one `*` is allowed in a
//! pattern, as `--refspec-pattern` allows it); or no `/` at all. Every other character,
//! beyond ASCII included, is Git's to take.

/// Why Git would refuse `name` as a ref name (`git check-ref-format <name>`), or `None` when
/// it takes it. Phrased to follow "which" or "it".
pub fn problem(name: &str) -> Option<String> {
    check(name, false)
}

/// Why Git would refuse `pattern` as a refspec pattern (`git check-ref-format
/// --refspec-pattern <pattern>`): a ref name in which one `*` may stand, or `None`.
pub fn pattern_problem(pattern: &str) -> Option<String> {
    check(pattern, true)
}

/// Why Git would refuse `name` as a branch, or `None`: as `git check-ref-format --branch`,
/// which also refuses a name that starts with `-` (a command would read it as an option). A
/// name that starts with `refs/` is taken as the full ref, as `bay start --from` reads it; any
/// other as one under `refs/heads/`.
pub fn branch_problem(name: &str) -> Option<String> {
    if name.starts_with('-') {
        return Some("starts with `-`, which Git does not allow in a branch name".to_owned());
    }
    if name.starts_with("refs/") {
        problem(name)
    } else {
        problem(&format!("refs/heads/{name}"))
    }
}

fn check(name: &str, pattern: bool) -> Option<String> {
    if name == "@" {
        return Some("is `@`, which Git reads as HEAD".to_owned());
    }
    let mut stars = 0;
    for c in name.chars() {
        if c == '*' && pattern {
            stars += 1;
            if stars > 1 {
                return Some("has more than one `*`".to_owned());
            }
        } else if c.is_ascii_control() {
            return Some(
                "holds a control character, which Git does not allow in a ref name".into(),
            );
        } else if matches!(c, ' ' | '~' | '^' | ':' | '?' | '[' | '\\' | '*') {
            return Some(format!(
                "holds `{c}`, which Git does not allow in a ref name"
            ));
        }
    }
    let shape = if name.contains("..") {
        Some("holds `..`")
    } else if name.contains("@{") {
        Some("holds `@{`")
    } else if name.ends_with('.') {
        Some("ends with `.`")
    } else if name.split('/').any(str::is_empty) {
        Some("has an empty part: a `/` first, last or twice in a row")
    } else if name.split('/').any(|part| part.starts_with('.')) {
        Some("has a part that starts with `.`")
    } else if name.split('/').any(|part| part.ends_with(".lock")) {
        Some("has a part that ends with `.lock`")
    } else if !name.contains('/') {
        Some("has no `/`; a ref name has at least two parts, such as refs/heads/main")
    } else {
        None
    };
    shape.map(|shape| format!("{shape}, which Git does not allow in a ref name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names `git check-ref-format` takes and refuses, as Git 2.x answers them (the
    /// `drivers/tests/ref_names.rs` test asks Git itself about these and more).
    #[test]
    fn names_are_taken_and_refused_as_git_does() {
        for name in [
            "refs/heads/main",
            "refs/heads/-a",
            "refs/heads/@",
            "refs/heads/a@b",
            "refs/heads/a]",
            "refs/heads/a{b}",
            "refs/heads/a!",
            "refs/heads/é",
            "refs/heads/a\u{a0}b",
            "refs/heads/lock",
            "refs/heads/x.lock.y",
            "refs/heads",
            "refs/heads/v1.2",
        ] {
            assert_eq!(problem(name), None, "{name:?}");
        }
        for name in [
            "",
            "@",
            "a",
            "refs",
            "refs/",
            "/refs/heads/a",
            "refs/heads/a/",
            "refs//a",
            "refs/heads/.a",
            "refs/heads/a/.b",
            "refs/heads/.",
            "refs/heads/..",
            "refs/heads/a.",
            "refs/heads/a.lock",
            "refs/heads/a.lock/b",
            "refs/heads/.lock",
            "refs/heads/a..b",
            "refs/heads/a@{b",
            "refs/heads/a b",
            "refs/heads/a\tb",
            "refs/heads/a\nb",
            "refs/heads/a\u{7f}",
            "refs/heads/a~1",
            "refs/heads/a^",
            "refs/heads/a:b",
            "refs/heads/a?",
            "refs/heads/a[b",
            "refs/heads/a\\b",
            "refs/heads/a*",
        ] {
            assert!(problem(name).is_some(), "{name:?}");
        }
    }

    #[test]
    fn a_pattern_takes_one_star_and_no_more() {
        assert_eq!(pattern_problem("refs/heads/research/*"), None);
        assert_eq!(pattern_problem("refs/heads/a*b"), None);
        assert_eq!(pattern_problem("refs/heads/main"), None);
        assert!(pattern_problem("refs/heads/*/*").is_some_and(|p| p.contains("more than one")));
        assert!(pattern_problem("refs/heads/a?").is_some());
        assert!(problem("refs/heads/*").is_some_and(|p| p.contains("`*`")));
    }

    #[test]
    fn a_branch_is_a_name_under_refs_heads_or_a_full_ref_and_never_an_option() {
        for name in [
            "feature",
            "team/x-1",
            "refs/heads/v1.2",
            "refs/tags/v1",
            "@x",
        ] {
            assert_eq!(branch_problem(name), None, "{name}");
        }
        for name in [
            "",
            "-x",
            "/x",
            "x/",
            "x.lock",
            "a..b",
            "a//b",
            "a@{1}",
            "a b",
            "a*",
            "a?",
            "a[b",
            "a~1",
            "a^",
            "a:b",
            "a\\b",
            ".x",
            "x.",
            "a\nb",
            "refs/heads/",
        ] {
            assert!(branch_problem(name).is_some(), "{name:?}");
        }
    }
}
