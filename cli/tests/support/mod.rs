//! A real bare remote and real clones in a temporary folder, and the `bay` binary run against
//! them as agents and runners run it. Every document bay prints is held to its schema here.
#![allow(dead_code)]

pub mod home;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BAY: &str = env!("CARGO_BIN_EXE_bay");

/// A check that passes every file under `src/` that is not empty and has no conflict markers.
pub const CHECK: &str = r#"#!/bin/sh
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
units=""
count=0
for file in $(find src -type f | sort); do
  if [ -s "$file" ] && ! grep -q '^<<<<<<<' "$file"; then v='"pass"'; else v='"product_failure","reason":"bad file"'; fi
  units="$units${units:+,}{\"id\":\"$file\",\"verdict\":$v}"
  count=$((count + 1))
done
printf '{"schema":"bay.check.result/1","exercised":{"commit":"%s","tree":"%s"},"plan":{"selected":%d,"completed":%d},"checks":[%s]}\n' "$commit" "$tree" "$count" "$count" "$units"
"#;

/// A policy with one check, `check`, run by `.bay/check`.
pub fn policy(extra: &str) -> String {
    format!(
        "revision = 1\n\n[[check]]\nid = \"files\"\nenvironment = \"any\"\ncommand = \".bay/check\"\nadapter = [\".bay/check\"]\nexpected_minimum = 1\ntimeout_s = 60\npath = [\"/usr/bin\", \"/bin\"]\n{extra}"
    )
}

/// A check that leaves its mark in `$RENDEZVOUS` and passes only once the other check's mark
/// is there too (waiting up to `wait` tenths of a second): it passes only when both run at
/// once. It needs no sandbox, to share the folder.
pub fn rendezvous(me: &str, other: &str, wait: u32) -> String {
    CHECK.replace(
        "units=\"\"",
        &format!(
            "units=\"\"\n: > \"$RENDEZVOUS/{me}\"\nn=0\nwhile [ ! -e \"$RENDEZVOUS/{other}\" ] && [ $n -lt {wait} ]; do sleep 0.1; n=$((n + 1)); done\n[ -e \"$RENDEZVOUS/{other}\" ] || printf '{{\"schema\":\"bay.check.result/1\",\"exercised\":{{\"commit\":\"%s\",\"tree\":\"%s\"}},\"plan\":{{\"selected\":1,\"completed\":1}},\"checks\":[{{\"id\":\"alone\",\"verdict\":\"product_failure\"}}]}}\\n' \"$commit\" \"$tree\"\n[ -e \"$RENDEZVOUS/{other}\" ] || exit 1"
        ),
    )
}

/// A remote with `config` whose policy (plus `policy_extra`) requires two [`rendezvous`]
/// checks, `a` and `b`, which pass only when they run at once.
pub fn rendezvous_world_with(config: &str, policy_extra: &str, wait: u32) -> World {
    let check = |id: &str, program: &str| {
        format!(
            "\n[[check]]\nid = \"{id}\"\nenvironment = \"any\"\ncommand = \"{program}\"\nadapter = [\"{program}\"]\nexpected_minimum = 1\ntimeout_s = 60\nenv = [\"RENDEZVOUS\"]\n"
        )
    };
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", config, false),
        (
            ".bay/policy.toml",
            &format!(
                "revision = 1\n{}{}{policy_extra}",
                check("a", ".bay/a"),
                check("b", ".bay/b")
            ),
            false,
        ),
        (".bay/a", &rendezvous("a", "b", wait), true),
        (".bay/b", &rendezvous("b", "a", wait), true),
    ])
}

/// `bay runner run --once` by the admin on a machine with no sandbox, with `RENDEZVOUS` set
/// to a new folder, for checks made by [`rendezvous`].
pub fn run_once_with_rendezvous(world: &World) -> Ran {
    let home = world.root.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    write(&home, ".gitconfig", "[bay]\n\texecutorSandbox = none\n");
    let meeting = world.root.path().join("meeting");
    std::fs::create_dir_all(&meeting).expect("mkdir");
    bay_with(
        &world.admin,
        "runner",
        &["runner", "run", "--once"],
        &[
            ("HOME", home.to_str().expect("utf-8")),
            ("RENDEZVOUS", meeting.to_str().expect("utf-8")),
        ],
    )
}

/// A short lease, so that tests of takeovers wait seconds, not a minute.
pub const CONFIG: &str = "[runner]\nlease_s = 3\nheartbeat_s = 1\n";

pub struct World {
    pub root: tempfile::TempDir,
    pub remote: PathBuf,
    pub admin: PathBuf,
}

/// What one bay run gave.
#[derive(Debug)]
pub struct Ran {
    pub doc: Value,
    pub code: i32,
    pub stderr: String,
}

impl World {
    /// A remote whose main holds `files` (path, content, executable).
    pub fn new(files: &[(&str, &str, bool)]) -> World {
        World::on_branch("main", files)
    }

    /// A remote whose default branch is `branch`, holding `files`.
    pub fn on_branch(branch: &str, files: &[(&str, &str, bool)]) -> World {
        let root = tempfile::Builder::new()
            .prefix("bay-e2e-")
            .tempdir()
            .expect("a temporary folder");
        let remote = root.path().join("remote.git");
        git(
            root.path(),
            &[
                "init",
                "--quiet",
                "--bare",
                &format!("--initial-branch={branch}"),
                "remote.git",
            ],
        );
        let world = World {
            admin: root.path().join("admin"),
            remote,
            root,
        };
        world.clone_as("admin");
        for (path, content, executable) in files {
            if *executable {
                write_program(&world.admin, path, content);
            } else {
                write(&world.admin, path, content);
            }
        }
        git(&world.admin, &["add", "--all"]);
        git(&world.admin, &["commit", "--quiet", "-m", "first"]);
        git(&world.admin, &["push", "--quiet", "origin", branch]);
        world
    }

    /// The usual world: a greeting, the config, and a policy running `CHECK`.
    pub fn standard() -> World {
        World::new(&[
            ("src/greeting.txt", "Hello\n", false),
            ("src/other.txt", "Other\n", false),
            (".bay/config.toml", CONFIG, false),
            (".bay/policy.toml", &policy(""), false),
            (".bay/check", CHECK, true),
        ])
    }

    /// A greeting, the config `CONFIG` with `runner` added to its `[runner]` table, and a
    /// policy running `CHECK`.
    pub fn with_runner(runner: &str) -> World {
        World::new(&[
            ("src/greeting.txt", "Hello\n", false),
            (".bay/config.toml", &format!("{CONFIG}{runner}"), false),
            (".bay/policy.toml", &policy(""), false),
            (".bay/check", CHECK, true),
        ])
    }

    pub fn clone_as(&self, name: &str) -> PathBuf {
        self.clone_calling_it(name, "origin")
    }

    /// A clone as `name` (its Git identity and runner name) whose remote is called `remote`.
    pub fn clone_calling_it(&self, name: &str, remote: &str) -> PathBuf {
        git(
            self.root.path(),
            &["clone", "--quiet", "--origin", remote, "remote.git", name],
        );
        let dir = self.root.path().join(name);
        git(&dir, &["config", "user.name", name]);
        git(
            &dir,
            &["config", "user.email", &format!("{name}@test.invalid")],
        );
        git(&dir, &["config", "bay.runnerName", name]);
        dir
    }

    /// Starts a change as `actor` in `clone`, writes `content` to `path` in its view, and asks
    /// to merge it. Returns the change and the view.
    pub fn submit(
        &self,
        clone: &Path,
        actor: &str,
        intent: &str,
        path: &str,
        content: &str,
    ) -> (String, PathBuf) {
        let (change, view) = self.edited(clone, actor, intent, path, content, &[]);
        let merge = bay(&view, actor, &["merge"]);
        assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
        (change, view)
    }

    /// Starts a change as `actor` in `clone` on `path` (with `extra` arguments) and writes
    /// `content` there in its view. Returns the change and the view.
    pub fn edited(
        &self,
        clone: &Path,
        actor: &str,
        intent: &str,
        path: &str,
        content: &str,
        extra: &[&str],
    ) -> (String, PathBuf) {
        let mut args = vec!["start", intent, "--paths", path];
        args.extend_from_slice(extra);
        let start = bay(clone, actor, &args);
        assert_eq!(start.code, 0, "{start:?}");
        let view = PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
        write(&view, path, content);
        let change = start.doc["change"].as_str().expect("a change").to_string();
        (change, view)
    }

    /// Merges one edit of `path` as `actor` (in a clone of that name) through a runner;
    /// returns the change.
    pub fn merged(&self, actor: &str, intent: &str, path: &str, content: &str) -> String {
        let clone = self.clone_as(actor);
        let (change, view) = self.submit(&clone, actor, intent, path, content);
        bay(&self.admin, "runner", &["runner", "run", "--once"]);
        let status = bay(&view, actor, &["status"]);
        assert_eq!(status.doc["decision"], "merged", "{status:?}");
        change
    }

    /// A commit of the empty tree on `parents` with `message`, written straight into the
    /// remote, as bay's records are (a step, a lock): for a test that plants or forges one.
    pub fn record_commit(&self, parents: &[&str], message: &str) -> String {
        let empty = git_dir(
            &self.remote,
            &["hash-object", "-t", "tree", "-w", "/dev/null"],
        );
        let mut args = vec!["commit-tree", empty.trim()];
        for parent in parents {
            args.extend(["-p", parent]);
        }
        args.extend(["-m", message]);
        git_dir(&self.remote, &args).trim().to_owned()
    }

    /// A ref's value on the remote.
    pub fn remote_ref(&self, name: &str) -> Option<String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&self.remote)
            .args(["rev-parse", "--verify", "--quiet", name])
            .output()
            .expect("git runs");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The remote's refs that hold `value`.
    pub fn refs_at(&self, value: &str) -> Vec<String> {
        git_dir(
            &self.remote,
            &["for-each-ref", "--format=%(objectname) %(refname)"],
        )
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(oid, _)| *oid == value)
        .map(|(_, name)| name.to_string())
        .collect()
    }

    /// Main's commits on the remote, newest first, as `%H %s`, with their messages' bodies.
    pub fn main_log(&self) -> Vec<String> {
        let out = git_dir(
            &self.remote,
            &["log", "--first-parent", "--format=%H%x00%B%x01", "main"],
        );
        out.split('\u{1}')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// How many commits on main carry this change's id.
    pub fn merges_of(&self, change: &str) -> usize {
        let needle = format!("Change-Id: {change}");
        self.main_log()
            .iter()
            .filter(|entry| entry.contains(&needle))
            .count()
    }

    /// The steps of a change's chain on the remote, oldest first, as their JSON.
    pub fn chain(&self, change: &str) -> Vec<Value> {
        let out = git_dir(
            &self.remote,
            &[
                "log",
                "--first-parent",
                "--reverse",
                "--format=%B%x01",
                &format!("refs/bay/changes/{change}"),
            ],
        );
        out.split('\u{1}')
            .filter_map(|message| {
                message
                    .trim()
                    .split_once("\n\n")
                    .map(|(_, body)| body.to_string())
            })
            .map(|body| serde_json::from_str(body.trim()).expect("a step document"))
            .collect()
    }

    /// How many evidence records `producer` holds on the remote, over every object it noted.
    pub fn evidence_lines(&self, producer: &str) -> usize {
        self.evidence(producer).len()
    }

    /// Every evidence record `producer` holds on the remote, one per line of its notes.
    pub fn evidence(&self, producer: &str) -> Vec<Value> {
        let notes = format!("refs/notes/bay/evidence/{producer}");
        if self.remote_ref(&notes).is_none() {
            return Vec::new();
        }
        git_dir(&self.remote, &["notes", "--ref", &notes, "list"])
            .lines()
            .filter_map(|line| line.split_whitespace().nth(1))
            .flat_map(|object| {
                git_dir(&self.remote, &["notes", "--ref", &notes, "show", object])
                    .lines()
                    .map(|line| serde_json::from_str(line).expect("a record is JSON"))
                    .collect::<Vec<Value>>()
            })
            .collect()
    }

    /// Starts a looping runner in `clone`, in the background.
    pub fn spawn_runner(&self, clone: &Path) -> Child {
        Command::new(BAY)
            .arg("-C")
            .arg(clone)
            .args(["--json", "runner", "run", "--interval-s", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bay starts")
    }
}

/// Runs bay as `actor` in `dir` with `--json`, and holds its document to the schema.
pub fn bay(dir: &Path, actor: &str, args: &[&str]) -> Ran {
    bay_with(dir, actor, args, &[])
}

pub fn bay_with(dir: &Path, actor: &str, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut command = Command::new(BAY);
    // Run in `dir` too, as an agent in its view does: nothing may depend on which is used.
    command
        .current_dir(dir)
        .arg("-C")
        .arg(dir)
        .arg("--json")
        .args(args)
        .env("BAY_ACTOR", actor);
    for (name, value) in env {
        command.env(name, value);
    }
    held(&mut command, args)
}

/// Runs `command` (bay with `--json` and `args`), and holds its document to the schema.
pub fn held(command: &mut Command, args: &[&str]) -> Ran {
    let out = command.output().expect("bay runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "bay {args:?} printed no one document: {stdout:?} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        stdout.trim().lines().count(),
        1,
        "exactly one document on stdout"
    );
    let schema: Value = serde_json::from_str(bay_core::schema::RESULT).expect("the schema is JSON");
    if let Err(errors) = schema_errors(&schema, &doc) {
        panic!("bay {args:?} printed a document outside bay.result/1: {errors:?}\n{doc}");
    }
    let code = out.status.code().expect("bay exits with a code");
    Ran {
        doc,
        code,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn git_dir(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn write(dir: &Path, path: &str, content: &str) {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
    std::fs::write(file, content).expect("write");
}

/// Writes `content` to `path` under `dir`, executable, as a script Git keeps with mode 100755.
pub fn write_program(dir: &Path, path: &str, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(dir, path, content);
    std::fs::set_permissions(dir.join(path), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
}

/// Feeds `bay hook <moment>` in `tree` the Claude Code payload of `event` for `session` as
/// actor `ann`, with `env` (such as the session's environment file), and waits for its answer,
/// which must be a success.
pub fn claude_hook(tree: &Path, moment: &str, event: &str, session: &str, env: &[(&str, &Path)]) {
    let payload = serde_json::json!({
        "session_id": session,
        "cwd": tree,
        "hook_event_name": event,
        "permission_mode": "default",
    });
    let mut child = Command::new(BAY)
        .current_dir(tree)
        .args(["hook", moment])
        .env("BAY_ACTOR", "ann")
        .env_remove("CLAUDE_ENV_FILE")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bay hook runs");
    std::io::Write::write_all(
        &mut child.stdin.take().expect("a stdin"),
        payload.to_string().as_bytes(),
    )
    .expect("the payload is written");
    assert!(child.wait().expect("bay hook ends").success());
}

/// Waits until `condition` holds, failing the test after `limit`. The wait is for an event
/// in another process, never a guess at how long something takes.
pub fn wait_until(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < until, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `bay.event/1` documents on runner `runner`'s log on the remote, oldest first, each held
/// to the event schema, with each commit's subject.
pub fn log_events(world: &World, runner: &str) -> Vec<(String, Value)> {
    let name = format!("refs/bay/log/{runner}");
    if world.remote_ref(&name).is_none() {
        return Vec::new();
    }
    let out = git_dir(
        &world.remote,
        &[
            "log",
            "--reverse",
            "--first-parent",
            "--format=%B%x01",
            &name,
        ],
    );
    let schema: Value = serde_json::from_str(bay_core::schema::EVENT).expect("the schema is JSON");
    out.split('\u{1}')
        .map(str::trim)
        .filter(|message| !message.is_empty())
        .map(|message| {
            let (subject, body) = message.split_once("\n\n").expect("a subject and a body");
            let event: Value = serde_json::from_str(body).expect("the body is JSON");
            if let Err(errors) = schema_errors(&schema, &event) {
                panic!("an event outside bay.event/1: {errors:?}\n{event}");
            }
            (subject.to_string(), event)
        })
        .collect()
}

/// The post check `smoke`'s answer on `commit` in the environment `any`, as the producer `ci`
/// outside bay records it from `clone` with `bay evidence record`.
pub fn smoke_answer(clone: &Path, commit: &str, verdict: &str) -> Ran {
    bay_with(
        clone,
        "ci",
        &[
            "evidence",
            "record",
            "--kind",
            "check",
            "--verdict",
            verdict,
            "--commit",
            commit,
            "--check",
            "smoke",
            "--environment",
            "any",
        ],
        &[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "bay.producerName"),
            ("GIT_CONFIG_VALUE_0", "ci"),
        ],
    )
}

/// A new ed25519 key pair made by ssh-keygen at `dir/name` (and `.pub`), with no passphrase.
pub fn keygen(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let out = Command::new("ssh-keygen")
        .args(["-t", "ed25519", "-q", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .output()
        .expect("ssh-keygen runs (CI installs openssh-client)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// The admin clone's runner keys, made by ssh-keygen in `dir`.
pub struct RunnerKeys {
    pub dir: PathBuf,
    pub executor: PathBuf,
    pub producer: PathBuf,
}

/// Starts a key registry that signs everything on `world`'s remote, with a registry key and,
/// for the admin clone's runner (`admin`), an executor and a producer key enrolled; the
/// runner's keys are not configured yet ([`configure_runner_keys`]).
pub fn enrol_runner_keys(world: &World) -> RunnerKeys {
    let dir = world.root.path().join("keys");
    std::fs::create_dir(&dir).expect("a folder for keys");
    let registry = keygen(&dir, "bay-registry");
    let keys = RunnerKeys {
        executor: keygen(&dir, "bay-executor"),
        producer: keygen(&dir, "bay-producer"),
        dir,
    };
    let utf8 = |path: &Path| path.to_str().expect("a UTF-8 path").to_owned();
    git(
        &world.admin,
        &["config", "bay.registryKey", &utf8(&registry)],
    );
    for (class, key) in [
        ("registry", &registry),
        ("executor", &keys.executor),
        ("producer", &keys.producer),
    ] {
        let public = format!("{}.pub", key.display());
        let ran = bay(&world.admin, "admin", &["enrol", class, "admin", &public]);
        assert_eq!(ran.code, 0, "{ran:?}");
    }
    keys
}

/// Points the admin clone's Git config at the runner keys, so that its runner signs.
pub fn configure_runner_keys(world: &World, keys: &RunnerKeys) {
    let utf8 = |path: &Path| path.to_str().expect("a UTF-8 path").to_owned();
    git(
        &world.admin,
        &["config", "bay.executorKey", &utf8(&keys.executor)],
    );
    git(
        &world.admin,
        &["config", "bay.producerKey", &utf8(&keys.producer)],
    );
}

/// Holds `doc` to `schema` (one of bay's published schemas) with a real validator: every way
/// it fails, each with the path where.
pub fn schema_errors(schema: &Value, doc: &Value) -> Result<(), Vec<String>> {
    let validator = jsonschema::validator_for(schema).expect("a published schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
