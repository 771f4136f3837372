//! Reading objects through one long-lived `git cat-file --batch-command --buffer` per clone.
//!
//! A `git` process costs about 2 ms to start, and one `bay merge --wait` read objects in six of
//! them (the config, the policy, step messages, the view's tree, main's tree). A [`Reader`]
//! starts one process at its first read and asks it everything after, each read one exchange
//! of commands and answers over pipes.
//!
//! Only objects named from an object id are read here (`<oid>`, `<oid>:<path>`,
//! `<oid>^{tree}`): an id names the same object in every worktree of the clone and at every
//! moment, so one process serves every worktree and never answers from a stale ref. Git looks
//! again at the object store for an object it does not find (a fetch may have added a pack),
//! so objects written after the process started are read too.
//!
//! Every exchange is bounded in time like any Git call. A process that runs past the bound, or
//! answers in a way bay cannot read, is killed and forgotten; the next read starts a new one.
//! Two threads per process carry the bytes, so that no pipe can block bay past the bound: one
//! writes the commands, one reads the answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Child;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use crate::git::{Git, GitError};

/// What Git answered for one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    Found {
        kind: String,
        body: Vec<u8>,
    },
    /// No such object, or a name that does not resolve to one.
    Missing,
}

/// The command line, as errors name it.
const COMMAND: &str = "git cat-file --batch-command --buffer";

/// Reads objects of one clone through one `git` process, started at the first read.
#[derive(Debug)]
pub struct Reader {
    git: Git,
    process: Mutex<Option<Batch>>,
}

/// The running process and the two threads that carry its bytes.
#[derive(Debug)]
struct Batch {
    child: Child,
    stderr: std::fs::File,
    commands: Sender<Vec<u8>>,
    answers: Receiver<std::io::Result<Object>>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        // Closing stdin (the writer thread ends with the sender) lets Git exit by itself; the
        // kill covers a Git that is stuck, and the wait reaps it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Reader {
    /// A reader of the repository `git` names, each read bounded by `git`'s time bound.
    pub fn new(git: Git) -> Reader {
        Reader {
            git,
            process: Mutex::new(None),
        }
    }

    /// Starts the process now, if it is not running, so that Git's own start overlaps what the
    /// caller does next (a fetch) instead of delaying the first read. A failure here is left
    /// for that read to meet and report.
    pub fn warm(&self) {
        let mut slot = self.process.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = self.start().ok();
        }
    }

    /// The objects `names` name, in order. A name must start with an object id and hold no
    /// newline.
    pub fn read(&self, names: &[String]) -> Result<Vec<Object>, GitError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = Vec::new();
        for name in names {
            if name.contains('\n') || !starts_with_id(name) {
                return Err(GitError::Io {
                    command: COMMAND.into(),
                    error: format!("cannot look up {name:?}: bay reads objects by id alone"),
                });
            }
            input.extend_from_slice(b"contents ");
            input.extend_from_slice(name.as_bytes());
            input.push(b'\n');
        }
        input.extend_from_slice(b"flush\n");
        let mut slot = self.process.lock().unwrap_or_else(|e| e.into_inner());
        let batch = match slot.take() {
            Some(batch) => batch,
            None => self.start()?,
        };
        let deadline = Instant::now() + self.git.timeout();
        match exchange(&batch, input, names.len(), deadline) {
            Ok(objects) => {
                *slot = Some(batch);
                Ok(objects)
            }
            // The batch is dropped, and so killed: its answers can no longer be matched to
            // questions.
            Err(failure) => Err(failure.into_error(batch, self.git.timeout())),
        }
    }

    fn start(&self) -> Result<Batch, GitError> {
        let (mut child, stderr) = self
            .git
            .cmd(["cat-file", "--batch-command", "--buffer"])
            .spawn_piped()?;
        let io = |error: std::io::Error| GitError::Io {
            command: COMMAND.into(),
            error: error.to_string(),
        };
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io(std::io::Error::other("git has no pipes")));
        };
        let (commands, to_write) = channel::<Vec<u8>>();
        let (answered, answers) = channel();
        std::thread::Builder::new()
            .name("bay-cat-file-in".into())
            .spawn(move || {
                let mut stdin = stdin;
                for bytes in to_write {
                    if stdin
                        .write_all(&bytes)
                        .and_then(|()| stdin.flush())
                        .is_err()
                    {
                        break;
                    }
                }
            })
            .map_err(io)?;
        std::thread::Builder::new()
            .name("bay-cat-file-out".into())
            .spawn(move || {
                let mut stdout = BufReader::new(stdout);
                loop {
                    let answer = read_answer(&mut stdout);
                    let end = !matches!(answer, Ok(Some(_)));
                    let sent = match answer {
                        Ok(Some(object)) => answered.send(Ok(object)),
                        Ok(None) => answered.send(Err(std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "git exited",
                        ))),
                        Err(e) => answered.send(Err(e)),
                    };
                    if end || sent.is_err() {
                        break;
                    }
                }
            })
            .map_err(io)?;
        Ok(Batch {
            child,
            stderr,
            commands,
            answers,
        })
    }
}

/// Why an exchange failed.
enum Failure {
    TimedOut,
    Broken(String),
}

impl Failure {
    /// The error, with what Git said on stderr; `batch` is killed here.
    fn into_error(self, batch: Batch, bound: Duration) -> GitError {
        let mut stderr = batch.stderr.try_clone().ok();
        drop(batch);
        let said = stderr
            .as_mut()
            .and_then(|file| {
                use std::io::Seek;
                file.seek(std::io::SeekFrom::Start(0)).ok()?;
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).ok()?;
                Some(crate::git::tail(&bytes))
            })
            .unwrap_or_default();
        match self {
            Failure::TimedOut => GitError::TimedOut {
                command: COMMAND.into(),
                after: bound,
                stderr: said,
            },
            Failure::Broken(why) => GitError::Failed {
                command: COMMAND.into(),
                code: None,
                stderr: if said.is_empty() { why } else { said },
            },
        }
    }
}

/// Sends `input` and takes `count` answers before `deadline`.
fn exchange(
    batch: &Batch,
    input: Vec<u8>,
    count: usize,
    deadline: Instant,
) -> Result<Vec<Object>, Failure> {
    batch
        .commands
        .send(input)
        .map_err(|_| Failure::Broken("git stopped reading".into()))?;
    let mut objects = Vec::with_capacity(count);
    for _ in 0..count {
        let left = deadline.saturating_duration_since(Instant::now());
        match batch.answers.recv_timeout(left) {
            Ok(Ok(object)) => objects.push(object),
            Ok(Err(e)) => return Err(Failure::Broken(e.to_string())),
            Err(RecvTimeoutError::Timeout) => return Err(Failure::TimedOut),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Failure::Broken("git stopped answering".into()));
            }
        }
    }
    Ok(objects)
}

/// Whether `name` starts with a full object id (40 or 64 hex digits) followed by nothing or by
/// `:` or `^`.
fn starts_with_id(name: &str) -> bool {
    let hex = name.bytes().take_while(u8::is_ascii_hexdigit).count();
    (hex == 40 || hex == 64) && matches!(name.as_bytes().get(hex), None | Some(b':' | b'^'))
}

/// One answer of `cat-file --batch-command` in its default format: `<oid> <type> <size>`, the
/// contents and a newline; or `<name> missing` (or `ambiguous`) alone. `None` at the end of
/// the output.
fn read_answer(out: &mut impl BufRead) -> std::io::Result<Option<Object>> {
    let bad = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let mut header = Vec::new();
    if out.read_until(b'\n', &mut header)? == 0 {
        return Ok(None);
    }
    if header.pop() != Some(b'\n') {
        return Err(bad("an answer without its end".into()));
    }
    let header = String::from_utf8_lossy(&header).into_owned();
    // A name may hold spaces (a path), so a missing one is known by its last word.
    if header.ends_with(" missing") || header.ends_with(" ambiguous") {
        return Ok(Some(Object::Missing));
    }
    let fields: Vec<&str> = header.split(' ').collect();
    let [_, kind, size] = fields.as_slice() else {
        return Err(bad(format!("an answer bay cannot read: {header:?}")));
    };
    let size: usize = size
        .parse()
        .map_err(|_| bad(format!("an answer bay cannot read: {header:?}")))?;
    // Read up to the size and its newline, growing as the bytes come: a size that lies
    // allocates no more than what Git really wrote.
    let wanted = (size as u64).saturating_add(1);
    let mut body = Vec::new();
    out.take(wanted).read_to_end(&mut body)?;
    if body.len() as u64 != wanted {
        return Err(bad("an object shorter than its size".into()));
    }
    if body.pop() != Some(b'\n') {
        return Err(bad("an object longer than its size".into()));
    }
    Ok(Some(Object::Found {
        kind: kind.to_string(),
        body,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The process a reader holds, if it holds one.
    fn pid(reader: &Reader) -> Option<u32> {
        let slot = reader.process.lock().expect("not poisoned");
        slot.as_ref().map(|batch| batch.child.id())
    }

    /// A blob's answer.
    fn blob_of(body: &[u8]) -> Object {
        Object::Found {
            kind: "blob".into(),
            body: body.to_vec(),
        }
    }

    fn repository() -> (tempfile::TempDir, Git) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = Git::in_dir(dir.path());
        git.cmd(["init", "-q", "--bare"]).run().expect("git init");
        (dir, git)
    }

    fn blob(git: &Git, bytes: &[u8]) -> String {
        git.cmd(["hash-object", "-w", "--stdin"])
            .stdin(bytes.to_vec())
            .text()
            .expect("hash-object")
    }

    #[test]
    fn objects_come_back_in_order_with_their_exact_bytes() {
        let (_dir, git) = repository();
        let one = blob(&git, b"one\n");
        let binary = blob(&git, b"\0\n\xff no end");
        let reader = Reader::new(git.clone());
        let absent = "0".repeat(40);
        let objects = reader
            .read(&[binary.clone(), absent, one.clone()])
            .expect("a read");
        assert_eq!(
            objects,
            vec![
                blob_of(b"\0\n\xff no end"),
                Object::Missing,
                blob_of(b"one\n"),
            ]
        );
    }

    #[test]
    fn one_process_serves_every_read_and_sees_objects_written_after_it_started() {
        let (_dir, git) = repository();
        let reader = Reader::new(git.clone());
        let first = blob(&git, b"first\n");
        assert!(matches!(
            reader.read(std::slice::from_ref(&first)).expect("a read")[0],
            Object::Found { .. }
        ));
        let started = pid(&reader);
        let later = blob(&git, b"written later\n");
        let objects = reader.read(&[later]).expect("a read");
        assert_eq!(objects[0], blob_of(b"written later\n"));
        // An object that arrives in a new pack, as a fetch brings them.
        let (_other_dir, other) = repository();
        let packed = blob(&other, b"arrived in a pack\n");
        let pack = other
            .cmd(["pack-objects", "--stdout", "-q"])
            .stdin(format!("{packed}\n").into_bytes())
            .run()
            .expect("pack-objects")
            .stdout;
        git.cmd(["index-pack", "--stdin"])
            .stdin(pack)
            .run()
            .expect("index-pack");
        let objects = reader.read(&[packed]).expect("a read");
        assert_eq!(objects[0], blob_of(b"arrived in a pack\n"));
        let same = pid(&reader);
        assert!(started.is_some());
        assert_eq!(started, same, "the second read used the same process");
    }

    #[test]
    fn paths_with_spaces_and_missing_paths_are_answered() {
        let (dir, git) = repository();
        let content = blob(&git, b"spaced\n");
        let tree = git
            .cmd(["mktree"])
            .stdin(format!("100644 blob {content}\ta b.txt\n").into_bytes())
            .text()
            .expect("mktree");
        let reader = Reader::new(git);
        let objects = reader
            .read(&[format!("{tree}:a b.txt"), format!("{tree}:no such missing")])
            .expect("a read");
        assert_eq!(objects, vec![blob_of(b"spaced\n"), Object::Missing,]);
        drop(dir);
    }

    #[test]
    fn a_warm_reader_reads_with_the_process_it_started() {
        let (_dir, git) = repository();
        let one = blob(&git, b"one\n");
        let reader = Reader::new(git);
        reader.warm();
        let started = pid(&reader);
        assert!(started.is_some());
        assert_eq!(
            reader.read(&[one]).expect("a read"),
            vec![blob_of(b"one\n")]
        );
        assert_eq!(pid(&reader), started);
    }

    #[test]
    fn names_that_are_not_ids_are_refused_before_git_runs() {
        let (_dir, git) = repository();
        let reader = Reader::new(git);
        for name in [
            "HEAD",
            "refs/heads/main",
            &format!("{}\nHEAD", "a".repeat(40)),
        ] {
            let error = reader.read(&[name.to_string()]).expect_err(name);
            assert!(error.to_string().contains("by id alone"), "{error}");
        }
        assert!(pid(&reader).is_none(), "no process started");
    }

    #[test]
    fn a_read_past_its_bound_is_a_timeout_and_the_next_read_starts_afresh() {
        let (dir, git) = repository();
        let one = blob(&git, b"one\n");
        // A bound of zero: no answer can come in time.
        let reader = Reader::new(git.clone().with_timeout(Duration::ZERO));
        let error = reader
            .read(std::slice::from_ref(&one))
            .expect_err("no time");
        assert!(matches!(error, GitError::TimedOut { .. }), "{error}");
        assert!(pid(&reader).is_none(), "the process is gone");
        let reader = Reader::new(git);
        assert!(matches!(
            reader.read(&[one]).expect("a read")[0],
            Object::Found { .. }
        ));
        drop(dir);
    }

    #[test]
    fn answers_follow_each_other_in_the_output() {
        let mut out = &b"aaaa commit 5\nhello\nbbbb missing\ncccc blob 0\n\n"[..];
        let mut objects = Vec::new();
        while let Some(object) = read_answer(&mut out).expect("well-formed") {
            objects.push(object);
        }
        assert_eq!(
            objects,
            vec![
                Object::Found {
                    kind: "commit".into(),
                    body: b"hello".to_vec()
                },
                Object::Missing,
                Object::Found {
                    kind: "blob".into(),
                    body: Vec::new()
                },
            ]
        );
    }

    proptest::proptest! {
        /// Any output gives answers, an error or the end, never a panic, and never more
        /// answers than it has lines.
        #[test]
        fn any_output_reads_without_a_panic(out in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let lines = out.iter().filter(|&&b| b == b'\n').count();
            let mut rest = &out[..];
            let mut answers = 0;
            while let Ok(Some(_)) = read_answer(&mut rest) {
                answers += 1;
            }
            proptest::prop_assert!(answers <= lines);
        }
    }

    #[test]
    fn an_answer_git_cannot_have_given_is_an_error_not_an_object() {
        let mut short = &b"0123 blob 10\nabc\n"[..];
        assert!(read_answer(&mut short).is_err());
        let mut odd = &b"what is this\n"[..];
        assert!(read_answer(&mut odd).is_err());
        let mut none = &b""[..];
        assert!(matches!(read_answer(&mut none), Ok(None)));
        let mut long = &b"0123 blob 2\nabc\n"[..];
        assert!(read_answer(&mut long).is_err());
        let mut huge = &b"0123 blob 18446744073709551615\nabc\n"[..];
        assert!(read_answer(&mut huge).is_err());
    }
}
