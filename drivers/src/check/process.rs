//! Running one process for a check or a plugin: its input on stdin, stdout captured up to a
//! cap, the tail of stderr when the caller asks for it, a time limit that ends the whole
//! process group.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use bay_core::check::MAX_STDOUT_BYTES;

use crate::bounded::{self, Waited};

/// The most stdout kept: one byte over the judge's limit, so that the judge sees a result
/// that is too long as too long, without the driver holding all of it.
pub const STDOUT_CAP: usize = MAX_STDOUT_BYTES + 1;

/// The most of a check's stderr kept: its last 256 KiB. stderr is for people, who read how a
/// run ended; a check that prints without end must not fill the runner's disk.
pub const STDERR_TAIL: usize = 256 * 1024;

/// How long the driver waits before it starts a "text file busy" program again.
const BUSY_PAUSE: Duration = Duration::from_millis(5);

/// After the check's process ends, how long the driver still waits for its stdout and stderr
/// to close.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// What became of one check process.
#[derive(Debug)]
pub(crate) struct Ran {
    pub stdout: Vec<u8>,
    /// The last [`STDERR_TAIL`] bytes of stderr, when the caller piped it; how many bytes came
    /// before them.
    pub stderr: Tail,
    /// `None` when a signal ended the process (including the driver's kill at the timeout).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub millis: u64,
}

/// The end of an output: its last bytes, and how many came before them and were dropped.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    pub bytes: Vec<u8>,
    pub dropped: u64,
}

/// Starts `command` in a process group of its own, writes `stdin` to it, and waits for it for
/// at most `timeout`, then kills the group. It keeps at most `cap` bytes of stdout (a check's
/// is [`STDOUT_CAP`]) and, when the caller piped stderr, its last [`STDERR_TAIL`] bytes. `Err`
/// means it could not be started.
///
/// The caller sets `command`'s stderr; this function sets its stdin and stdout.
pub(crate) fn run(
    mut command: Command,
    stdin: Vec<u8>,
    timeout: Duration,
    cap: usize,
) -> Result<Ran, String> {
    use std::os::unix::process::CommandExt;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = spawn(&mut command)?;
    let group = child.id();

    // The request goes in from a thread of its own: a check that never reads stdin would
    // otherwise block the driver on a full pipe. A check that exits without reading is no
    // error of the driver's, so the write's failure is ignored.
    if let Some(mut pipe) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = pipe.write_all(&stdin);
        });
    }
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Tail::default()));
    let (ended, closed) = mpsc::channel();
    let mut open = 0;
    if let Some(pipe) = child.stdout.take() {
        let (kept, ended) = (Arc::clone(&stdout), ended.clone());
        open += 1;
        std::thread::spawn(move || {
            read_capped(pipe, &kept, cap);
            let _ = ended.send(());
        });
    }
    if let Some(pipe) = child.stderr.take() {
        let (kept, ended) = (Arc::clone(&stderr), ended.clone());
        open += 1;
        std::thread::spawn(move || {
            read_tail(pipe, &kept, STDERR_TAIL);
            let _ = ended.send(());
        });
    }

    // At the deadline the whole group goes; without its group (possible without the
    // sandbox), at least the check's own process.
    let deadline = start.checked_add(timeout);
    let waited = bounded::wait(child, deadline, |child| {
        if !kill_group(group) {
            let _ = child.kill();
        }
    })
    .map_err(|e| format!("could not wait for the program: {e}"))?;
    let (status, timed_out) = match waited {
        Waited::Exited(status) => (status, false),
        Waited::TimedOut(status) => (status, true),
    };
    let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    // Whatever the check started and left behind goes with it (in the sandbox, its PID
    // namespace has already taken them).
    kill_group(group);

    // Only a process that left the group (possible without the sandbox) can hold stdout or
    // stderr open now. The check's own process has ended, so what it printed is its answer:
    // the driver takes what came so far rather than wait for a process it cannot end.
    let grace = Instant::now() + OUTPUT_GRACE;
    for _ in 0..open {
        let left = grace.saturating_duration_since(Instant::now());
        if closed.recv_timeout(left).is_err() {
            break;
        }
    }
    let stdout = lock(&stdout).clone();
    let stderr = {
        let mut tail = lock(&stderr);
        let cut = tail.bytes.len().saturating_sub(STDERR_TAIL);
        tail.dropped += cut as u64;
        Tail {
            bytes: tail.bytes.split_off(cut),
            dropped: tail.dropped,
        }
    };
    Ok(Ran {
        stdout,
        stderr,
        exit_code: status.code(),
        timed_out,
        millis,
    })
}

/// How many times a program just written out is started before "text file busy" is taken
/// as its answer.
const BUSY_TRIES: u32 = 5;

/// Starts `command`. A program the driver has just written (a plugin from main's tip) can be
/// "text file busy" for a moment, while a process another thread forks still holds the
/// written file open until it executes; that passes, so the start is tried again.
fn spawn(command: &mut Command) -> Result<Child, String> {
    let mut tries = 1;
    loop {
        match command.spawn() {
            Ok(child) => return Ok(child),
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < BUSY_TRIES =>
            {
                tries += 1;
                std::thread::sleep(BUSY_PAUSE);
            }
            Err(error) => return Err(format!("the program could not be started: {error}")),
        }
    }
}

/// Sends SIGKILL to every process in group `group` (the check's own, which it leads), by one
/// system call. `false` when there is no such group. Group 0 or 1 would name this process's
/// own group or every process, never a check's, so neither is ever signalled.
fn kill_group(group: u32) -> bool {
    let Some(pid) = i32::try_from(group)
        .ok()
        .filter(|raw| *raw > 1)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    rustix::process::kill_process_group(pid, rustix::process::Signal::KILL).is_ok()
}

/// Reads `pipe` to its end into `kept`, keeping at most its first `cap` bytes.
fn read_capped(pipe: impl Read, kept: &Mutex<Vec<u8>>, cap: usize) {
    read_all(pipe, |chunk| {
        let mut kept = lock(kept);
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    });
}

/// Reads `pipe` to its end into `kept`, keeping at least its last `cap` bytes and at most
/// twice that (the caller cuts the rest), so that the bytes are moved only now and then.
fn read_tail(pipe: impl Read, kept: &Mutex<Tail>, cap: usize) {
    read_all(pipe, |chunk| {
        let mut tail = lock(kept);
        tail.bytes.extend_from_slice(chunk);
        if tail.bytes.len() > 2 * cap {
            let cut = tail.bytes.len() - cap;
            tail.bytes.drain(..cut);
            tail.dropped += cut as u64;
        }
    });
}

/// Reads `pipe` to its end, handing each chunk to `keep`. Everything is read, kept or not, so
/// that a program printing too much is not stuck on a full pipe until its timeout.
fn read_all(mut pipe: impl Read, mut keep: impl FnMut(&[u8])) {
    let mut chunk = [0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => keep(&chunk[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// What a reader kept so far, even if a reader thread panicked while it held the lock.
fn lock<T>(kept: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    kept.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
