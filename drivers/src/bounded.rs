//! Waiting for a child process until a deadline: the one way bay bounds a process in time
//! (every `git` call, each check, the hold plugin). It is `shared_child`'s wait, the one duct
//! is built on: the thread blocks until the process exits or the deadline passes (no polling
//! loop), and a kill from the same thread cannot race a wait that reaps the process.

use std::io;
use std::process::{Child, ExitStatus};
use std::time::Instant;

use shared_child::SharedChild;

/// How a bounded wait ended.
#[derive(Debug)]
pub(crate) enum Waited {
    /// The process exited before the deadline.
    Exited(ExitStatus),
    /// The deadline passed: `stop` was called, and the process is gone with this status. A
    /// process that exited between the deadline and the stop still ran out of time.
    TimedOut(ExitStatus),
}

/// Waits for `child` until `deadline` (`None`: for as long as it runs). At the deadline,
/// `stop` ends it (a kill of the process, or of its whole group), and the wait goes on until
/// it is gone: SIGKILL cannot be ignored, so that wait is short.
pub(crate) fn wait(
    child: Child,
    deadline: Option<Instant>,
    stop: impl FnOnce(&SharedChild),
) -> io::Result<Waited> {
    let child = SharedChild::new(child)?;
    let Some(deadline) = deadline else {
        return child.wait().map(Waited::Exited);
    };
    if let Some(status) = child.wait_deadline(deadline)? {
        return Ok(Waited::Exited(status));
    }
    stop(&child);
    child.wait().map(Waited::TimedOut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Duration;

    fn sh(script: &str) -> Child {
        Command::new("sh")
            .args(["-c", script])
            .spawn()
            .expect("sh starts")
    }

    #[test]
    fn a_process_that_ends_in_time_gives_its_status() {
        let deadline = Instant::now() + Duration::from_secs(60);
        let waited = wait(sh("exit 3"), Some(deadline), |_| panic!("not stopped"));
        match waited.expect("waited") {
            Waited::Exited(status) => assert_eq!(status.code(), Some(3)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_process_past_its_deadline_is_stopped_and_reaped() {
        // A deadline already past: the wait polls once, finds `sleep` running, and stops it.
        let deadline = Instant::now();
        let mut stopped = false;
        let waited = wait(sh("exec sleep 600"), Some(deadline), |child| {
            stopped = true;
            child.kill().expect("killed");
        });
        match waited.expect("waited") {
            Waited::TimedOut(status) => assert_eq!(status.code(), None, "ended by a signal"),
            other => panic!("{other:?}"),
        }
        assert!(stopped);
    }

    #[test]
    fn no_deadline_waits_for_the_end() {
        let waited = wait(sh("exit 0"), None, |_| panic!("not stopped"));
        assert!(matches!(waited.expect("waited"), Waited::Exited(s) if s.success()));
    }
}
