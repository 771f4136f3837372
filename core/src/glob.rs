//! bay's two glob dialects, each in one place.
//!
//! Path globs, as the policy writes them (`when_paths`, `[locks] paths`): `*` matches within
//! one part of a path, `**` any number of whole parts (none included), and a trailing `/` a
//! whole directory. A glob is anchored at the top of the repository; every other character
//! matches itself, and a glob holding a character other dialects read as syntax (`[`, `]`,
//! `?`, `{`, `}`, `\`, or `!` first) is refused by [`path_problem`] rather than read literally.
//!
//! Ref patterns, as the config writes them (`[[lane]] refs`) and as bay fetches refs: at most
//! one `*`, which matches any run of characters, slashes too, as in a Git refspec
//! ([`ref_matches`]).

/// The characters that other glob dialects (Git's pathspecs and ignore files, shells) read as
/// syntax and this one does not define: a glob holding one would match only the file named by
/// those very characters, which is seldom what its writer meant.
const UNDEFINED: [char; 6] = ['[', ']', '?', '{', '}', '\\'];

/// Why `glob` is not a path glob of this dialect, or `None` when it is: it holds a character
/// the dialect does not define ([`UNDEFINED`], or `!` first, which ignore files read as "not").
/// Phrased to follow "has the entry ..., which".
pub fn path_problem(glob: &str) -> Option<String> {
    let undefined = if glob.starts_with('!') {
        Some('!')
    } else {
        glob.chars().find(|c| UNDEFINED.contains(c))
    };
    undefined.map(|c| {
        let holds = if c == '!' {
            "starts with `!`".to_owned()
        } else {
            format!("holds `{c}`")
        };
        format!(
            "{holds}, syntax bay's globs do not define: they know `*` within one part of a \
             path, `**` for any number of parts and a trailing `/` for a whole directory, and \
             read every other character literally; name the paths with those, or one by one"
        )
    })
}

/// Whether ref `name` matches `pattern`, in which one `*` stands for any run of characters,
/// slashes too (the spec's lane patterns and Git's refspecs, as bay fetches); a pattern
/// without `*` is the name itself.
pub fn ref_matches(pattern: &str, name: &str) -> bool {
    RefPattern::new(pattern).matches(name)
}

/// A ref pattern split at its `*` once, to be held to many names.
#[derive(Clone, Copy, Debug)]
pub struct RefPattern<'a> {
    head: &'a str,
    /// What follows the `*`; `None` for a pattern with none, which names one ref.
    tail: Option<&'a str>,
}

impl<'a> RefPattern<'a> {
    pub fn new(pattern: &'a str) -> RefPattern<'a> {
        match pattern.split_once('*') {
            None => RefPattern {
                head: pattern,
                tail: None,
            },
            Some((head, tail)) => RefPattern {
                head,
                tail: Some(tail),
            },
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self.tail {
            None => name == self.head,
            Some(tail) => {
                name.len() >= self.head.len() + tail.len()
                    && name.starts_with(self.head)
                    && name.ends_with(tail)
            }
        }
    }
}

/// Whether `path` (a file's path in a tree, `/`-separated, no leading `/`) matches `glob`.
pub fn path_matches(glob: &str, path: &str) -> bool {
    let mut pattern: Vec<&str> = glob.trim_start_matches('/').split('/').collect();
    if glob.ends_with('/') {
        // `dir/` splits into [.., "dir", ""]: the empty last part becomes one part or more
        // below the directory, so a directory never matches itself as a file.
        pattern.pop();
        pattern.extend(["*", "**"]);
    }
    parts(&pattern, &split(path))
}

/// Whether any glob of `globs` matches `path`.
pub fn any_path_matches(globs: &[String], path: &str) -> bool {
    globs.iter().any(|glob| path_matches(glob, path))
}

fn split(path: &str) -> Vec<&str> {
    path.split('/').filter(|part| !part.is_empty()).collect()
}

/// Matches whole parts: `**` takes any number of them. One pass over a table of prefixes, so
/// a glob with many stars costs its length times the path's, never more.
fn parts(pattern: &[&str], path: &[&str]) -> bool {
    table_match(
        pattern.len(),
        path.len(),
        |p| pattern[p] == "**",
        |p, i| part_matches(pattern[p], path[i]),
    )
}

/// Matches one part against a pattern part in which `*` stands for any run of characters.
fn part_matches(pattern: &str, part: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let part: Vec<char> = part.chars().collect();
    table_match(
        pattern.len(),
        part.len(),
        |p| pattern[p] == '*',
        |p, i| pattern[p] == part[i],
    )
}

/// Whether a pattern of `m` items matches a subject of `n`, where an item for which `star`
/// holds takes any run of subject items and any other takes one for which `one` holds.
/// `reach[i]` says whether the pattern read so far can end just before subject item `i`.
fn table_match(
    m: usize,
    n: usize,
    star: impl Fn(usize) -> bool,
    one: impl Fn(usize, usize) -> bool,
) -> bool {
    let mut reach = vec![false; n + 1];
    reach[0] = true;
    for p in 0..m {
        let mut next = vec![false; n + 1];
        if star(p) {
            let mut any = false;
            for i in 0..=n {
                any |= reach[i];
                next[i] = any;
            }
        } else {
            for i in 0..n {
                next[i + 1] = reach[i] && one(p, i);
            }
        }
        reach = next;
    }
    reach[n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_matches_everything_below_it_and_not_itself() {
        assert!(path_matches("web/", "web/index.html"));
        assert!(path_matches("web/", "web/a/b/c.js"));
        assert!(!path_matches("web/", "web"));
        assert!(!path_matches("web/", "webby/index.html"));
        assert!(!path_matches("web/", "app/web/index.html"));
        assert!(path_matches("/", "anything/at/all"));
        assert!(path_matches("w*/", "web/index.html"));
        assert!(!path_matches("w*/", "web"));
    }

    #[test]
    fn a_plain_name_matches_that_path_alone() {
        assert!(path_matches("package.json", "package.json"));
        assert!(!path_matches("package.json", "web/package.json"));
        assert!(!path_matches("package.json", "package.json.bak"));
    }

    #[test]
    fn a_star_stays_within_one_part() {
        assert!(path_matches("src/*.rs", "src/main.rs"));
        assert!(!path_matches("src/*.rs", "src/deep/main.rs"));
        assert!(path_matches("*.md", "README.md"));
        assert!(!path_matches("*.md", "docs/README.md"));
        assert!(path_matches("a*b*c", "abc"));
        assert!(path_matches("a*b*c", "a-b-c"));
        assert!(!path_matches("a*b*c", "a-c"));
    }

    #[test]
    fn a_double_star_takes_any_number_of_parts() {
        assert!(path_matches("**/*.psd", "art.psd"));
        assert!(path_matches("**/*.psd", "art/x/y/cover.psd"));
        assert!(!path_matches("**/*.psd", "art/cover.png"));
        assert!(path_matches("a/**/b", "a/b"));
        assert!(path_matches("a/**/b", "a/x/y/b"));
        assert!(!path_matches("a/**/b", "a/x/y/c"));
        assert!(path_matches("**", "any/path"));
    }

    #[test]
    fn many_stars_cost_little() {
        let glob = format!("{}b", "a*".repeat(40));
        assert!(!path_matches(&glob, &"a".repeat(200)));
        let deep = format!("{}z", "**/".repeat(40));
        assert!(!path_matches(&deep, &"d/".repeat(100)));
    }

    #[test]
    fn several_globs_match_when_any_does() {
        let globs = vec!["web/".to_string(), "package.json".to_string()];
        assert!(any_path_matches(&globs, "package.json"));
        assert!(any_path_matches(&globs, "web/app.ts"));
        assert!(!any_path_matches(&globs, "api/app.rs"));
    }

    #[test]
    fn a_glob_using_syntax_the_dialect_does_not_define_is_refused() {
        for glob in [
            "src/[ab].rs",
            "src/a].rs",
            "src/?.rs",
            "src/{a,b}.rs",
            "src/a}.rs",
            "!src/",
            "src\\*.rs",
        ] {
            let problem = path_problem(glob).unwrap_or_else(|| panic!("{glob} is accepted"));
            assert!(problem.contains("globs do not define"), "{glob}: {problem}");
        }
        for glob in [
            "src/*.rs",
            "**/*.psd",
            "art/",
            "a/**/b",
            "src/a!.rs",
            "web-app/x.y",
            "**",
        ] {
            assert_eq!(path_problem(glob), None, "{glob}");
        }
        assert!(path_problem("src/[ab].rs").is_some_and(|p| p.contains("`[`")));
    }

    #[test]
    fn a_ref_pattern_star_matches_any_run_slashes_too() {
        assert!(ref_matches("refs/heads/main", "refs/heads/main"));
        assert!(!ref_matches("refs/heads/main", "refs/heads/mainline"));
        assert!(ref_matches("refs/heads/*", "refs/heads/a/b"));
        assert!(ref_matches(
            "refs/heads/research/*",
            "refs/heads/research/a/b"
        ));
        assert!(ref_matches("refs/*/x", "refs/heads/x"));
        assert!(ref_matches("refs/heads/ma*n", "refs/heads/main"));
        assert!(
            ref_matches("refs/heads/main*", "refs/heads/main"),
            "a star matches nothing too"
        );
        assert!(!ref_matches("refs/heads/research/*", "refs/heads/research"));
        assert!(
            !ref_matches("refs/heads/ma*ain", "refs/heads/main"),
            "head and tail overlap"
        );
        assert!(!ref_matches("refs/a*a", "refs/a"));
        assert!(!ref_matches("refs/tags/*", "refs/heads/main"));
    }
}
