//! The check sandbox: whether one works on this machine, and the `bwrap` command line that
//! confines one check.
//!
//! A check is someone else's program run on a candidate nobody has reviewed yet, so it sees
//! only an allow-list: the system directories a program needs to start, its candidate tree
//! (read-write), its `adapter` paths (read-only), a fresh `HOME` and `TMPDIR`, and, read-only,
//! the directories the machine's owner named with `bay.checkReadPath` and, for a check that
//! reads history, its own Git directory and the repository's object store. The machine's real
//! `HOME`, the rest of the repository's `.git`, other views and keys are never bound, and the
//! network is cut unless the check's own `[[check]]` entry (read from the base) asks for it.
//! A runner that runs as root runs each check as the unprivileged [`CHECK_UID`] and
//! [`CHECK_GID`] (see [`Bwrap::setpriv`]).
//!
//! The sandbox is never dropped silently. A machine where `bwrap` does not work gets
//! [`Sandbox::Unavailable`], and every check there is `infra_failure` with a reason that says
//! how to fix it. Only the machine's owner can choose to run without one, with
//! `git config --global bay.executorSandbox none`; a repository cannot.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The global Git config key by which a machine's owner runs checks without a sandbox.
pub const SETTING: &str = "bay.executorSandbox";

/// The one value of [`SETTING`] that turns the sandbox off.
pub const SETTING_NONE: &str = "none";

/// The user a root runner's checks run as: `nobody` on Debian, and the kernel's overflow
/// user, which owns no file, elsewhere. So a check reads only what any account may read,
/// and writes only its own folders, which the driver hands to this user.
pub const CHECK_UID: u32 = 65534;

/// The group a root runner's checks run as (`nogroup` on Debian), with no other group.
pub const CHECK_GID: u32 = 65534;

/// How checks run on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sandbox {
    /// In `bwrap`.
    Bwrap(Bwrap),
    /// Without a sandbox, because the machine's owner said so with `bay.executorSandbox none`.
    /// A check then has the runner account's full access, network included.
    Off,
    /// No sandbox works and none was waived: every check is `infra_failure`, with this reason.
    Unavailable(String),
}

/// A `bwrap` that works here, and who the check runs as in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bwrap {
    /// `bwrap` at this absolute path, resolved once, because a check's `PATH` (which the
    /// spawn would otherwise search) need not hold the directory `bwrap` is in.
    pub program: PathBuf,
    /// When the runner is root, `setpriv` (from util-linux) at this absolute path; `None`
    /// when it is not, and the check runs as the runner.
    ///
    /// Started by root, bwrap keeps uid 0 in the sandbox (in a user namespace of its own, uid
    /// 0 or any other inside is root outside), and uid 0 owns the machine's files whatever
    /// capabilities it lacks: a check would read root's mode-0600 files under `/etc`. So
    /// bwrap makes no user namespace and keeps only the capabilities to change user, and
    /// `setpriv`, the first program in the sandbox, becomes [`CHECK_UID`] and [`CHECK_GID`]
    /// with no other group and no capability left before it starts the check. bwrap has set
    /// no-new-privileges and mounts every bind `nosuid`, so no program there gets root back.
    pub setpriv: Option<PathBuf>,
}

/// The directories one check sees besides the system's, each at its own host path, so that
/// the paths a check is told (`HOME`, `BAY_ADAPTER_DIR`, its working directory) are the same
/// inside and outside the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement<'a> {
    /// The candidate's tree, read-write; the check starts here.
    pub tree: &'a Path,
    /// The `adapter` paths from the base, read-only.
    pub adapter: &'a Path,
    /// The fresh `HOME`, read-write.
    pub home: &'a Path,
    /// The fresh `TMPDIR`, read-write.
    pub tmp: &'a Path,
    /// More directories, each bound read-only at its own path: the machine's read paths, and a
    /// history-reading check's Git directory and object store. The caller has made sure that
    /// each exists and overlaps none of the directories above.
    pub read: &'a [PathBuf],
    /// The check's `network = true`: share the host's network instead of an empty one.
    pub network: bool,
}

impl Sandbox {
    /// Decides once per process how checks run here, from the global Git config and a test
    /// run of `bwrap`; later calls return the first answer.
    ///
    /// Once, because the answer does not change while a runner lives, and a probe on every
    /// check would cost a process start each time.
    pub fn probe() -> Sandbox {
        static DECIDED: OnceLock<Sandbox> = OnceLock::new();
        DECIDED
            .get_or_init(|| Sandbox::detect(executor_setting().as_deref()))
            .clone()
    }

    /// Decides afresh, given the value of `bay.executorSandbox` (if any).
    ///
    /// Only the exact value `none` turns the sandbox off. Any other value is read as wanting
    /// the sandbox: a misspelt opt-out must not cost the machine its sandbox.
    pub fn detect(setting: Option<&str>) -> Sandbox {
        match setting.map(str::trim) {
            Some(SETTING_NONE) => Sandbox::Off,
            _ => Sandbox::bwrap(),
        }
    }

    /// Tests `bwrap` alone, whatever the machine's setting: [`Sandbox::Bwrap`] when it can
    /// start a program with every namespace bay asks of it, [`Sandbox::Unavailable`] otherwise.
    pub fn bwrap() -> Sandbox {
        match crate::programs::find("bwrap") {
            Some(program) => Sandbox::bwrap_at(program),
            None => Sandbox::Unavailable(unavailable(
                "bwrap is not installed (it is not on this runner's PATH)",
            )),
        }
    }

    /// Tests the `bwrap` at `program`, as [`Sandbox::bwrap`] does the one on `PATH`. A root
    /// runner needs `setpriv` too (see [`Bwrap::setpriv`]).
    pub fn bwrap_at(program: PathBuf) -> Sandbox {
        let setpriv = match runs_as_root().then(|| crate::programs::find("setpriv")) {
            None => None,
            Some(Some(setpriv)) => Some(setpriv),
            Some(None) => {
                return Sandbox::Unavailable(unavailable(
                    "this runner runs as root, and setpriv (from util-linux, with which each \
                     check gives root up) is not on its PATH",
                ));
            }
        };
        let bwrap = Bwrap { program, setpriv };
        // The documented probe, with every namespace a check gets in place of the network's
        // alone, and the same change of user: a machine can allow a network namespace and
        // refuse a PID or user one, and then every check would fail inside bwrap instead of
        // saying here that the sandbox does not work.
        let mut args = Args::default();
        args.push(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        bwrap.own_tmp(&mut args);
        bwrap.confine(false, &mut args);
        let probe = Command::new(&bwrap.program)
            .args(args.0)
            .arg("--")
            .args(bwrap.start(Path::new("true")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        match probe {
            Ok(out) if out.status.success() => Sandbox::Bwrap(bwrap),
            Ok(out) => {
                let said = String::from_utf8_lossy(&out.stderr);
                let said = said.trim();
                let said = if said.is_empty() {
                    format!("it ended with {}", out.status)
                } else {
                    format!("it said: {said}")
                };
                Sandbox::Unavailable(unavailable(&format!(
                    "{} cannot start a sandbox ({said}); on Ubuntu 24.04 and later, AppArmor \
                     stops it unless an AppArmor profile allows bwrap user namespaces, and in a \
                     container it needs CAP_SYS_ADMIN and a seccomp profile that allows \
                     namespaces",
                    bwrap.program.display()
                )))
            }
            Err(error) => Sandbox::Unavailable(unavailable(&format!(
                "{} could not be started: {error}",
                bwrap.program.display()
            ))),
        }
    }

    /// The command that runs `program` with `args` in this sandbox, confined to `place`; the
    /// caller sets its environment and standard streams. `Err` carries the reason no check
    /// can run here.
    ///
    /// The command starts in `place.tree`. Its own environment is what the check gets: `bwrap`
    /// passes it through, so the caller must clear it and set only the check's variables.
    /// bay does not use `--clearenv` with `--setenv` for that, because `--setenv` would put
    /// the values of the check's `env` variables, often tokens, on a command line that every
    /// account on the machine can read in `/proc`.
    pub fn command(
        &self,
        place: &Confinement<'_>,
        program: &Path,
        args: &[&str],
    ) -> Result<Command, String> {
        let mut command = match self {
            Sandbox::Unavailable(reason) => return Err(reason.clone()),
            Sandbox::Off => Command::new(program),
            Sandbox::Bwrap(bwrap) => {
                let mut command = Command::new(&bwrap.program);
                command
                    .args(bwrap_args(bwrap, place))
                    .arg("--")
                    .args(bwrap.start(program));
                command
            }
        };
        command.args(args).current_dir(place.tree);
        Ok(command)
    }

    /// The user and group a check runs as when they are not the runner's: the owner the
    /// check's own folders must be handed to, so that it can write there.
    pub fn check_owner(&self) -> Option<(u32, u32)> {
        match self {
            Sandbox::Bwrap(Bwrap {
                setpriv: Some(_), ..
            }) => Some((CHECK_UID, CHECK_GID)),
            _ => None,
        }
    }
}

impl Bwrap {
    /// The namespaces and capabilities of a check: its own of every namespace (the network's
    /// only without `network`), and no capability, or for a root runner only those that
    /// [`Bwrap::start`]'s `setpriv` needs and gives up.
    fn confine(&self, network: bool, args: &mut Args) {
        if self.setpriv.is_some() {
            // Every namespace of `--unshare-all` but the user's, whose uids would all be root.
            args.push(["--unshare-ipc", "--unshare-pid", "--unshare-uts"]);
            args.push(["--unshare-cgroup-try"]);
            if !network {
                args.push(["--unshare-net"]);
            }
        } else {
            args.push(["--unshare-all"]);
            if network {
                args.push(["--share-net"]);
            }
        }
        // Run as root (as a runner in a container does), bwrap keeps every capability unless
        // told otherwise, and CAP_SYS_ADMIN in the host's namespaces would let a check mount
        // its way out.
        args.push(["--cap-drop", "ALL"]);
        if self.setpriv.is_some() {
            args.push(["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]);
        }
        args.push(["--die-with-parent", "--new-session"]);
    }

    /// The sandbox's own empty `/tmp`; one that any user may write when the check is not the
    /// runner.
    fn own_tmp(&self, args: &mut Args) {
        if self.setpriv.is_some() {
            args.push(["--perms", "1777"]);
        }
        args.push(["--tmpfs", "/tmp"]);
    }

    /// What bwrap starts for `program`: the program itself, or for a root runner `setpriv`,
    /// which becomes [`CHECK_UID`] and starts it.
    fn start(&self, program: &Path) -> Vec<OsString> {
        let mut start: Vec<OsString> = Vec::new();
        if let Some(setpriv) = &self.setpriv {
            start.push(setpriv.into());
            start.push(format!("--reuid={CHECK_UID}").into());
            start.push(format!("--regid={CHECK_GID}").into());
            start.extend(["--clear-groups", "--inh-caps=-all", "--"].map(OsString::from));
        }
        start.push(program.into());
        start
    }
}

/// Whether this process runs as root: `/proc/self` belongs to its effective user.
fn runs_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// The reason every check fails on a machine without a sandbox, and the two ways out.
fn unavailable(what: &str) -> String {
    format!(
        "no check sandbox works on this machine: {what}. Install bubblewrap (for example \
         `apt-get install bubblewrap`) and make `bwrap --ro-bind / / --unshare-all --dev /dev \
         --proc /proc true` succeed, or, to run checks without a sandbox on purpose, set `git \
         config --global {SETTING} {SETTING_NONE}`"
    )
}

/// The machine's global `bay.executorSandbox`, if set and readable.
///
/// Only the global config counts: a repository (or a change to it) must not be able to turn
/// the sandbox off. A config that cannot be read counts as unset, which keeps the sandbox on.
pub fn executor_setting() -> Option<String> {
    // Through the wrapper that bounds every `git` call in time and clears the variables that
    // would point Git at some repository: only the global file is read.
    let out = crate::git::Git::in_dir("/")
        .cmd(["config", "--global", "--get", SETTING])
        .output()
        .ok()?;
    out.success().then(|| out.text().trim().to_owned())
}

/// Directories that are either real directories or symlinks into `/usr` (merged `/usr`), and
/// that a program may need to start.
const SYSTEM_LINKS: [&str; 6] = ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];

/// Files under `/etc` that hold secrets: hidden behind `/dev/null`, which a check cannot read
/// through the sandbox's binds.
const ETC_SECRET_FILES: [&str; 4] = [
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
];

/// Directories under `/etc` that hold private keys: replaced by an empty one.
const ETC_SECRET_DIRS: [&str; 1] = ["/etc/ssl/private"];

/// The `bwrap` options that confine one check, up to (not including) the `--` before its
/// program.
fn bwrap_args(bwrap: &Bwrap, place: &Confinement<'_>) -> Vec<OsString> {
    let mut args = Args::default();
    for dir in ["/usr", "/etc"] {
        if Path::new(dir).is_dir() {
            args.push(["--ro-bind", dir, dir]);
        }
    }
    for link in SYSTEM_LINKS {
        let path = Path::new(link);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    args.push([OsString::from("--symlink"), target.into(), link.into()]);
                }
            }
            Ok(meta) if meta.is_dir() => args.push(["--ro-bind", link, link]),
            _ => {}
        }
    }
    args.push(["--dev", "/dev"]);
    args.push(["--proc", "/proc"]);
    // An empty /tmp of its own, before the binds below, so that a repository or a read path
    // kept under the host's /tmp is not hidden by it.
    bwrap.own_tmp(&mut args);
    // With systemd-resolved, /etc/resolv.conf points into /run, which is not bound; a check
    // with the network would have no names.
    let resolv = if place.network {
        resolv_conf_outside_etc()
    } else {
        None
    };
    if bwrap.setpriv.is_some() {
        // bwrap as root makes the missing parents of a mount point mode 0700, which only root
        // may pass through; made first, they are 0755, and the check reaches what is bound.
        let own = [place.tree, place.adapter, place.home, place.tmp];
        let bound = place.read.iter().map(PathBuf::as_path).chain(own);
        for dir in parents(bound.chain(resolv.as_deref())) {
            args.push([OsString::from("--dir"), dir.into()]);
        }
    }
    for dir in place.read {
        args.push([OsString::from("--ro-bind"), dir.into(), dir.into()]);
    }
    // The secrets are hidden after the read paths, so that a read path such as /etc cannot
    // bring them back.
    for secret in ETC_SECRET_FILES {
        if Path::new(secret).exists() {
            args.push(["--ro-bind", "/dev/null", secret]);
        }
    }
    for key in ssh_host_keys() {
        args.push([OsString::from("--ro-bind"), "/dev/null".into(), key.into()]);
    }
    for secret in ETC_SECRET_DIRS {
        if Path::new(secret).is_dir() {
            args.push(["--tmpfs", secret]);
        }
    }
    if let Some(resolv) = resolv {
        args.push([
            OsString::from("--ro-bind"),
            resolv.clone().into(),
            resolv.into(),
        ]);
    }
    args.push([
        OsString::from("--bind"),
        place.tree.into(),
        place.tree.into(),
    ]);
    args.push([
        OsString::from("--ro-bind"),
        place.adapter.into(),
        place.adapter.into(),
    ]);
    args.push([
        OsString::from("--bind"),
        place.home.into(),
        place.home.into(),
    ]);
    args.push([OsString::from("--bind"), place.tmp.into(), place.tmp.into()]);
    // The root bwrap builds is writable until now, so that it could make the mount points
    // above; a check's writes belong in its tree, HOME, TMPDIR or /tmp, never beside them.
    args.push(["--remount-ro", "/"]);
    bwrap.confine(place.network, &mut args);
    args.push([OsString::from("--chdir"), place.tree.into()]);
    args.0
}

/// Every directory above `paths` but `/`, once each, each before those below it.
fn parents<'a>(paths: impl Iterator<Item = &'a Path>) -> std::collections::BTreeSet<&'a Path> {
    paths
        .flat_map(|path| path.ancestors().skip(1))
        .filter(|dir| dir.parent().is_some())
        .collect()
}

/// The SSH host private keys in `/etc/ssh`, which the sandbox hides.
fn ssh_host_keys() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc/ssh") else {
        return Vec::new();
    };
    let mut keys: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("ssh_host_") && name.ends_with("_key"))
        })
        .collect();
    keys.sort();
    keys
}

/// The file `/etc/resolv.conf` resolves to, when that lies outside the directories the sandbox
/// binds anyway.
fn resolv_conf_outside_etc() -> Option<PathBuf> {
    let real = std::fs::canonicalize("/etc/resolv.conf").ok()?;
    let bound = real.starts_with("/etc") || real.starts_with("/usr");
    (!bound).then_some(real)
}

/// bwrap's arguments, pushed a whole option at a time.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push<const N: usize, T: Into<OsString>>(&mut self, option: [T; N]) {
        self.0.extend(option.into_iter().map(Into::into));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bwrap for a runner that is not root (`setpriv: None`), or for one that is.
    fn bwrap(setpriv: Option<&str>) -> Bwrap {
        Bwrap {
            program: PathBuf::from("/usr/bin/bwrap"),
            setpriv: setpriv.map(PathBuf::from),
        }
    }

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    fn place(network: bool) -> Vec<String> {
        place_as(&bwrap(None), network)
    }

    fn place_as(bwrap: &Bwrap, network: bool) -> Vec<String> {
        let place = Confinement {
            tree: Path::new("/r/.git/bay/check/c/tree"),
            adapter: Path::new("/r/.git/bay/check/c/adapter"),
            home: Path::new("/r/.git/bay/check/c/home"),
            tmp: Path::new("/r/.git/bay/check/c/tmp"),
            read: &[],
            network,
        };
        strings(bwrap_args(bwrap, &place))
    }

    #[test]
    fn the_network_is_shared_only_when_the_check_asks() {
        let closed = place(false);
        assert!(closed.contains(&"--unshare-all".to_owned()));
        assert!(!closed.contains(&"--share-net".to_owned()));
        assert!(place(true).contains(&"--share-net".to_owned()));
    }

    #[test]
    fn the_adapter_is_read_only_and_the_tree_is_the_working_directory() {
        let list = place(false);
        let args = list.join(" ");
        assert!(args.contains("--ro-bind /r/.git/bay/check/c/adapter /r/.git/bay/check/c/adapter"));
        assert!(args.contains("--bind /r/.git/bay/check/c/tree /r/.git/bay/check/c/tree"));
        assert!(args.contains("--chdir /r/.git/bay/check/c/tree"));
        assert!(args.contains("--cap-drop ALL"));
        assert!(args.contains("--remount-ro /"));
        // Nothing of the host beyond the system directories and the run's own four.
        for arg in &list {
            if arg.starts_with('/') && arg != "/" && !arg.starts_with("/r/.git/bay/check/c/") {
                let system = [
                    "/usr", "/etc", "/bin", "/sbin", "/lib", "/dev", "/proc", "/tmp",
                ];
                assert!(
                    system.iter().any(|dir| arg.starts_with(dir)),
                    "{arg} is bound"
                );
            }
        }
    }

    #[test]
    fn read_paths_are_bound_read_only_and_cannot_bring_a_secret_back() {
        let read = [PathBuf::from("/etc"), PathBuf::from("/opt/cache")];
        let place = Confinement {
            tree: Path::new("/r/t"),
            adapter: Path::new("/r/a"),
            home: Path::new("/r/h"),
            tmp: Path::new("/r/m"),
            read: &read,
            network: false,
        };
        let args = strings(bwrap_args(&bwrap(None), &place));
        let at = |option: &[&str]| {
            args.windows(option.len())
                .rposition(|w| w == option)
                .unwrap_or_else(|| panic!("{option:?} in {args:?}"))
        };
        let cache = at(&["--ro-bind", "/opt/cache", "/opt/cache"]);
        let etc = at(&["--ro-bind", "/etc", "/etc"]);
        assert!(
            at(&["--tmpfs", "/tmp"]) < cache,
            "a read path under /tmp stays seen"
        );
        if Path::new("/etc/shadow").exists() {
            assert!(etc < at(&["--ro-bind", "/dev/null", "/etc/shadow"]));
        }
    }

    #[test]
    fn a_root_runner_keeps_no_user_namespace_and_starts_the_check_through_setpriv() {
        let root = bwrap(Some("/usr/bin/setpriv"));
        for network in [false, true] {
            let args = place_as(&root, network);
            let has = |option: &[&str]| args.windows(option.len()).any(|w| w == option);
            assert!(!has(&["--unshare-all"]), "{args:?}");
            assert_eq!(has(&["--unshare-net"]), !network, "{args:?}");
            assert!(has(&["--unshare-pid"]) && has(&["--unshare-ipc"]));
            assert!(has(&["--cap-drop", "ALL", "--cap-add", "CAP_SETUID"]));
            assert!(has(&["--perms", "1777", "--tmpfs", "/tmp"]));
            // The way down to the check's folders is made passable before anything is bound.
            let first_bind = args.iter().position(|a| a == "--bind").expect("a bind");
            for dir in ["/r", "/r/.git", "/r/.git/bay/check/c"] {
                let made = args.windows(2).position(|w| w == ["--dir", dir]);
                assert!(made.is_some_and(|at| at < first_bind), "{dir} in {args:?}");
            }
            assert!(!has(&["--dir", "/r/.git/bay/check/c/tree"]));
        }
        let start = strings(root.start(Path::new("/r/a/check.sh")));
        assert_eq!(
            start,
            [
                "/usr/bin/setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--",
                "/r/a/check.sh"
            ]
        );
        // A runner that is not root runs the check itself, as itself.
        assert_eq!(strings(bwrap(None).start(Path::new("/x"))), ["/x"]);
        assert!(!place(false).contains(&"--dir".to_owned()));
        assert_eq!(Sandbox::Bwrap(root).check_owner(), Some((65534, 65534)));
        assert_eq!(Sandbox::Bwrap(bwrap(None)).check_owner(), None);
        assert_eq!(Sandbox::Off.check_owner(), None);
    }

    #[test]
    fn only_the_exact_value_none_turns_the_sandbox_off() {
        assert_eq!(Sandbox::detect(Some("none")), Sandbox::Off);
        assert_ne!(Sandbox::detect(Some("nope")), Sandbox::Off);
        assert_ne!(Sandbox::detect(None), Sandbox::Off);
    }

    #[test]
    fn a_bwrap_that_cannot_make_namespaces_is_unavailable_and_says_why() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let fake = dir.path().join("bwrap");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n",
        )
        .expect("write the fake bwrap");
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755))
            .expect("make it executable");
        // A file just written can be "text file busy" for a moment, while a process another
        // test's thread forks holds it open until it executes; that passes.
        let mut probed = Sandbox::bwrap_at(fake.clone());
        for _ in 0..5 {
            match &probed {
                Sandbox::Unavailable(reason) if reason.contains("Text file busy") => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    probed = Sandbox::bwrap_at(fake.clone());
                }
                _ => break,
            }
        }
        match probed {
            Sandbox::Unavailable(reason) => {
                assert!(reason.starts_with("no check sandbox works on this machine"));
                assert!(reason.contains("Creating new namespace failed"), "{reason}");
                assert!(reason.contains("AppArmor"), "{reason}");
                assert!(reason.contains("apt-get install bubblewrap"), "{reason}");
                assert!(reason.contains("bay.executorSandbox none"), "{reason}");
            }
            other => panic!("a failing bwrap must be unavailable, not {other:?}"),
        }
    }

    #[test]
    fn an_unavailable_sandbox_runs_nothing() {
        let place = Confinement {
            tree: Path::new("/"),
            adapter: Path::new("/"),
            home: Path::new("/"),
            tmp: Path::new("/"),
            read: &[],
            network: false,
        };
        let sandbox = Sandbox::Unavailable("no sandbox".into());
        assert_eq!(
            sandbox.command(&place, Path::new("/bin/true"), &[]).err(),
            Some("no sandbox".to_owned())
        );
    }
}
