//! Path globs, as the policy writes them (`when_paths`, `[locks] paths`): `*` matches within
//! one part of a path, `**` any number of whole parts (none included), and a trailing `/` a
//! whole directory. A glob is anchored at the top of the repository; every other character
//! matches itself.

/// Whether `path` (a file's path in a tree, `/`-separated, no leading `/`) matches `glob`.
pub fn matches(glob: &str, path: &str) -> bool {
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
pub fn any_matches(globs: &[String], path: &str) -> bool {
    globs.iter().any(|glob| matches(glob, path))
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
        assert!(matches("web/", "web/index.html"));
        assert!(matches("web/", "web/a/b/c.js"));
        assert!(!matches("web/", "web"));
        assert!(!matches("web/", "webby/index.html"));
        assert!(!matches("web/", "app/web/index.html"));
        assert!(matches("/", "anything/at/all"));
        assert!(matches("w*/", "web/index.html"));
        assert!(!matches("w*/", "web"));
    }

    #[test]
    fn a_plain_name_matches_that_path_alone() {
        assert!(matches("package.json", "package.json"));
        assert!(!matches("package.json", "web/package.json"));
        assert!(!matches("package.json", "package.json.bak"));
    }

    #[test]
    fn a_star_stays_within_one_part() {
        assert!(matches("src/*.rs", "src/main.rs"));
        assert!(!matches("src/*.rs", "src/deep/main.rs"));
        assert!(matches("*.md", "README.md"));
        assert!(!matches("*.md", "docs/README.md"));
        assert!(matches("a*b*c", "abc"));
        assert!(matches("a*b*c", "a-b-c"));
        assert!(!matches("a*b*c", "a-c"));
    }

    #[test]
    fn a_double_star_takes_any_number_of_parts() {
        assert!(matches("**/*.psd", "art.psd"));
        assert!(matches("**/*.psd", "art/x/y/cover.psd"));
        assert!(!matches("**/*.psd", "art/cover.png"));
        assert!(matches("a/**/b", "a/b"));
        assert!(matches("a/**/b", "a/x/y/b"));
        assert!(!matches("a/**/b", "a/x/y/c"));
        assert!(matches("**", "any/path"));
    }

    #[test]
    fn many_stars_cost_little() {
        let glob = format!("{}b", "a*".repeat(40));
        assert!(!matches(&glob, &"a".repeat(200)));
        let deep = format!("{}z", "**/".repeat(40));
        assert!(!matches(&deep, &"d/".repeat(100)));
    }

    #[test]
    fn several_globs_match_when_any_does() {
        let globs = vec!["web/".to_string(), "package.json".to_string()];
        assert!(any_matches(&globs, "package.json"));
        assert!(any_matches(&globs, "web/app.ts"));
        assert!(!any_matches(&globs, "api/app.rs"));
    }
}
