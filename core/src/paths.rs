//! What a change's declared paths cover: each names one file or one whole directory, from the
//! top of the repository (`src/` and `src` both cover `src/a.rs`; `src/a.rs` covers only
//! itself). A view shows exactly the files its change's paths cover; the driver says the same
//! to Git as the non-cone sparse pattern `/<path>`.

/// Why `path` is not a path inside the repository, as bay's own files name one (the policy's
/// `adapter`, `paths`, `when_paths` and `[locks] paths`; the config's plugin programs and
/// `[agent] instructions`), or `None` when it is. Such a path is relative to the top of the
/// repository and stays inside it: bay reads it from a tree, and a path that left the tree
/// would name the machine instead. Phrased to follow "which".
pub fn repo_path_problem(path: &str) -> Option<&'static str> {
    if path.starts_with('/') {
        Some("is absolute; these paths are relative to the top of the repository")
    } else if path.split('/').any(|part| part == "..") {
        Some("has a `..` part; these paths must stay inside the repository")
    } else if path.split('/').all(|part| part.is_empty() || part == ".") {
        Some("names no file or directory")
    } else {
        None
    }
}

/// A path as Git printed it (one field of `-z` output), as bay's text: Git's paths are bytes,
/// and bay's are UTF-8. A name that is not UTF-8 is refused by name (its bytes escaped, as
/// `src/caf\xe9.rs`), never read lossily: a lossy reading could make two names one.
pub fn from_git(raw: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(raw).map_err(|_| {
        format!(
            "Git names the path {}, which is not UTF-8; bay reads paths as UTF-8 text, so \
             rename it in UTF-8",
            raw.escape_ascii()
        )
    })
}

/// Whether `path` (a file's path in a tree, `/`-separated) lies under `declared`.
pub fn covers(declared: &str, path: &str) -> bool {
    let declared = declared.trim_matches('/');
    if declared.is_empty() {
        return true;
    }
    match path.strip_prefix(declared) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// Whether any of a change's declared paths covers `path`.
pub fn any_covers(declared: &[String], path: &str) -> bool {
    declared.iter().any(|d| covers(d, path))
}

/// Whether two changes' declared paths overlap: some path of one covers a path of the other.
pub fn overlap(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| {
        b.iter()
            .any(|y| covers(x, y.trim_matches('/')) || covers(y, x.trim_matches('/')))
    })
}

/// A path as a change declares it (`bay start --paths`), checked: it names a file or folder
/// inside the repository, literally. `..` would leave the repository, and a line break or a
/// character Git's sparse patterns read as a wildcard or an escape (`*`, `?`, `[`, a
/// backslash) would make the view show other files than the change covers; so would a part
/// that starts or ends with white space, since Git drops the spaces that end a pattern (`src `
/// would show `src/`, and ` ` everything). Each is refused, naming the path and why.
pub fn declared(path: &str) -> Result<String, String> {
    if path.split('/').any(|part| part == "..") {
        return Err(format!(
            "{path:?} leaves the repository (`..`); name a file or folder from the repository's top"
        ));
    }
    if let Some(c) = path
        .chars()
        .find(|c| matches!(c, '\n' | '\r' | '*' | '?' | '[' | '\\'))
    {
        return Err(format!(
            "{path:?} holds {c:?}; a declared path names files literally, without wildcards or line breaks"
        ));
    }
    let padded =
        |part: &str| part.starts_with(char::is_whitespace) || part.ends_with(char::is_whitespace);
    if let Some(part) = path.split('/').find(|part| padded(part)) {
        return Err(format!(
            "{path:?} has the part {part:?}, which starts or ends with white space; Git drops \
             the spaces that end a sparse pattern, so the view would show another path: name \
             it without them"
        ));
    }
    Ok(path.to_owned())
}

/// A repository path without empty and `.` parts, as the policy compares them: `./a//b/` is
/// `a/b`. Git names files that way, so a path a person wrote matches the file Git lists.
pub fn normalize(path: &str) -> String {
    path.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_path_is_utf8_or_refused_by_name() {
        assert_eq!(from_git(b"src/a.rs"), Ok("src/a.rs"));
        assert_eq!(
            from_git("docs/caf\u{e9}.md".as_bytes()),
            Ok("docs/caf\u{e9}.md")
        );
        let latin1 = from_git(b"src/caf\xe9.rs").expect_err("not UTF-8");
        assert!(latin1.contains("src/caf\\xe9.rs"), "{latin1}");
        // Two names a lossy reading would make one stay two.
        let other = from_git(b"src/caf\xe8.rs").expect_err("not UTF-8");
        assert_ne!(latin1, other);
    }

    #[test]
    fn a_repository_path_is_relative_and_stays_inside() {
        for path in [
            "src/a.rs",
            "web/",
            "./scripts//check",
            "a/./b",
            "**/*.psd",
            "..a",
            "a..",
        ] {
            assert_eq!(repo_path_problem(path), None, "{path}");
        }
        for (path, why) in [
            ("/etc/passwd", "absolute"),
            ("/", "absolute"),
            ("..", "`..`"),
            ("a/../../b", "`..`"),
            ("a/..", "`..`"),
            ("", "names no file"),
            (".", "names no file"),
            ("./", "names no file"),
            ("././/", "names no file"),
        ] {
            let problem = repo_path_problem(path).unwrap_or_else(|| panic!("{path:?} passes"));
            assert!(problem.contains(why), "{path:?}: {problem}");
        }
    }

    #[test]
    fn a_directory_covers_what_lies_under_it_and_nothing_that_only_shares_its_prefix() {
        assert!(covers("src/", "src/a.rs"));
        assert!(covers("src", "src/deep/b.rs"));
        assert!(!covers("src/", "srcs/a.rs"));
        assert!(!covers("src/", "lib/src/a.rs"));
    }

    #[test]
    fn a_file_covers_itself_only() {
        assert!(covers("src/a.rs", "src/a.rs"));
        assert!(!covers("src/a.rs", "src/a.rs.orig"));
        assert!(!covers("src/a.rs", "src/b.rs"));
    }

    #[test]
    fn a_declared_path_stays_inside_the_repository_and_is_literal() {
        for fine in ["src", "src/", "/src/a.rs", "a b/c.txt", "", "./x"] {
            assert_eq!(declared(fine).as_deref(), Ok(fine), "{fine}");
        }
        for bad in [
            "..",
            "../x",
            "src/../../etc",
            "src/*.rs",
            "a?",
            "[ab]",
            "a\\b",
            "a\nb",
            "src ",
            "src /",
            " src",
            "src/ a.rs",
            "src\t",
            " ",
            "a/\u{a0}",
        ] {
            let why = declared(bad).expect_err(bad);
            assert!(why.contains(&format!("{bad:?}")), "{why}");
        }
    }

    #[test]
    fn normalizing_drops_empty_and_dot_parts() {
        assert_eq!(normalize("./a//b/"), "a/b");
        assert_eq!(normalize("a/./b"), "a/b");
        assert_eq!(normalize("./"), "");
    }

    #[test]
    fn the_top_covers_everything() {
        assert!(covers("/", "README"));
        assert!(any_covers(&["docs/".into(), "/".into()], "src/a.rs"));
        assert!(!any_covers(&[], "src/a.rs"));
    }

    #[test]
    fn declared_paths_overlap_when_one_covers_the_other() {
        let paths = |list: &[&str]| list.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
        assert!(overlap(&paths(&["src/"]), &paths(&["src/api.rs"])));
        assert!(overlap(&paths(&["src/api.rs"]), &paths(&["src"])));
        assert!(overlap(
            &paths(&["docs/", "src/a"]),
            &paths(&["src/a/b.rs"])
        ));
        assert!(!overlap(&paths(&["src/api"]), &paths(&["src/apis"])));
        assert!(!overlap(&paths(&["src/"]), &paths(&["docs/"])));
        assert!(!overlap(&paths(&[]), &paths(&["docs/"])));
    }
}
