//! The shell's grammar, as far as the deny list needs it: a script read into its simple
//! commands, each a list of words after quote removal.
//!
//! The words are the ones the shell would pass to the program, so `g'i't`, `"git"` and `\git`
//! all read `git`. Operators (`;`, `&`, `&&`, `|`, `||`, `|&`, newlines) end a command;
//! subshells `( ... )`, groups `{ ...; }`, command substitutions `$( ... )` and backticks,
//! process substitutions `<( ... )` and the expansions inside double quotes and unquoted
//! here-documents all add their commands to the same flat list, because each of them runs.
//! Redirections are dropped, but a here-document or here-string stays with its command, since
//! a shell reading its script from stdin (`bash <<EOF`) runs that text.
//!
//! The reader never expands anything: a word that holds `$x`, `$(...)` or backticks is marked
//! `dynamic`, and keeps its source text. It gives up (an [`Unread`]) on what it cannot follow:
//! an unterminated quote or substitution, a `)` with no `(`, nesting deeper than
//! [`MAX_NESTING`], or a script longer than the work budget allows. The caller decides what
//! an unread script means.

use super::Work;

/// How deep subshells, substitutions and backticks may nest inside one script. Real commands
/// nest two or three levels; the bound keeps the reader's recursion off the stack's end.
pub const MAX_NESTING: usize = 16;

/// One word of a simple command, as the program receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The word after quote removal. An expansion stays as its source text, such as `$HOME`.
    pub text: String,
    /// The word holds an expansion, so the shell decides part of it only when it runs.
    pub dynamic: bool,
}

/// One simple command: its words, assignments and wrappers included, and the text it reads on
/// stdin from here-documents (`<<`) and here-strings (`<<<`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
    pub stdin: Vec<String>,
}

/// Why a script could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unread {
    /// A quote, substitution or subshell that the script never closes.
    Unterminated,
    /// A `)` with no `(`, or a redirection with nothing to redirect to.
    Unbalanced,
    /// Nesting deeper than [`MAX_NESTING`].
    TooDeep,
    /// More text to read than the work budget holds.
    TooLong,
}

/// Reads `script` into its simple commands, in the order they start.
pub fn commands(script: &str, work: &mut Work) -> Result<Vec<Command>, Unread> {
    let mut lexer = Lexer::new(script, 0, work)?;
    lexer.list(false)?;
    Ok(lexer.out)
}

/// A here-document whose body starts after the next newline.
struct PendingDoc {
    delimiter: String,
    strip_tabs: bool,
    /// The delimiter was unquoted, so the body's `$( ... )` and backticks run.
    expands: bool,
    command: usize,
}

struct Lexer<'a, 'w> {
    src: &'a [u8],
    at: usize,
    depth: usize,
    out: Vec<Command>,
    pending: Vec<PendingDoc>,
    work: &'w mut Work,
}

/// Bytes that end an unquoted word.
fn ends_word(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

impl<'a, 'w> Lexer<'a, 'w> {
    /// A reader of `src`; every pass over a text is charged to `work` once, up front, since the
    /// reader never steps back.
    fn new(src: &'a str, depth: usize, work: &'w mut Work) -> Result<Self, Unread> {
        if depth > MAX_NESTING {
            return Err(Unread::TooDeep);
        }
        work.charge(src.len())?;
        Ok(Lexer {
            src: src.as_bytes(),
            at: 0,
            depth,
            out: Vec::new(),
            pending: Vec::new(),
            work,
        })
    }

    fn peek(&self) -> Option<u8> {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.at + ahead).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.at += 1;
        }
        hit
    }

    /// Runs `read` one nesting level deeper.
    fn nested(&mut self, read: impl FnOnce(&mut Self) -> Result<(), Unread>) -> Result<(), Unread> {
        if self.depth >= MAX_NESTING {
            return Err(Unread::TooDeep);
        }
        self.depth += 1;
        let read = read(self);
        self.depth -= 1;
        read
    }

    /// Reads `text` as a script of its own (a backtick's body, an expanding here-document),
    /// one level deeper, and keeps its commands. `as_body` reads it as the inside of double
    /// quotes rather than as commands.
    fn sublex(&mut self, text: &str, as_body: bool) -> Result<(), Unread> {
        let mut inner = Lexer::new(text, self.depth + 1, self.work)?;
        if as_body {
            inner.double(&mut Vec::new(), &mut false, false)?;
        } else {
            inner.list(false)?;
        }
        let found = inner.out;
        self.out.extend(found);
        Ok(())
    }

    /// Reads commands until the end, or until the `)` that closes this list when `closed`.
    fn list(&mut self, closed: bool) -> Result<(), Unread> {
        let mut current: Option<usize> = None;
        loop {
            let Some(b) = self.peek() else {
                return if closed {
                    Err(Unread::Unterminated)
                } else {
                    Ok(())
                };
            };
            match b {
                b' ' | b'\t' => self.at += 1,
                // A line continuation between words joins the lines and makes no word.
                b'\\' if self.peek_at(1) == Some(b'\n') => self.at += 2,
                b'\n' => {
                    self.at += 1;
                    current = None;
                    self.here_docs()?;
                }
                b'&' if self.peek_at(1) == Some(b'>') => {
                    let at = self.command(&mut current);
                    self.redirect(at)?;
                }
                b';' | b'&' | b'|' => {
                    self.at += 1;
                    current = None;
                }
                b'(' => {
                    self.at += 1;
                    self.nested(|l| l.list(true))?;
                    current = None;
                }
                b')' if closed => {
                    self.at += 1;
                    return Ok(());
                }
                b')' => return Err(Unread::Unbalanced),
                b'#' => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.at += 1;
                    }
                }
                b'<' | b'>' if self.peek_at(1) == Some(b'(') => {
                    let word = self.process_substitution()?;
                    let at = self.command(&mut current);
                    self.out[at].words.push(word);
                }
                b'<' | b'>' => {
                    let at = self.command(&mut current);
                    self.redirect(at)?;
                }
                _ => {
                    let (word, plain) = self.word()?;
                    let fd = plain
                        && matches!(self.peek(), Some(b'<' | b'>'))
                        && word.text.bytes().all(|b| b.is_ascii_digit());
                    let at = self.command(&mut current);
                    if !fd {
                        self.out[at].words.push(word);
                    }
                }
            }
        }
    }

    /// The index of the command being read, opening one if none is.
    fn command(&mut self, current: &mut Option<usize>) -> usize {
        *current.get_or_insert_with(|| {
            self.out.push(Command::default());
            self.out.len() - 1
        })
    }

    /// `<( ... )` or `>( ... )`: a command whose output or input stands in for a file name.
    fn process_substitution(&mut self) -> Result<Word, Unread> {
        let start = self.at;
        self.at += 2;
        self.nested(|l| l.list(true))?;
        Ok(Word {
            text: String::from_utf8_lossy(&self.src[start..self.at]).into_owned(),
            dynamic: true,
        })
    }

    /// A redirection of command `at`: the operator and its target word. A here-document waits
    /// for the next newline; a here-string is stdin at once.
    fn redirect(&mut self, at: usize) -> Result<(), Unread> {
        let heredoc =
            self.src[self.at..].starts_with(b"<<") && !self.src[self.at..].starts_with(b"<<<");
        let herestring = self.src[self.at..].starts_with(b"<<<");
        self.at += match () {
            () if herestring => 3,
            () if heredoc => 2,
            () => 1,
        };
        let strip_tabs = heredoc && self.eat(b'-');
        if !heredoc && !herestring {
            // The rest of the operator: `>>`, `>&`, `>|`, `<>`, `<&`, `&>`, `&>>`.
            while matches!(self.peek(), Some(b'>' | b'&' | b'|')) {
                self.at += 1;
            }
        }
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
        if self.peek().is_none_or(ends_word) {
            return Err(Unread::Unbalanced);
        }
        let start = self.at;
        let (target, plain) = self.word()?;
        if herestring {
            self.out[at].stdin.push(target.text);
        } else if heredoc {
            let source = &self.src[start..self.at];
            let quoted = !plain || source.iter().any(|b| matches!(b, b'\'' | b'"' | b'\\'));
            self.pending.push(PendingDoc {
                delimiter: target.text,
                strip_tabs,
                expands: !quoted,
                command: at,
            });
        }
        Ok(())
    }

    /// After a newline: the bodies of the here-documents opened on the line just read.
    fn here_docs(&mut self) -> Result<(), Unread> {
        for doc in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            while self.peek().is_some() {
                let start = self.at;
                while self.peek().is_some_and(|b| b != b'\n') {
                    self.at += 1;
                }
                let line = String::from_utf8_lossy(&self.src[start..self.at]).into_owned();
                self.eat(b'\n');
                let bare = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if bare == doc.delimiter {
                    break;
                }
                body.push_str(bare);
                body.push('\n');
            }
            if doc.expands {
                self.sublex(&body, true)?;
            }
            self.out[doc.command].stdin.push(body);
        }
        Ok(())
    }

    /// One word, up to an unquoted blank or operator. `plain` is false when any of it was
    /// quoted or escaped, since `"2">f` redirects to a file named after no descriptor.
    fn word(&mut self) -> Result<(Word, bool), Unread> {
        let mut text = Vec::new();
        let mut dynamic = false;
        let mut plain = true;
        while let Some(b) = self.peek() {
            if ends_word(b) {
                break;
            }
            self.at += 1;
            match b {
                b'\\' => {
                    plain = false;
                    match self.next() {
                        Some(b'\n') => {}
                        Some(c) => text.push(c),
                        None => text.push(b'\\'),
                    }
                }
                b'\'' => {
                    plain = false;
                    self.single(&mut text)?;
                }
                b'"' => {
                    plain = false;
                    self.double(&mut text, &mut dynamic, true)?;
                }
                b'$' if self.eat(b'\'') => {
                    plain = false;
                    self.ansi_c(&mut text)?;
                }
                b'$' if self.eat(b'"') => {
                    plain = false;
                    self.double(&mut text, &mut dynamic, true)?;
                }
                b'$' => self.dollar(&mut text, &mut dynamic)?,
                b'`' => self.backtick(&mut text, &mut dynamic)?,
                _ => text.push(b),
            }
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        Ok((Word { text, dynamic }, plain))
    }

    /// The inside of `'...'`: every byte as it is.
    fn single(&mut self, text: &mut Vec<u8>) -> Result<(), Unread> {
        loop {
            match self.next() {
                Some(b'\'') => return Ok(()),
                Some(b) => text.push(b),
                None => return Err(Unread::Unterminated),
            }
        }
    }

    /// The inside of `"..."` (`quoted`), or of an expanding here-document's body (to the end):
    /// a backslash escapes only `$`, a backtick, `"`, `\` and a newline, and `$` and backticks
    /// still expand.
    fn double(
        &mut self,
        text: &mut Vec<u8>,
        dynamic: &mut bool,
        quoted: bool,
    ) -> Result<(), Unread> {
        loop {
            match self.next() {
                Some(b'"') if quoted => return Ok(()),
                Some(b'\\') => match self.next() {
                    Some(b'\n') => {}
                    Some(c @ (b'$' | b'`' | b'"' | b'\\')) => text.push(c),
                    Some(c) => text.extend([b'\\', c]),
                    None => text.push(b'\\'),
                },
                Some(b'$') => self.dollar(text, dynamic)?,
                Some(b'`') => self.backtick(text, dynamic)?,
                Some(b) => text.push(b),
                None if quoted => return Err(Unread::Unterminated),
                None => return Ok(()),
            }
        }
    }

    /// After a `$`: a substitution `$( ... )` (or arithmetic `$(( ... ))`, read the same way),
    /// a parameter `${ ... }`, or a plain `$name`. The word keeps the source text.
    fn dollar(&mut self, text: &mut Vec<u8>, dynamic: &mut bool) -> Result<(), Unread> {
        let start = self.at - 1;
        if self.eat(b'(') {
            *dynamic = true;
            self.nested(|l| l.list(true))?;
        } else if self.eat(b'{') {
            *dynamic = true;
            self.parameter()?;
        } else if self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"_@*#?$!-".contains(&b))
        {
            *dynamic = true;
        }
        text.extend_from_slice(&self.src[start..self.at]);
        Ok(())
    }

    /// The inside of `${ ... }`, to its closing brace; substitutions inside it still run.
    fn parameter(&mut self) -> Result<(), Unread> {
        let mut open = 1;
        let (mut scratch, mut dynamic) = (Vec::new(), false);
        loop {
            match self.next() {
                Some(b'}') => {
                    open -= 1;
                    if open == 0 {
                        return Ok(());
                    }
                }
                Some(b'{') => open += 1,
                Some(b'\\') => {
                    self.next();
                }
                Some(b'\'') => self.single(&mut scratch)?,
                Some(b'"') => self.double(&mut scratch, &mut dynamic, true)?,
                Some(b'$') => self.dollar(&mut scratch, &mut dynamic)?,
                Some(b'`') => self.backtick(&mut scratch, &mut dynamic)?,
                Some(_) => {}
                None => return Err(Unread::Unterminated),
            }
        }
    }

    /// A backtick substitution: its body, with the backslashes that quote a backtick, `$` or
    /// `\` taken off, read as a script of its own.
    fn backtick(&mut self, text: &mut Vec<u8>, dynamic: &mut bool) -> Result<(), Unread> {
        *dynamic = true;
        let start = self.at - 1;
        let mut body = Vec::new();
        loop {
            match self.next() {
                Some(b'`') => break,
                Some(b'\\') => match self.next() {
                    Some(c @ (b'`' | b'$' | b'\\')) => body.push(c),
                    Some(c) => body.extend([b'\\', c]),
                    None => return Err(Unread::Unterminated),
                },
                Some(b) => body.push(b),
                None => return Err(Unread::Unterminated),
            }
        }
        text.extend_from_slice(&self.src[start..self.at]);
        self.sublex(&String::from_utf8_lossy(&body), false)
    }

    /// The inside of `$'...'`, with its backslash escapes decoded: `$'\x67it'` is `git`.
    fn ansi_c(&mut self, text: &mut Vec<u8>) -> Result<(), Unread> {
        loop {
            match self.next() {
                Some(b'\'') => return Ok(()),
                Some(b'\\') => {
                    let Some(c) = self.next() else {
                        return Err(Unread::Unterminated);
                    };
                    match c {
                        b'n' => text.push(b'\n'),
                        b't' => text.push(b'\t'),
                        b'r' => text.push(b'\r'),
                        b'x' => {
                            let byte = self.number(16, 2);
                            text.push(byte.unwrap_or(b'x'));
                        }
                        b'0'..=b'7' => {
                            self.at -= 1;
                            text.extend(self.number(8, 3));
                        }
                        _ => text.push(c),
                    }
                }
                Some(b) => text.push(b),
                None => return Err(Unread::Unterminated),
            }
        }
    }

    /// Up to `most` digits in `radix`, as one byte; none read is `None`.
    fn number(&mut self, radix: u32, most: usize) -> Option<u8> {
        let mut value: u32 = 0;
        let mut read = 0;
        while read < most {
            let Some(digit) = self.peek().and_then(|b| char::from(b).to_digit(radix)) else {
                break;
            };
            value = value * radix + digit;
            self.at += 1;
            read += 1;
        }
        (read > 0).then_some(value as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(script: &str) -> Result<Vec<Vec<String>>, Unread> {
        let mut work = Work::for_command(script);
        let commands = commands(script, &mut work)?;
        Ok(commands
            .into_iter()
            .filter(|c| !c.words.is_empty())
            .map(|c| c.words.into_iter().map(|w| w.text).collect())
            .collect())
    }

    fn words(script: &str) -> Vec<Vec<String>> {
        read(script).expect("the script reads")
    }

    #[test]
    fn quotes_and_escapes_come_off_the_words() {
        assert_eq!(
            words(r#"g'i't "re"set \--hard $'\x67\151t'"#),
            [["git", "reset", "--hard", "git"]]
        );
        assert_eq!(words("echo 'a;b' \"c|d\""), [["echo", "a;b", "c|d"]]);
        assert_eq!(words("git \\\n push"), [["git", "push"]]);
    }

    #[test]
    fn operators_end_commands() {
        assert_eq!(
            words("a 1;b 2&&c||d|e&f\ng |& h"),
            [
                vec!["a", "1"],
                vec!["b", "2"],
                vec!["c"],
                vec!["d"],
                vec!["e"],
                vec!["f"],
                vec!["g"],
                vec!["h"],
            ]
        );
    }

    #[test]
    fn subshells_groups_and_substitutions_add_their_commands() {
        assert_eq!(
            words("(cd x && git push) ; { y; }"),
            [
                vec!["cd", "x"],
                vec!["git", "push"],
                vec!["{", "y"],
                vec!["}"]
            ]
        );
        let found = words("echo \"$(git reset --hard)\" `git clean -f` <(git status)");
        assert_eq!(found[0][0], "echo");
        assert!(found.contains(&vec!["git".into(), "reset".into(), "--hard".into()]));
        assert!(found.contains(&vec!["git".into(), "clean".into(), "-f".into()]));
        assert!(found.contains(&vec!["git".into(), "status".into()]));
    }

    #[test]
    fn an_expansion_marks_its_word_dynamic() {
        let mut work = Work::for_command("");
        let read =
            commands("git push origin \"$B\" 'lit$' ${x:-y} plain", &mut work).expect("reads");
        let dynamic: Vec<bool> = read[0].words.iter().map(|w| w.dynamic).collect();
        assert_eq!(dynamic, [false, false, false, true, false, true, false]);
    }

    #[test]
    fn redirections_are_dropped_and_a_comment_ends_the_line() {
        assert_eq!(
            words("git push 2>&1 >/dev/null &>log <in # ; git reset --hard\nls"),
            [vec!["git", "push"], vec!["ls"]]
        );
        assert_eq!(words("echo \"2\">f"), [["echo", "2"]]);
    }

    #[test]
    fn a_here_document_is_the_stdin_of_its_command_not_commands() {
        let script = "git commit -m \"$(cat <<'EOF'\nFix (it) don't\nEOF\n)\" && git push";
        assert_eq!(
            words(script)
                .into_iter()
                .map(|c| c[0].clone())
                .collect::<Vec<_>>(),
            ["git", "cat", "git"]
        );
        let mut work = Work::for_command(script);
        let read =
            commands("bash <<-X\n\tgit reset --hard\n\tX\nls <<< 'hi'", &mut work).expect("reads");
        assert_eq!(read[0].stdin, ["git reset --hard\n"]);
        assert_eq!(read[1].stdin, ["hi"]);
    }

    #[test]
    fn an_unquoted_here_document_runs_its_substitutions() {
        let found = words("cat <<EOF\n$(git reset --hard)\nEOF");
        assert!(found.contains(&vec!["git".into(), "reset".into(), "--hard".into()]));
        assert_eq!(words("cat <<'EOF'\n$(git reset --hard)\nEOF"), [["cat"]]);
    }

    #[test]
    fn what_it_cannot_follow_is_unread() {
        assert_eq!(read("echo 'open"), Err(Unread::Unterminated));
        assert_eq!(read("echo \"open"), Err(Unread::Unterminated));
        assert_eq!(read("echo $(open"), Err(Unread::Unterminated));
        assert_eq!(read("echo `open"), Err(Unread::Unterminated));
        assert_eq!(read("a )"), Err(Unread::Unbalanced));
        assert_eq!(read("a >"), Err(Unread::Unbalanced));
        let deep = format!(
            "{}x{}",
            "$(".repeat(MAX_NESTING + 1),
            ")".repeat(MAX_NESTING + 1)
        );
        assert_eq!(read(&deep), Err(Unread::TooDeep));
        let fine = format!("{}x{}", "$(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(read(&fine).is_ok());
    }
}
