//! OpenSSH allowed-signers files (ssh-keygen(1), ALLOWED SIGNERS): who may sign, with which
//! key, under which namespaces.
//!
//! Each line is `principals [options] keytype base64 [comment]`; empty lines and lines that
//! start with `#` are comments. `principals` is a comma-separated pattern list (`*`, `?`, and
//! `!` to negate); the options bay knows are `cert-authority`, `namespaces="…"`,
//! `valid-after="…"` and `valid-before="…"`. The reader never panics: a line it cannot read
//! is refused by its number, and the whole file with it.

use serde::Serialize;

use super::key::{PublicKey, clip};

/// A file of allowed signers, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedSigners {
    pub entries: Vec<Entry>,
}

/// One line of an allowed-signers file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The line's number, from 1.
    pub line: usize,
    /// The principal patterns, unquoted, in order.
    pub principals: Vec<String>,
    pub options: Options,
    pub key: PublicKey,
    /// Text after the key, if any.
    pub comment: Option<String>,
}

/// The options of one line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The key is a certificate authority: it vouches for certificates, and a plain
    /// signature by it never matches the line.
    pub cert_authority: bool,
    /// The namespaces the key may sign under (patterns); none: any.
    pub namespaces: Option<Vec<String>>,
    pub valid_after: Option<String>,
    pub valid_before: Option<String>,
}

impl Options {
    pub fn is_empty(&self) -> bool {
        *self == Options::default()
    }
}

/// A line bay cannot read, by its number (from 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineError {
    pub line: usize,
    pub why: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.why)
    }
}

/// The longest file bay reads: far beyond any fleet's keys, so a hostile file costs little.
pub const MAX_BYTES: usize = 1 << 20;

impl AllowedSigners {
    /// Reads a whole file; the first line it cannot read refuses it.
    pub fn parse(text: &str) -> Result<AllowedSigners, LineError> {
        if text.len() > MAX_BYTES {
            return Err(LineError {
                line: 0,
                why: format!("the file is over {MAX_BYTES} bytes"),
            });
        }
        let mut entries = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let trimmed = line.trim_matches([' ', '\t', '\r']);
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let line_no = index + 1;
            let entry =
                parse_line(trimmed, line_no).map_err(|why| LineError { line: line_no, why })?;
            entries.push(entry);
        }
        Ok(AllowedSigners { entries })
    }

    /// The lines whose principals match `principal`.
    pub fn for_principal<'a>(&'a self, principal: &'a str) -> impl Iterator<Item = &'a Entry> {
        self.entries
            .iter()
            .filter(move |entry| entry.matches_principal(principal))
    }

    /// The lines that hold `key`.
    pub fn for_key<'a>(&'a self, key: &'a PublicKey) -> impl Iterator<Item = &'a Entry> {
        self.entries.iter().filter(move |entry| entry.key == *key)
    }
}

impl Entry {
    /// Whether `principal` matches the line's pattern list, as OpenSSH's `match_pattern_list`
    /// judges it: some pattern matches, and no negated one does.
    pub fn matches_principal(&self, principal: &str) -> bool {
        pattern_list(&self.principals, principal)
    }

    /// Whether the line lets its key sign under `namespace`.
    pub fn allows_namespace(&self, namespace: &str) -> bool {
        match &self.options.namespaces {
            None => true,
            Some(list) => pattern_list(list, namespace),
        }
    }
}

fn pattern_list(patterns: &[String], text: &str) -> bool {
    let mut found = false;
    for pattern in patterns {
        match pattern.strip_prefix('!') {
            Some(negated) if glob(negated.as_bytes(), text.as_bytes()) => return false,
            Some(_) => {}
            None => found |= glob(pattern.as_bytes(), text.as_bytes()),
        }
    }
    found
}

/// `*` and `?` wildcards, iteratively (no recursion, so no pattern can exhaust the stack).
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|&c| c == b'*')
}

/// Splits off one field: up to unquoted white space; a `"` opens a quote that must close.
fn field(text: &str) -> Result<(&str, &str), String> {
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => {
                return Ok((&text[..i], text[i..].trim_start_matches([' ', '\t'])));
            }
            _ => {}
        }
    }
    match quoted {
        true => Err("a quote is not closed".into()),
        false => Ok((text, "")),
    }
}

fn unquote(text: &str) -> &str {
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
}

fn is_key_type(word: &str) -> bool {
    ssh_key::Algorithm::new(word).is_ok()
        || word.starts_with("ssh-")
        || word.starts_with("ecdsa-")
        || word.starts_with("sk-")
}

fn parse_line(line: &str, line_no: usize) -> Result<Entry, String> {
    let (principals, rest) = field(line)?;
    let principals: Vec<String> = unquote(principals).split(',').map(str::to_owned).collect();
    if principals.iter().any(String::is_empty) || principals.iter().any(|p| p.contains('"')) {
        return Err("the principals field holds an empty or quoted name".into());
    }
    let (next, rest) = field(rest)?;
    let (options, keytype, rest) = match is_key_type(next) {
        true => (Options::default(), next, rest),
        false => {
            let options = parse_options(next)?;
            let (keytype, rest) = field(rest)?;
            (options, keytype, rest)
        }
    };
    if keytype.is_empty() {
        return Err("the line has no key".into());
    }
    let (base64, rest) = field(rest)?;
    if base64.is_empty() {
        return Err(format!("the `{}` key has no data", clip(keytype)));
    }
    let key = PublicKey::from_fields(keytype, base64)?;
    let comment = (!rest.is_empty()).then(|| rest.to_owned());
    Ok(Entry {
        line: line_no,
        principals,
        options,
        key,
        comment,
    })
}

fn parse_options(text: &str) -> Result<Options, String> {
    let mut options = Options::default();
    let mut rest = text;
    while !rest.is_empty() {
        // One option: up to an unquoted comma.
        let mut quoted = false;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let option = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        let (name, value) = match option.split_once('=') {
            Some((name, value)) => (name, Some(unquote(value))),
            None => (option, None),
        };
        match (name.to_ascii_lowercase().as_str(), value) {
            ("cert-authority", None) => options.cert_authority = true,
            ("namespaces", Some(list)) => {
                options.namespaces = Some(list.split(',').map(str::to_owned).collect())
            }
            ("valid-after", Some(time)) => options.valid_after = Some(time.to_owned()),
            ("valid-before", Some(time)) => options.valid_before = Some(time.to_owned()),
            _ => {
                return Err(format!(
                    "`{}` is not an option bay knows, nor a key type",
                    clip(option)
                ));
            }
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

    #[test]
    fn reads_lines_with_patterns_options_and_comments() {
        let text = format!(
            "# a comment\n\nalice {ED}\n\"bob,carol\" namespaces=\"git,bay-*\" {ED} a laptop\n*@bay,!eve@bay cert-authority {ED}\n"
        );
        let file = AllowedSigners::parse(&text).expect("reads");
        assert_eq!(file.entries.len(), 3);
        assert_eq!(file.entries[0].line, 3);
        assert_eq!(file.entries[1].principals, ["bob", "carol"]);
        assert!(file.entries[1].allows_namespace("bay-verdict"));
        assert!(!file.entries[1].allows_namespace("file"));
        assert_eq!(file.entries[1].comment.as_deref(), Some("a laptop"));
        assert!(file.entries[2].options.cert_authority);
        assert!(file.entries[2].matches_principal("agent-7@bay"));
        assert!(!file.entries[2].matches_principal("eve@bay"));
        assert_eq!(file.entries[0].key.openssh(), ED);
    }

    #[test]
    fn refuses_a_bad_line_by_its_number() {
        for (text, why) in [
            ("alice\n", "no key"),
            ("alice ssh-ed25519\n", "no data"),
            ("alice ssh-ed25519 AAAA\n", "not an OpenSSH public key"),
            ("alice bogus=1 ssh-ed25519 AAAA\n", "not an option"),
            ("\"alice ssh-ed25519 AAAA\n", "quote is not closed"),
            (",alice ssh-ed25519 AAAA\n", "empty or quoted"),
        ] {
            let text = format!("# ok\n{text}");
            let err = AllowedSigners::parse(&text).expect_err(text.as_str());
            assert_eq!(err.line, 2, "{text}");
            assert!(err.why.contains(why), "{text}: {}", err.why);
        }
        let mismatch =
            "alice ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
        let err = AllowedSigners::parse(mismatch).expect_err("a type that is not its data's");
        assert_eq!(err.line, 1);
    }

    #[test]
    fn globs_match_as_openssh_does() {
        assert!(glob(b"a*c", b"abbbc"));
        assert!(glob(b"*", b""));
        assert!(glob(b"a?c", b"abc"));
        assert!(!glob(b"a?c", b"ac"));
        assert!(!glob(b"abc", b"abcd"));
        assert!(glob(b"*b*", b"aaabaaa"));
    }

    #[test]
    fn never_panics_on_odd_bytes() {
        for text in [
            "\"",
            "a \"",
            "a b=\"",
            "a ,,, x",
            "\u{0} \u{0} \u{0}",
            "a cert-authority",
            "ü ü ü",
        ] {
            let _ = AllowedSigners::parse(text);
        }
    }
}
