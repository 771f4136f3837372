//! Running one process for a check or a plugin: its input on stdin, stdout captured up to a
//! cap, a time limit that ends the whole process group.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use bay_core::check::MAX_STDOUT_BYTES;

/// The most stdout kept: one byte over the judge's limit, so that the judge sees a result
/// that is too long as too long, without the driver holding all of it.
pub const STDOUT_CAP: usize = MAX_STDOUT_BYTES + 1;

/// How often the driver looks whether the check has ended.
const POLL: Duration = Duration::from_millis(5);

/// After the check's process ends, how long the driver still waits for its stdout to close.
const STDOUT_GRACE: Duration = Duration::from_secs(2);

/// What became of one check process.
#[derive(Debug)]
pub(crate) struct Ran {
    pub stdout: Vec<u8>,
    /// `None` when a signal ended the process (including the driver's kill at the timeout).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub millis: u64,
}

/// Starts `command` in a process group of its own, writes `stdin` to it, and waits for it for
/// at most `timeout`, then kills the group. It keeps at most `cap` bytes of stdout (a check's
/// is [`STDOUT_CAP`]). `Err` means it could not be started.
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
    let (ended, stdout_closed) = mpsc::channel();
    if let Some(pipe) = child.stdout.take() {
        let kept = Arc::clone(&stdout);
        std::thread::spawn(move || {
            read_capped(pipe, &kept, cap);
            let _ = ended.send(());
        });
    }

    let deadline = start.checked_add(timeout);
    let (status, timed_out) = wait(&mut child, group, deadline)?;
    let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    // Whatever the check started and left behind goes with it (in the sandbox, its PID
    // namespace has already taken them).
    kill_group(group);

    // Only a process that left the group (possible without the sandbox) can hold stdout open
    // now. The check's own process has ended, so what it printed is its answer: the driver
    // takes what came so far rather than wait for a process it cannot end.
    let _ = stdout_closed.recv_timeout(STDOUT_GRACE);
    let stdout = match stdout.lock() {
        Ok(kept) => kept.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    Ok(Ran {
        stdout,
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
                std::thread::sleep(POLL);
            }
            Err(error) => return Err(format!("the program could not be started: {error}")),
        }
    }
}

/// Waits for `child` until `deadline`; at the deadline, kills its whole process group.
/// Returns the exit status and whether the deadline ended it.
fn wait(
    child: &mut Child,
    group: u32,
    deadline: Option<Instant>,
) -> Result<(ExitStatus, bool), String> {
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| format!("could not wait for the program: {e}"))?
        {
            return Ok((status, false));
        }
        let now = Instant::now();
        match deadline {
            Some(deadline) if now >= deadline => {
                if !kill_group(group) {
                    // Without the `kill` program, at least the check's own process ends.
                    let _ = child.kill();
                }
                let status = child
                    .wait()
                    .map_err(|e| format!("could not wait for the killed program: {e}"))?;
                return Ok((status, true));
            }
            Some(deadline) => std::thread::sleep(POLL.min(deadline - now)),
            None => std::thread::sleep(POLL),
        }
    }
}

/// Sends SIGKILL to every process in group `group`, with the `kill` program (std can signal
/// only its own child, and bay forbids unsafe code). `false` when `kill` did not run or found
/// no such group.
fn kill_group(group: u32) -> bool {
    Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{group}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Reads `pipe` to its end into `kept`, keeping at most `cap` bytes. The rest is read and
/// dropped, so that a program printing too much is not stuck on a full pipe until its
/// timeout.
fn read_capped(mut pipe: impl Read, kept: &Mutex<Vec<u8>>, cap: usize) {
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let mut kept = match kept.lock() {
            Ok(kept) => kept,
            Err(poisoned) => poisoned.into_inner(),
        };
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..n.min(room)]);
    }
}
