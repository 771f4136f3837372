//! A strict walker over one TOML document, shared by the parsers of `.bay/config.toml` and
//! `.bay/policy.toml`.
//!
//! bay refuses what it does not understand. A key it skipped could change what a merge must
//! pass, so a silently ignored typo is worse than a refusal. A parser therefore takes each key
//! it knows, with its type, table by table, and this layer refuses whatever is left. Every
//! refusal names the key, the table and the line, so a person can fix the file without
//! guessing. The walker never panics on any input: each problem comes back as a [`TomlError`].

use std::collections::BTreeSet;
use std::fmt;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

/// One problem in a TOML document, located well enough for a person to find and fix it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TomlError {
    /// The key at fault, as written but unquoted; `None` when the fault is not one key's.
    pub key: Option<String>,
    /// Where the key sits, as a person names it: `top level`, `[runner]`, `[[check]] #2`.
    pub table: String,
    /// The 1-based line of the key, or of the table when no key is at fault.
    pub line: u32,
    /// What is wrong, phrased to follow "`key` in table on line n".
    pub message: String,
}

impl fmt::Display for TomlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(
                f,
                "`{}` in {} on line {} {}",
                show_key(key),
                self.table,
                self.line,
                self.message
            ),
            None => write!(f, "{} on line {} {}", self.table, self.line, self.message),
        }
    }
}

impl std::error::Error for TomlError {}

/// What a refusal of a key bay defines but does not act on yet says after "`key` in table on
/// line n".
pub const NOT_YET: &str = "is part of bay, but this version of bay does not support it yet; \
     remove it for now: bay refuses it rather than ignore it, because ignoring it would change \
     what bay enforces";

/// Keys and tables bay defines but this version does not act on yet, noted while a parser
/// validates them.
///
/// A parser validates such a key as fully as any other, notes it here, and only once the whole
/// file is otherwise valid refuses the first noted one in text order. So a wrong value gets its
/// own precise error, and removing the refused key never uncovers another mistake behind it.
#[derive(Debug, Default)]
pub struct NotYet(Vec<TomlError>);

impl NotYet {
    /// Notes `key` of `table`, when the table holds it.
    pub fn key(&mut self, table: &Table<'_, '_>, key: &str) {
        if table.has(key) {
            self.0.push(table.unsupported(key));
        }
    }

    /// Notes every key of `child`, which is the table `key` of `parent`; an empty table is
    /// noted by its own name, so that even `[table]` alone is refused.
    pub fn table(&mut self, parent: &Table<'_, '_>, key: &str, child: &Table<'_, '_>) {
        let keys = child.keys();
        if keys.is_empty() {
            self.key(parent, key);
        }
        for inner in keys {
            self.key(child, inner.value);
        }
    }

    /// Notes a refusal worded by the parser, such as one about a value rather than a key.
    pub fn note(&mut self, error: TomlError) {
        self.0.push(error);
    }

    /// Refuses the first noted key in text order, if any.
    pub fn finish(self) -> Result<(), TomlError> {
        match self.0.into_iter().min_by_key(|error| error.line) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// A value from an array, with the line it sits on: a long array spans lines, and an error
/// about one entry should point at that entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located<T> {
    pub value: T,
    pub line: u32,
}

/// A parsed document, with the index that turns any byte span of its text into a line number.
pub struct Document<'i> {
    lines: Lines,
    root: DeTable<'i>,
}

impl fmt::Debug for Document<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Document")
            .field("keys", &self.root.len())
            .finish_non_exhaustive()
    }
}

impl<'i> Document<'i> {
    /// Parses TOML text. A syntax error comes back with its line, and with no key.
    pub fn parse(text: &'i str) -> Result<Document<'i>, TomlError> {
        match DeTable::parse(text) {
            Ok(root) => Ok(Document {
                lines: Lines::new(text),
                root: root.into_inner(),
            }),
            Err(error) => {
                // Without a span the parser ran out of text, so the end is where it stopped.
                let offset = error.span().map_or(text.len(), |span| span.start);
                Err(TomlError {
                    key: None,
                    table: "the text".to_owned(),
                    line: Lines::new(text).line(offset),
                    message: format!("is not valid TOML: {}", one_line(error.message())),
                })
            }
        }
    }

    /// The top-level table, where a walk starts.
    pub fn root(&self) -> Table<'_, 'i> {
        Table {
            lines: &self.lines,
            entries: &self.root,
            name: "top level".to_owned(),
            path: String::new(),
            suffix: String::new(),
            line: 1,
            taken: BTreeSet::new(),
        }
    }
}

/// One table of a document, with a record of the keys the parser has taken from it.
///
/// Taking a key marks it; [`Table::finish`] then refuses every key that was not taken. A
/// parser that also calls [`Table::check_keys`] first gets the better error when a table holds
/// both a misspelt key and a missing one: the misspelling is the cause, so it is named first.
pub struct Table<'a, 'i> {
    /// The document's one line index: a table never sees the text, so no lookup can scan it.
    lines: &'a Lines,
    entries: &'a DeTable<'i>,
    /// How a person names this table in an error.
    name: String,
    /// The dotted path of this table, quoted where TOML needs quotes; names child tables.
    path: String,
    /// Appended to the names of child tables of an array element: ` of [[target]] #2`.
    suffix: String,
    /// The line of the table's header, or of its first key when it has no header.
    line: u32,
    taken: BTreeSet<&'a str>,
}

impl fmt::Debug for Table<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("line", &self.line)
            .field("taken", &self.taken)
            .finish_non_exhaustive()
    }
}

type Entry<'a, 'i> = (&'a Spanned<DeString<'i>>, &'a Spanned<DeValue<'i>>);

impl<'a, 'i> Table<'a, 'i> {
    /// How a person names this table: `top level`, `[runner]`, `[[check]] #2`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The line where this table starts.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// Whether the table holds `key`, taken or not.
    pub fn has(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// The table's keys in the order they appear in the text, each with its line.
    pub fn keys(&self) -> Vec<Located<&'a str>> {
        self.entries_in_order()
            .into_iter()
            .map(|(key, _)| Located {
                value: key.get_ref().as_ref(),
                line: self.line_of_span(key),
            })
            .collect()
    }

    /// The line of `key`, or of the table when it lacks the key.
    pub fn line_of(&self, key: &str) -> u32 {
        self.entry(key)
            .map_or(self.line, |(k, _)| self.line_of_span(k))
    }

    /// An error about `key`, on the key's line.
    pub fn error(&self, key: &str, message: impl Into<String>) -> TomlError {
        self.error_at(key, self.line_of(key), message)
    }

    /// An error about `key`, on a given line: one entry of a long array.
    pub fn error_at(&self, key: &str, line: u32, message: impl Into<String>) -> TomlError {
        TomlError {
            key: Some(key.to_owned()),
            table: self.name.clone(),
            line,
            message: message.into(),
        }
    }

    /// An error about the table as a whole, on its first line.
    pub fn table_error(&self, message: impl Into<String>) -> TomlError {
        TomlError {
            key: None,
            table: self.name.clone(),
            line: self.line,
            message: message.into(),
        }
    }

    /// The error for a key that must be present and is not.
    pub fn missing(&self, key: &str) -> TomlError {
        self.error(key, "is required but missing")
    }

    /// Refuses, in text order, the first key that is neither in `known` nor in `unsupported`,
    /// and any key in `unsupported`. Call it before taking values, so that a misspelt or an
    /// unsupported key is named before the problems it causes.
    pub fn check_keys(&self, known: &[&str], unsupported: &[&str]) -> Result<(), TomlError> {
        for (key, _) in self.entries_in_order() {
            let key: &str = key.get_ref();
            if unsupported.contains(&key) {
                return Err(self.unsupported(key));
            }
            if !known.contains(&key) {
                return Err(self.unknown(key));
            }
        }
        Ok(())
    }

    /// Refuses the first key, in text order, that the parser did not take. Every parser ends
    /// each table with this, so that no key is ever silently ignored.
    pub fn finish(&self) -> Result<(), TomlError> {
        match self
            .entries_in_order()
            .into_iter()
            .find(|(key, _)| !self.taken.contains(key.get_ref().as_ref()))
        {
            Some((key, _)) => Err(self.unknown(key.get_ref())),
            None => Ok(()),
        }
    }

    /// The error for a key or table bay defines but this version does not act on yet.
    pub fn unsupported(&self, key: &str) -> TomlError {
        self.error(key, NOT_YET)
    }

    /// The error for a key bay does not know at all.
    pub fn unknown(&self, key: &str) -> TomlError {
        self.error(
            key,
            "is not a key this version of bay knows; check its spelling, or run `bay update` \
             if a newer bay added it",
        )
    }

    /// The string at `key`, without taking it: `None` when it is absent or no string. For a
    /// rule that must look at a key before the table's own reader takes and judges it.
    pub fn peek_string(&self, key: &str) -> Option<&'a str> {
        match self.entry(key)?.1.get_ref() {
            DeValue::String(text) => Some(text.as_ref()),
            _ => None,
        }
    }

    /// Takes an optional string.
    pub fn string(&mut self, key: &str) -> Result<Option<String>, TomlError> {
        match self.take(key) {
            None => Ok(None),
            Some(DeValue::String(text)) => Ok(Some(text.to_string())),
            Some(other) => Err(self.wrong_type(key, "a string", other)),
        }
    }

    /// Takes a string that must be present.
    pub fn required_string(&mut self, key: &str) -> Result<String, TomlError> {
        self.string(key)?.ok_or_else(|| self.missing(key))
    }

    /// Takes an optional boolean.
    pub fn bool(&mut self, key: &str) -> Result<Option<bool>, TomlError> {
        match self.take(key) {
            None => Ok(None),
            Some(DeValue::Boolean(value)) => Ok(Some(*value)),
            Some(other) => Err(self.wrong_type(key, "true or false", other)),
        }
    }

    /// Takes an optional integer of any sign.
    pub fn integer(&mut self, key: &str) -> Result<Option<i64>, TomlError> {
        match self.take(key) {
            None => Ok(None),
            Some(DeValue::Integer(integer)) => {
                match i64::from_str_radix(integer.as_str(), integer.radix()) {
                    Ok(value) => Ok(Some(value)),
                    Err(_) => Err(self.error(key, "must be an integer that fits in 64 bits")),
                }
            }
            Some(other) => Err(self.wrong_type(key, "an integer", other)),
        }
    }

    /// Takes an integer that must be present.
    pub fn required_integer(&mut self, key: &str) -> Result<i64, TomlError> {
        self.integer(key)?.ok_or_else(|| self.missing(key))
    }

    /// Takes an optional integer that must lie in `range`. The error states the range in
    /// words: "a positive integer", "an integer from 1 to 16".
    pub fn uint(
        &mut self,
        key: &str,
        range: RangeInclusive<u64>,
    ) -> Result<Option<u64>, TomlError> {
        let expected = describe_range(&range);
        match self.take(key) {
            None => Ok(None),
            Some(DeValue::Integer(integer)) => {
                match i64::from_str_radix(integer.as_str(), integer.radix()) {
                    Ok(value) => match u64::try_from(value) {
                        Ok(value) if range.contains(&value) => Ok(Some(value)),
                        _ => Err(self.error(key, format!("must be {expected}, but it is {value}"))),
                    },
                    Err(_) => {
                        Err(self.error(key, format!("must be {expected} that fits in 64 bits")))
                    }
                }
            }
            Some(other) => Err(self.wrong_type(key, &expected, other)),
        }
    }

    /// Takes a `uint` that must be present.
    pub fn required_uint(
        &mut self,
        key: &str,
        range: RangeInclusive<u64>,
    ) -> Result<u64, TomlError> {
        self.uint(key, range)?.ok_or_else(|| self.missing(key))
    }

    /// Takes an optional finite number in `range`. An integer counts too, because people
    /// write `0` and `1` for rates and TOML makes those integers.
    pub fn number(
        &mut self,
        key: &str,
        range: RangeInclusive<f64>,
    ) -> Result<Option<f64>, TomlError> {
        let expected = format!("a number from {} to {}", range.start(), range.end());
        let value = match self.take(key) {
            None => return Ok(None),
            Some(DeValue::Float(float)) => float.as_str().parse::<f64>().ok(),
            Some(DeValue::Integer(integer)) => {
                i64::from_str_radix(integer.as_str(), integer.radix())
                    .ok()
                    .map(|v| v as f64)
            }
            Some(other) => return Err(self.wrong_type(key, &expected, other)),
        };
        match value {
            Some(value) if value.is_finite() && range.contains(&value) => Ok(Some(value)),
            _ => Err(self.error(key, format!("must be {expected}"))),
        }
    }

    /// Takes an optional array of strings, each with its line.
    pub fn strings(&mut self, key: &str) -> Result<Option<Vec<Located<String>>>, TomlError> {
        let array = match self.take(key) {
            None => return Ok(None),
            Some(DeValue::Array(array)) => array,
            Some(other) => return Err(self.wrong_type(key, "an array of strings", other)),
        };
        let mut out = Vec::with_capacity(array.len());
        for item in array.iter() {
            let line = self.lines.line(item.span().start);
            match item.get_ref() {
                DeValue::String(text) => out.push(Located {
                    value: text.to_string(),
                    line,
                }),
                other => {
                    return Err(self.error_at(
                        key,
                        line,
                        format!(
                            "must be an array of strings, but one entry is {}",
                            found(other)
                        ),
                    ));
                }
            }
        }
        Ok(Some(out))
    }

    /// Takes an optional table: a `[header]` table, a dotted key or an inline table.
    pub fn table(&mut self, key: &str) -> Result<Option<Table<'a, 'i>>, TomlError> {
        let Some((name, value)) = self.entry(key) else {
            return Ok(None);
        };
        self.mark(name);
        match value.get_ref() {
            DeValue::Table(entries) => {
                let path = self.child_path(key);
                Ok(Some(Table {
                    lines: self.lines,
                    entries,
                    name: format!("[{path}]{}", self.suffix),
                    path,
                    suffix: self.suffix.clone(),
                    line: self.lines.line(value.span().start),
                    taken: BTreeSet::new(),
                }))
            }
            other => Err(self.wrong_type(key, "a table", other)),
        }
    }

    /// Takes an optional array of tables, `[[key]]`; left out, it is empty. Each table is
    /// named by its place from 1, because that is how a person counts them in the file.
    pub fn tables(&mut self, key: &str) -> Result<Vec<Table<'a, 'i>>, TomlError> {
        let Some((name, value)) = self.entry(key) else {
            return Ok(Vec::new());
        };
        self.mark(name);
        let path = self.child_path(key);
        let expected = format!("an array of tables, each written [[{path}]]");
        let DeValue::Array(array) = value.get_ref() else {
            return Err(self.wrong_type(key, &expected, value.get_ref()));
        };
        let mut out = Vec::with_capacity(array.len());
        for (index, item) in array.iter().enumerate() {
            let line = self.lines.line(item.span().start);
            let DeValue::Table(entries) = item.get_ref() else {
                return Err(self.error_at(
                    key,
                    line,
                    format!(
                        "must be {expected}, but one entry is {}",
                        found(item.get_ref())
                    ),
                ));
            };
            let name = format!("[[{path}]] #{}{}", index + 1, self.suffix);
            out.push(Table {
                lines: self.lines,
                entries,
                suffix: format!(" of {name}"),
                name,
                path: path.clone(),
                line,
                taken: BTreeSet::new(),
            });
        }
        Ok(out)
    }

    fn entry(&self, key: &str) -> Option<Entry<'a, 'i>> {
        self.entries.get_key_value(key)
    }

    fn entries_in_order(&self) -> Vec<Entry<'a, 'i>> {
        let mut entries: Vec<Entry<'a, 'i>> = self.entries.iter().collect();
        entries.sort_by_key(|(key, _)| key.span().start);
        entries
    }

    fn mark(&mut self, key: &'a Spanned<DeString<'i>>) {
        self.taken.insert(key.get_ref().as_ref());
    }

    fn take(&mut self, key: &str) -> Option<&'a DeValue<'i>> {
        let (name, value) = self.entry(key)?;
        self.mark(name);
        Some(value.get_ref())
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            show_key(key)
        } else {
            format!("{}.{}", self.path, show_key(key))
        }
    }

    fn line_of_span<T>(&self, spanned: &Spanned<T>) -> u32 {
        self.lines.line(spanned.span().start)
    }

    fn wrong_type(&self, key: &str, expected: &str, value: &DeValue<'_>) -> TomlError {
        self.error(
            key,
            format!("must be {expected}, but it is {}", found(value)),
        )
    }
}

/// Where the lines of a text break, found in one pass over it.
///
/// A parser asks the line of every table, key and array entry it reads. Counting newlines from
/// the start for each made a policy of n checks cost n² (8,000 checks took seconds); with the
/// breaks found once, each answer is a binary search, and a whole parse stays near linear.
#[derive(Debug)]
pub struct Lines {
    /// The byte offset of each `\n`, in increasing order.
    breaks: Vec<usize>,
    /// How many breaks the searches have looked at, for the test that holds them to log n.
    #[cfg(test)]
    probes: std::cell::Cell<usize>,
}

impl Lines {
    pub fn new(text: &str) -> Lines {
        Lines {
            breaks: text
                .bytes()
                .enumerate()
                .filter(|&(_, byte)| byte == b'\n')
                .map(|(offset, _)| offset)
                .collect(),
            #[cfg(test)]
            probes: std::cell::Cell::new(0),
        }
    }

    /// The 1-based line holding byte `offset`: one more than the breaks before it.
    pub fn line(&self, offset: usize) -> u32 {
        let before = self.breaks.partition_point(|&at| {
            #[cfg(test)]
            self.probes.set(self.probes.get() + 1);
            at < offset
        });
        u32::try_from(before.saturating_add(1)).unwrap_or(u32::MAX)
    }
}

/// A key as a person would write it in the file: bare when TOML allows, else quoted.
pub fn show_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

/// A string value as an error shows it: quoted, escaped onto one line, and cut when long.
pub fn show_value(value: &str) -> String {
    const LIMIT: usize = 60;
    if value.chars().count() <= LIMIT {
        format!("{value:?}")
    } else {
        let cut: String = value.chars().take(LIMIT).collect();
        format!("{:?}...", cut)
    }
}

/// What a value is, for "but it is ...": the value itself when short and plain, else its type.
fn found(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(text) => format!("the string {}", show_value(text)),
        DeValue::Integer(integer) => match i64::from_str_radix(integer.as_str(), integer.radix()) {
            Ok(value) => format!("the integer {value}"),
            Err(_) => "an integer too large for 64 bits".to_owned(),
        },
        DeValue::Float(_) => "a number with a fraction".to_owned(),
        DeValue::Boolean(value) => format!("{value}"),
        DeValue::Datetime(_) => "a date or time".to_owned(),
        DeValue::Array(_) => "an array".to_owned(),
        DeValue::Table(_) => "a table".to_owned(),
    }
}

fn describe_range(range: &RangeInclusive<u64>) -> String {
    let (low, high) = (*range.start(), *range.end());
    // TOML integers stop at i64::MAX, so any bound past it means "no upper bound".
    let unbounded = high >= i64::MAX as u64;
    match (low, unbounded) {
        (0, true) => "a non-negative integer".to_owned(),
        (1, true) => "a positive integer".to_owned(),
        (low, true) => format!("an integer of at least {low}"),
        (low, false) => format!("an integer from {low} to {high}"),
    }
}

/// Folds a multi-line message onto one line, so that an error stays one sentence.
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Document<'_> {
        Document::parse(text).expect("the test text is valid TOML")
    }

    #[test]
    fn type_errors_name_key_table_line_and_type() {
        let text =
            "a = 1\n\n[[check]]\nid = \"x\"\n\n[[check]]\nid = \"y\"\nexpected_minimum = -3\n";
        let doc = parse(text);
        let mut root = doc.root();
        let mut checks = root.tables("check").expect("an array of tables");
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[1].name(), "[[check]] #2");
        assert_eq!(checks[1].line(), 6);
        let error = checks[1]
            .uint("expected_minimum", 0..=u64::MAX)
            .expect_err("negative");
        assert_eq!(error.key.as_deref(), Some("expected_minimum"));
        assert_eq!(error.table, "[[check]] #2");
        assert_eq!(error.line, 8);
        assert_eq!(
            error.to_string(),
            "`expected_minimum` in [[check]] #2 on line 8 must be a non-negative integer, but it is -3"
        );
        let error = checks[0].bool("id").expect_err("a string is not a bool");
        assert_eq!(error.line, 4);
        assert!(
            error
                .to_string()
                .contains("must be true or false, but it is the string \"x\"")
        );
    }

    #[test]
    fn finish_refuses_the_first_untaken_key_in_text_order() {
        let doc = parse("zeta = 1\nalpha = 2\n[runner]\nlease_s = 3\nbogus = 4\n");
        let mut root = doc.root();
        let mut runner = root.table("runner").expect("a table").expect("present");
        assert_eq!(runner.name(), "[runner]");
        assert_eq!(runner.uint("lease_s", 1..=u64::MAX), Ok(Some(3)));
        let error = runner.finish().expect_err("bogus is left");
        assert_eq!((error.key.as_deref(), error.line), (Some("bogus"), 5));
        let error = root.finish().expect_err("zeta and alpha are left");
        assert_eq!(
            (error.key.as_deref(), error.line),
            (Some("zeta"), 1),
            "text order, not sorted"
        );
        root.integer("zeta").expect("an integer");
        root.integer("alpha").expect("an integer");
        assert_eq!(root.finish(), Ok(()));
    }

    #[test]
    fn check_keys_names_unsupported_and_unknown_keys() {
        let doc = parse("known = 1\nlater = 2\nsoon = 3\n");
        let root = doc.root();
        let error = root
            .check_keys(&["known"], &["soon"])
            .expect_err("later is unknown");
        assert_eq!(error.key.as_deref(), Some("later"));
        assert!(error.message.contains("not a key"));
        let error = root
            .check_keys(&["known", "later"], &["soon"])
            .expect_err("soon");
        assert_eq!((error.key.as_deref(), error.line), (Some("soon"), 3));
        assert!(error.message.contains("does not support"));
        assert_eq!(root.check_keys(&["known", "later", "soon"], &[]), Ok(()));
    }

    #[test]
    fn syntax_errors_give_a_line() {
        let error = Document::parse("a = 1\nb = \"open\nc = 3\n").expect_err("unterminated");
        assert_eq!(error.key, None);
        assert_eq!(error.line, 2);
        assert!(
            error
                .to_string()
                .starts_with("the text on line 2 is not valid TOML")
        );
        assert!(!error.to_string().contains('\n'));
        let error = Document::parse("a = 1\na = 2\n").expect_err("duplicate");
        assert_eq!(error.line, 2);
        let error = Document::parse("[t]\nx = 1\n[t]\n").expect_err("table twice");
        assert_eq!(error.line, 3);
    }

    #[test]
    fn nested_and_inline_tables_are_named_by_path() {
        let doc = parse("[plugin.notify]\ncommand = \"n\"\n[runner]\nbatch = { min = 2 }\n");
        let mut root = doc.root();
        let mut plugin = root.table("plugin").expect("table").expect("present");
        let notify = plugin.table("notify").expect("table").expect("present");
        assert_eq!(notify.name(), "[plugin.notify]");
        assert_eq!(notify.line(), 1);
        let mut runner = root.table("runner").expect("table").expect("present");
        let batch = runner.table("batch").expect("table").expect("present");
        assert_eq!((batch.name(), batch.line()), ("[runner.batch]", 4));
        let doc = parse("[[target]]\nname = \"s\"\nx = { y = 1 }\n");
        let mut root = doc.root();
        let mut targets = root.tables("target").expect("tables");
        let inner = targets[0].table("x").expect("table").expect("present");
        assert_eq!(inner.name(), "[target.x] of [[target]] #1");
    }

    #[test]
    fn strings_give_each_entry_its_line() {
        let doc = parse("list = [\n  \"a\",\n  \"b\",\n]\nbad = [\"a\",\n 2]\n");
        let mut root = doc.root();
        let list = root.strings("list").expect("strings").expect("present");
        assert_eq!(
            list.iter().map(|item| item.line).collect::<Vec<_>>(),
            vec![2, 3]
        );
        let error = root.strings("bad").expect_err("an integer entry");
        assert_eq!(error.line, 6);
    }

    #[test]
    fn integers_check_range_radix_and_size() {
        let doc = parse("a = 0x10\nb = 17\nc = 0\nd = 9_223_372_036_854_775_807\ne = 1.5\n");
        let mut root = doc.root();
        assert_eq!(root.uint("a", 1..=16), Ok(Some(16)));
        let error = root.uint("b", 1..=16).expect_err("out of range");
        assert!(
            error
                .message
                .contains("an integer from 1 to 16, but it is 17")
        );
        let error = root
            .uint("c", 1..=u64::MAX)
            .expect_err("zero is not positive");
        assert!(error.message.contains("a positive integer"));
        assert_eq!(root.integer("d"), Ok(Some(i64::MAX)));
        let error = root.integer("e").expect_err("a float");
        assert!(error.message.contains("fraction"));
        assert_eq!(root.number("e", 0.0..=2.0), Ok(Some(1.5)));
    }

    /// Every line a walk asks for is a binary search of the one index the document built:
    /// at most log2(breaks) + 1 probes, however long the file. A lookup that scanned the text,
    /// as one per key once did, would make a policy of n checks cost n².
    #[test]
    fn each_line_is_a_binary_search_of_one_index_however_long_the_file() {
        for checks in [10, 1_000, 20_000] {
            let text: String = (0..checks)
                .map(|i| format!("[[check]]\nid = \"c{i}\"\nadapter = [\n  \"a\",\n  \"b\",\n]\n"))
                .collect();
            let doc = parse(&text);
            let mut root = doc.root();
            let mut lookups = 0;
            for (i, mut table) in root
                .tables("check")
                .expect("tables")
                .into_iter()
                .enumerate()
            {
                let first = u32::try_from(6 * i + 1).expect("small");
                let adapter = table.strings("adapter").expect("strings").expect("present");
                let lines: Vec<u32> = adapter.iter().map(|entry| entry.line).collect();
                assert_eq!(
                    (table.line(), table.line_of("id"), lines),
                    (first, first + 1, vec![first + 3, first + 4])
                );
                lookups += 4;
            }
            let breaks = text.bytes().filter(|&b| b == b'\n').count();
            let per_lookup = (usize::BITS - breaks.leading_zeros() + 1) as usize;
            let probes = doc.lines.probes.get();
            assert!(
                probes <= lookups * per_lookup,
                "{checks} checks: {probes} probes for {lookups} lookups, over {per_lookup} each"
            );
        }
    }

    #[test]
    fn odd_keys_are_quoted_onto_one_line() {
        let doc = parse("\"a\\nb\" = 1\n");
        let error = doc.root().finish().expect_err("untaken");
        assert_eq!(error.to_string().lines().count(), 1);
        assert!(
            error
                .to_string()
                .starts_with("`\"a\\nb\"` in top level on line 1")
        );
    }
}
