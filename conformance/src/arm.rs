//! What a driver under test lets the suite do: set a world up, execute core's actions as the
//! driver would, and look at the result with the driver's own eyes.

use std::collections::BTreeMap;

use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::machine::{Action, Completion, PushPlan, PushReport};

/// The files of a tree: path to content. The suite's files are text.
pub type Files = BTreeMap<String, String>;

/// One driver and the remote it talks to, fresh for each case: a real bare repository and a
/// clone of it, an in-memory model, or a third party's store.
///
/// The setup and look-up methods work outside bay (as an administrator with plain Git would);
/// only [`Arm::execute`] and [`Arm::push_reply_lost`] are the driver under test. The remote's
/// `main` is `refs/heads/main` and starts absent.
pub trait Arm {
    /// Writes a commit whose tree holds exactly `files`, with `parents`, into the driver's
    /// local store (where the driver's pushes take their objects from). Returns its id.
    fn commit(&mut self, parents: &[Oid], files: &[(&str, &str)], message: &str) -> Oid;

    /// Sets `name` on the remote to `value`, or deletes it (`None`), as a forced push would.
    /// The commit was made with [`Arm::commit`].
    fn set_remote_ref(&mut self, name: &str, value: Option<&Oid>);

    /// The remote's value of `name` now.
    fn remote_ref(&mut self, name: &str) -> Option<Oid>;

    /// The files of `commit`'s tree, if the local store has the commit.
    fn files(&mut self, commit: &Oid) -> Option<Files>;

    /// The tree and the parents of `commit`, if the local store has it.
    fn shape(&mut self, commit: &Oid) -> Option<(Oid, Vec<Oid>)>;

    /// The lines of the note on `object` in the remote's notes ref `notes_ref`, oldest first;
    /// empty when there is none.
    fn notes(&mut self, notes_ref: &str, object: &Oid) -> Vec<String>;

    /// Executes `action` as the driver does for a runner or an agent, and answers. Never
    /// called with `RunCheck`: checks have their own contract (`bay plugin test`).
    fn execute(&mut self, action: &Action) -> Completion;

    /// Executes a push whose reply never comes back although the remote applied it (the
    /// connection broke after the remote took the push). Returns the report the driver gives
    /// its machine, which must not claim to know the outcome.
    fn push_reply_lost(&mut self, plan: &PushPlan) -> PushReport;

    /// The files the view of `change` shows on disk (or in memory), after `MakeView`.
    fn view_files(&mut self, change: &ChangeId) -> Files;

    /// Writes (`Some`) or removes (`None`) one file in the view of `change`, as an agent's
    /// editor would.
    fn edit_view(&mut self, change: &ChangeId, path: &str, content: Option<&str>);

    /// Keeps the OpenSSH private key `openssh` where the driver reads keys (a file, for a
    /// driver that reads files), and gives the path an action names it by (`sign`, a note's
    /// `key`, a registry write's `key`), as `bay.executorKey` would.
    fn signing_key(&mut self, openssh: &str) -> String;
}
