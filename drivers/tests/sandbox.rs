//! What a check in the sandbox cannot reach: the runner's HOME, anything outside its own
//! directories, the repository's `.git`, keys, and the network unless its policy allows it.
//!
//! Each probe runs once in bwrap and once with the sandbox off, so that a "no" in the sandbox
//! is shown to come from the sandbox and not from a probe that could never say "yes".

mod support;

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bay_drivers::sandbox::Sandbox;
use support::checks::{Repo, bwrap, check, lines, marker, sleeps, text, vars};

/// Prints `name:yes` or `name:no` for each thing it tries.
const PROBE: &str = r#"#!/bin/sh
try() { if eval "$2" >/dev/null 2>&1; then echo "$1:yes"; else echo "$1:no"; fi; }
try secret 'cat "$SECRET_PATH"'
try etc_private 'cat "$ETC_PRIVATE"'
try root_private 'cat "$ROOT_PRIVATE"'
try real_home 'test -n "$(ls -A "$REAL_HOME")"'
try write_worktree 'echo x > "$WORKTREE/escaped"'
try write_host_tmp 'echo x > "/tmp/$ESCAPE_NAME"'
try write_adapter 'echo x >> "$BAY_ADAPTER_DIR/.bay/check.sh"'
try write_tree 'echo x > in-tree'
try write_home 'echo x > "$HOME/h"'
try write_tmpdir 'echo x > "$TMPDIR/t"'
try git_head 'cat "$GIT_DIR_PATH/HEAD"'
try git_config 'cat "$GIT_DIR_PATH/config"'
try git_objects 'test -n "$(ls -A "$GIT_DIR_PATH/objects")"'
try git_repo 'git rev-parse --git-dir'
try shadow 'cat /etc/shadow'
try ssl_private 'test -n "$(ls -A /etc/ssl/private)"'
try opt 'test -n "$(ls -A /opt)"'
try sys 'test -n "$(ls -A /sys)"'
echo "git_dir_holds:$(ls -A "$GIT_DIR_PATH" | tr '\n' ' ')"
echo "cap_eff:$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)"
"#;

/// A file of mode 0600 at `path`, owned by the test's user, removed when dropped.
struct Private(PathBuf);

impl Private {
    fn at(path: PathBuf) -> Private {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&path, "private\n").expect("write the private file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .expect("make it private");
        Private(path)
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_sandboxed_check_sees_only_its_own_directories() {
    // Under the target directory, which need not be outside /tmp (CI may check out there).
    let repo = Repo::with_in(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &[(".bay/check.sh", PROBE)],
    );
    // A HOME of the runner's, holding a secret, outside every directory the check is given.
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary HOME");
    let secret = home.path().join("secret");
    std::fs::write(&secret, "hunter2\n").expect("write the secret");
    let escape_name = format!(
        "bay-escape-{}",
        home.path()
            .file_name()
            .expect("a temporary directory has a name")
            .to_string_lossy()
    );
    let host_tmp = Path::new("/tmp").join(&escape_name);
    let git_dir = std::fs::canonicalize(&repo.git_dir).expect("the Git directory exists");
    let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    // Files only root may read, where a runner that runs as root keeps them: the sandbox binds
    // /etc, and root owns them, so only a check that is not root is kept from them. Where the
    // test is not root, it cannot write there, and its private files lie in HOME, tried above.
    let root = std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0);
    let private = |dir: &str| {
        let path = Path::new(dir).join(format!("bay-private-{escape_name}"));
        (root.then(|| Private::at(path.clone())), path)
    };
    let (_etc_file, etc_private) = private("/etc");
    let (_root_file, root_private) = private("/root");
    let env = vars(&[
        ("ETC_PRIVATE", &etc_private.display().to_string()),
        ("ROOT_PRIVATE", &root_private.display().to_string()),
        ("SECRET_PATH", &secret.display().to_string()),
        ("REAL_HOME", &real_home),
        ("WORKTREE", &repo.work.display().to_string()),
        ("ESCAPE_NAME", &escape_name),
        ("GIT_DIR_PATH", &git_dir.display().to_string()),
    ]);
    let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
    spec.env = env.keys().cloned().collect();

    let exit = repo.run(spec.clone(), &repo.base, &bwrap(), &env);
    assert_eq!(exit.infra, None);
    let seen = lines(&exit);
    let out = text(&exit);
    // A write to the work tree's path is judged on the host below: when the checkout lies
    // under /tmp, the path leads into the sandbox's own /tmp, where a write lands harmlessly.
    for denied in [
        "secret",
        "etc_private",
        "root_private",
        "write_adapter",
        "git_head",
        "git_config",
        "git_objects",
        "git_repo",
        "shadow",
        "ssl_private",
        "opt",
        "sys",
    ] {
        assert_eq!(seen[denied], "no", "{denied} in the sandbox:\n{out}");
    }
    for allowed in ["write_tree", "write_home", "write_tmpdir"] {
        assert_eq!(seen[allowed], "yes", "{allowed} in the sandbox:\n{out}");
    }
    if Path::new(&real_home).is_dir() {
        assert_eq!(
            seen["real_home"], "no",
            "the runner's HOME {real_home}:\n{out}"
        );
    }
    // Of the whole Git directory, only the way down to the check's own directories exists.
    assert_eq!(seen["git_dir_holds"], "bay ");
    assert_eq!(seen["cap_eff"], "0000000000000000");
    // A write to /tmp stays in the sandbox; nothing reached the host's /tmp or the work tree.
    assert!(!host_tmp.exists(), "the check wrote {}", host_tmp.display());
    assert!(!repo.work.join("escaped").exists());
    // The check's folders went with the run.
    assert!(!repo.dirs(&repo.base).root.exists());

    // The same probe without the sandbox reaches all of it, so each "no" above is the
    // sandbox's doing.
    let exit = repo.run(spec, &repo.base, &Sandbox::Off, &env);
    let open = lines(&exit);
    let mut reached = vec![
        "secret",
        "write_worktree",
        "write_host_tmp",
        "git_head",
        "git_config",
    ];
    if root {
        reached.extend(["etc_private", "root_private"]);
    }
    for reached in reached {
        assert_eq!(
            open[reached],
            "yes",
            "{reached} without the sandbox:\n{}",
            text(&exit)
        );
    }
    assert!(host_tmp.exists());
    std::fs::remove_file(&host_tmp).expect("remove the probe's file from /tmp");
}

/// Connects to the host's listener on `$PORT` and says whether it got through.
const CONNECT: &str = r#"#!/bin/bash
if exec 3<>"/dev/tcp/127.0.0.1/$PORT"; then
    read -r line <&3
    echo "net:connected $line"
else
    echo "net:refused"
fi
"#;

/// Accepts connections on 127.0.0.1 in the test's own network namespace, greeting each, and
/// counts them until `until`.
fn listen() -> (u16, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen on 127.0.0.1");
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let port = listener.local_addr().expect("a bound address").port();
    let handle = std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(15);
        let mut accepted = 0;
        while Instant::now() < until && accepted == 0 {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.write_all(b"hello\n");
                    accepted += 1;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        accepted
    });
    (port, handle)
}

#[test]
fn the_network_is_closed_unless_the_check_says_network_true() {
    let repo = Repo::with(&[(".bay/check.sh", CONNECT)]);
    let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
    spec.env = vec!["PORT".into()];
    spec.timeout_s = 10;

    // Closed: 127.0.0.1 inside is the sandbox's own, where nothing listens.
    let (port, _listener) = listen();
    let env = vars(&[("PORT", &port.to_string())]);
    let exit = repo.run(spec.clone(), &repo.base, &bwrap(), &env);
    assert_eq!(lines(&exit)["net"], "refused", "{exit:?}");

    // Open: the check reaches the host's listener.
    let (port, listener) = listen();
    let env = vars(&[("PORT", &port.to_string())]);
    spec.network = true;
    let exit = repo.run(spec, &repo.base, &bwrap(), &env);
    assert_eq!(lines(&exit)["net"], "connected hello", "{exit:?}");
    assert_eq!(listener.join().expect("the listener thread ends"), 1);
}

#[test]
fn the_sandbox_ends_even_a_grandchild_that_left_the_group() {
    let script = "#!/bin/sh\nsetsid sh -c 'sleep \"$MARK\"; echo late' &\nsleep 30\n";
    let repo = Repo::with(&[(".bay/check.sh", script)]);
    let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
    spec.timeout_s = 1;
    spec.env = vec!["MARK".into()];
    let mark = marker();
    let exit = repo.run(spec, &repo.base, &bwrap(), &vars(&[("MARK", &mark)]));
    assert!(exit.timed_out);
    assert!(!sleeps(&mark), "the grandchild outlived the check");
}
