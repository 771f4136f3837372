//! A program's options and operands, read the way getopt and Git's parse-options read them:
//! clusters of short flags (`-fu`), a short option's value in the rest of its cluster or the
//! next word (`-C dir`, `-Cdir`), long options with `=` or, when they need a value, the next
//! word (`--git-dir x`), and `--` ending the options.
//!
//! Only the options that take a value need to be listed, so that a value is never read as a
//! flag or an operand. The deny list asks about a few flags by name; everything else is
//! skipped.

use super::lex::Word;

/// How one program reads its arguments.
#[derive(Debug)]
pub struct Spec {
    /// Short options that need a value.
    pub short_values: &'static [u8],
    /// Long options that need a value, which may be the next word.
    pub long_values: &'static [&'static str],
    /// Options end at the first operand, as for `env`, `sudo` and Git's own options before the
    /// subcommand; otherwise options and operands mix, as Git's subcommands allow.
    pub posix: bool,
    /// `+o`-style words are options too, as for the shells.
    pub plus: bool,
}

impl Spec {
    /// A program whose options end at its first operand.
    pub const fn posix(short_values: &'static [u8], long_values: &'static [&'static str]) -> Spec {
        Spec {
            short_values,
            long_values,
            posix: true,
            plus: false,
        }
    }

    /// A Git subcommand, whose options and operands mix.
    pub const fn mixed(short_values: &'static [u8], long_values: &'static [&'static str]) -> Spec {
        Spec {
            posix: false,
            ..Spec::posix(short_values, long_values)
        }
    }
}

/// One option as written: a letter of a short cluster or a long name, with its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opt<'w> {
    Short(u8, Option<&'w str>),
    Long(&'w str, Option<&'w str>),
}

/// The options of one command line, its operands, and where `--` stood among them.
#[derive(Debug, Default)]
pub struct Parsed<'w> {
    pub options: Vec<Opt<'w>>,
    /// Under a `posix` spec, the first operand and every word after it.
    pub operands: Vec<&'w Word>,
    /// How many operands came before `--`, when it was given.
    pub dashdash: Option<usize>,
}

/// Reads `words` (the arguments, without the program's name) by `spec`.
pub fn parse<'w>(words: &'w [Word], spec: &Spec) -> Parsed<'w> {
    let mut parsed = Parsed::default();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        let text = word.text.as_str();
        let optionish =
            text.len() > 1 && (text.starts_with('-') || (spec.plus && text.starts_with('+')));
        if parsed.dashdash.is_some() || !optionish {
            parsed.operands.push(word);
            if spec.posix {
                parsed.operands.extend(rest);
                break;
            }
        } else if text == "--" {
            parsed.dashdash = Some(parsed.operands.len());
            if spec.posix {
                parsed.operands.extend(rest);
                break;
            }
        } else if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None if spec.long_values.contains(&long) => {
                    (long, rest.next().map(|w| w.text.as_str()))
                }
                None => (long, None),
            };
            parsed.options.push(Opt::Long(name, value));
        } else {
            let cluster = &text[1..];
            for (at, letter) in cluster.bytes().enumerate() {
                if spec.short_values.contains(&letter) {
                    let attached = &cluster[at + 1..];
                    let value = if attached.is_empty() {
                        rest.next().map(|w| w.text.as_str())
                    } else {
                        Some(attached)
                    };
                    parsed.options.push(Opt::Short(letter, value));
                    break;
                }
                parsed.options.push(Opt::Short(letter, None));
            }
        }
    }
    parsed
}

impl<'w> Parsed<'w> {
    /// Whether a cluster holds `letter`.
    pub fn short(&self, letter: u8) -> bool {
        self.options
            .iter()
            .any(|opt| matches!(opt, Opt::Short(l, _) if *l == letter))
    }

    /// Whether a long option names one of `names`, in full or abbreviated, as Git accepts any
    /// unambiguous start of a long option's name (`--forc`, `--mirr`). An ambiguous start Git
    /// refuses, so counting it costs nothing.
    pub fn long(&self, names: &[&str]) -> bool {
        self.options.iter().any(|opt| match opt {
            Opt::Long(given, _) => {
                !given.is_empty() && names.iter().any(|name| name.starts_with(given))
            }
            Opt::Short(..) => false,
        })
    }

    /// The value of the short option `letter` or the long option `name` (in full), last one
    /// given winning.
    pub fn value(&self, letter: u8, name: &str) -> Option<&'w str> {
        self.options.iter().rev().find_map(|opt| match *opt {
            Opt::Short(l, value) if l == letter => value,
            Opt::Long(given, value) if given == name => value,
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Word> {
        text.split(' ')
            .map(|w| Word {
                text: w.to_owned(),
                dynamic: false,
            })
            .collect()
    }

    const GIT: Spec = Spec::posix(b"Cc", &["git-dir"]);
    const PUSH: Spec = Spec::mixed(b"o", &["repo"]);

    fn texts(parsed: &Parsed<'_>) -> Vec<String> {
        parsed.operands.iter().map(|w| w.text.clone()).collect()
    }

    #[test]
    fn values_are_taken_attached_or_from_the_next_word() {
        let all = words("-C dir -cuser.name=x --git-dir d --work-tree=w -P push -f");
        let parsed = parse(&all, &GIT);
        assert_eq!(parsed.value(b'C', ""), Some("dir"));
        assert_eq!(parsed.value(b'c', ""), Some("user.name=x"));
        assert_eq!(parsed.value(0, "git-dir"), Some("d"));
        assert_eq!(parsed.value(0, "work-tree"), Some("w"));
        assert!(parsed.short(b'P'));
        assert_eq!(
            texts(&parsed),
            ["push", "-f"],
            "options end at the subcommand"
        );
    }

    #[test]
    fn clusters_and_abbreviations_are_read() {
        let all = words("-vfu origin --forc -oci.skip x -- -y");
        let parsed = parse(&all, &PUSH);
        assert!(parsed.short(b'f') && parsed.short(b'u') && parsed.short(b'v'));
        assert!(parsed.long(&["force"]));
        assert!(!parsed.long(&["all"]));
        assert_eq!(parsed.value(b'o', ""), Some("ci.skip"));
        assert_eq!(texts(&parsed), ["origin", "x", "-y"]);
        assert_eq!(parsed.dashdash, Some(2));
        assert!(!parse(&words("--no-force"), &PUSH).long(&["force"]));
    }

    #[test]
    fn a_lone_dash_is_an_operand() {
        assert_eq!(texts(&parse(&words("- x"), &PUSH)), ["-", "x"]);
    }
}
