//! `bay.checkReadPath`: the machine's directories a check may read, such as a package store.
//!
//! Only the machine's owner names them, in Git config, never a repository. The rules on a
//! value are here; the driver measures what the values point at on the machine (whether it
//! exists, where its links lead) and binds each one read-only.

use crate::paths::covers;

/// The Git config key, multi-valued.
pub const SETTING: &str = "bay.checkReadPath";

/// The absolute path a value names: itself when absolute, under `home` (the machine's `HOME`)
/// when it starts with `~/`. Empty and `.` parts are dropped.
///
/// Any other value is refused, naming it, and so is a `..` part: where such a path leads
/// depends on links the value does not show, and the sandbox binds a path where it says.
pub fn expand(value: &str, home: Option<&str>) -> Result<String, String> {
    let absolute = if value.starts_with('/') {
        value.to_owned()
    } else if let Some(rest) = value.strip_prefix("~/") {
        match home {
            Some(home) if home.starts_with('/') => format!("{home}/{rest}"),
            _ => {
                return Err(format!(
                    "{SETTING} {value:?} is under ~/, but this machine's HOME is not an \
                     absolute path, so bay cannot tell which directory it names"
                ));
            }
        }
    } else {
        return Err(format!(
            "{SETTING} {value:?} is neither an absolute path nor under ~/; name the directory \
             as /path/to/dir or ~/path/to/dir"
        ));
    };
    if absolute.split('/').any(|part| part == "..") {
        return Err(format!(
            "{SETTING} {value:?} has a `..` part; name the directory without one"
        ));
    }
    let parts: Vec<&str> = absolute
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    Ok(format!("/{}", parts.join("/")))
}

/// Whether two absolute paths overlap: they are the same, or one lies under the other.
pub fn overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches('/'), b.trim_start_matches('/'));
    covers(a, b) || covers(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_absolute_or_under_home() {
        assert_eq!(expand("/opt/cache/", None), Ok("/opt/cache".into()));
        assert_eq!(
            expand("~/.cache//pnpm", Some("/home/ci")),
            Ok("/home/ci/.cache/pnpm".into())
        );
        assert_eq!(expand("~/", Some("/home/ci")), Ok("/home/ci".into()));
        for value in ["cache", "~", "~ci/x", "./x", ""] {
            let why = expand(value, Some("/home/ci")).expect_err(value);
            assert!(
                why.contains(&format!(
                    "{value:?} is neither an absolute path nor under ~/"
                )),
                "{why}"
            );
        }
        let why = expand("~/x", None).expect_err("no HOME");
        assert!(why.contains("\"~/x\""), "{why}");
        let why = expand("/opt/../home", None).expect_err("a .. part");
        assert!(why.contains("\"/opt/../home\""), "{why}");
    }

    #[test]
    fn paths_overlap_when_one_holds_the_other() {
        assert!(overlaps("/home/ci", "/home/ci/repo/.git"));
        assert!(overlaps("/home/ci/repo/.git/objects", "/home/ci/repo"));
        assert!(overlaps("/", "/anything"));
        assert!(overlaps("/a/b", "/a/b"));
        assert!(!overlaps("/home/ci/repo2", "/home/ci/repo"));
        assert!(!overlaps("/opt/cache", "/home/ci/repo"));
    }
}
