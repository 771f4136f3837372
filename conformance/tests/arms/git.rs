//! The real arm: `bay-drivers` against a real bare repository, with a clone for the driver.
//! The suite's hands and eyes are plain `git` commands, never the driver under test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use bay_conformance::{Arm, Files};
use bay_core::git::{Oid, refs};
use bay_core::id::ChangeId;
use bay_core::machine::{Action, Completion, NewValue, PushPlan, PushReport};
use bay_drivers::remote::{Bounds, Repo};
use bay_drivers::views::Views;
use tempfile::TempDir;

#[derive(Debug)]
pub struct GitArm {
    _dir: TempDir,
    server: PathBuf,
    clone: PathBuf,
    repo: Repo,
    views: Views,
}

/// `git <args>` in `dir` with a fixed identity and no user or system config.
fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    git_indexed(dir, args, stdin, None)
}

/// The same, with a scratch index.
fn git_indexed(dir: &Path, args: &[&str], stdin: Option<&[u8]>, index: Option<&Path>) -> Output {
    let mut command = Command::new("git");
    if let Some(index) = index {
        command.env("GIT_INDEX_FILE", index);
    }
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "tester")
        .env("GIT_AUTHOR_EMAIL", "tester@localhost")
        .env("GIT_COMMITTER_NAME", "tester")
        .env("GIT_COMMITTER_EMAIL", "tester@localhost")
        // One date for every commit the test makes, as the model's commits have none: Git
        // orders commits of one date by when it met them, and a case never depends on which
        // second a commit was made in (a criss-cross's merge base would).
        .env("GIT_AUTHOR_DATE", "1700000000 +0000")
        .env("GIT_COMMITTER_DATE", "1700000000 +0000")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("git runs");
    if let Some(bytes) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("a piped stdin")
            .write_all(bytes)
            .expect("git reads its input");
    }
    child.wait_with_output().expect("git finishes")
}

/// `git <args>` that must succeed; its output, trimmed.
fn must(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    must_indexed(dir, args, stdin, None)
}

fn must_indexed(dir: &Path, args: &[&str], stdin: Option<&[u8]>, index: Option<&Path>) -> String {
    let out = git_indexed(dir, args, stdin, index);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn oid(text: &str) -> Oid {
    Oid::parse(text.trim()).expect("git printed an object id")
}

impl GitArm {
    pub fn new() -> GitArm {
        let dir = tempfile::tempdir().expect("a temp dir");
        let server = dir.path().join("server.git");
        let clone = dir.path().join("clone");
        for (repo, bare) in [(&server, true), (&clone, false)] {
            let path = repo.to_string_lossy().into_owned();
            let mut args = vec!["init", "-q", "-b", "main"];
            if bare {
                args.push("--bare");
            }
            args.push(&path);
            must(dir.path(), &args, None);
        }
        let server_path = server.to_string_lossy().into_owned();
        must(&clone, &["remote", "add", "origin", &server_path], None);
        let repo = Repo::new(&clone, "origin", "main").expect("valid names");
        let views = Views::new(&clone, clone.join(".git"));
        GitArm {
            _dir: dir,
            server,
            clone,
            repo,
            views,
        }
    }

    fn on_server(&self, name: &str) -> Option<Oid> {
        let out = git(
            &self.server,
            &["rev-parse", "--verify", "--quiet", name],
            None,
        );
        out.status
            .success()
            .then(|| oid(&String::from_utf8_lossy(&out.stdout)))
    }

    /// Every ref a plan moves.
    fn names(plan: &PushPlan) -> Vec<String> {
        let mut names: Vec<String> = plan.updates.iter().map(|u| u.name.clone()).collect();
        names.extend(plan.appends.iter().map(|a| refs::change(&a.change)));
        names.extend(plan.notes.iter().map(|n| refs::evidence(&n.producer)));
        names
    }
}

impl Arm for GitArm {
    fn commit(&mut self, parents: &[Oid], files: &[(&str, &str)], message: &str) -> Oid {
        let scratch = tempfile::tempdir().expect("a temp dir");
        let index = scratch.path().join("index");
        for (path, content) in files {
            let blob = must(
                &self.clone,
                &["hash-object", "-w", "--stdin"],
                Some(content.as_bytes()),
            );
            let entry = format!("100644,{blob},{path}");
            let args = ["update-index", "--add", "--cacheinfo", &entry];
            must_indexed(&self.clone, &args, None, Some(&index));
        }
        let tree = if files.is_empty() {
            must(&self.clone, &["mktree"], Some(b""))
        } else {
            must_indexed(&self.clone, &["write-tree"], None, Some(&index))
        };
        let mut args = vec!["commit-tree".to_owned(), tree, "-m".into(), message.into()];
        for parent in parents {
            args.push("-p".into());
            args.push(parent.to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        oid(&must(&self.clone, &args, None))
    }

    fn set_remote_ref(&mut self, name: &str, value: Option<&Oid>) {
        let spec = match value {
            Some(oid) => format!("+{oid}:{name}"),
            None => format!(":{name}"),
        };
        must(&self.clone, &["push", "-q", "origin", &spec], None);
    }

    fn remote_ref(&mut self, name: &str) -> Option<Oid> {
        self.on_server(name)
    }

    fn files(&mut self, commit: &Oid) -> Option<Files> {
        let out = git(
            &self.clone,
            &[
                "ls-tree",
                "-r",
                "-z",
                "--format=%(objectname) %(path)",
                commit.as_str(),
            ],
            None,
        );
        if !out.status.success() {
            return None;
        }
        let listing = String::from_utf8_lossy(&out.stdout).into_owned();
        Some(
            listing
                .split('\0')
                .filter(|entry| !entry.is_empty())
                .map(|entry| {
                    let (blob, path) = entry.split_once(' ').expect("an id and a path");
                    let content = git(&self.clone, &["cat-file", "blob", blob], None).stdout;
                    (
                        path.to_owned(),
                        String::from_utf8_lossy(&content).into_owned(),
                    )
                })
                .collect(),
        )
    }

    fn shape(&mut self, commit: &Oid) -> Option<(Oid, Vec<Oid>)> {
        let out = git(&self.clone, &["cat-file", "commit", commit.as_str()], None);
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let header = text.split("\n\n").next().unwrap_or_default();
        let mut tree = None;
        let mut parents = Vec::new();
        for line in header.lines() {
            if let Some(id) = line.strip_prefix("tree ") {
                tree = Some(oid(id));
            } else if let Some(id) = line.strip_prefix("parent ") {
                parents.push(oid(id));
            }
        }
        Some((tree?, parents))
    }

    fn notes(&mut self, notes_ref: &str, object: &Oid) -> Vec<String> {
        let out = git(
            &self.server,
            &["notes", "--ref", notes_ref, "show", object.as_str()],
            None,
        );
        if !out.status.success() {
            return Vec::new();
        }
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn execute(&mut self, action: &Action) -> Completion {
        if let Some(completion) = self.repo.execute(action) {
            return completion;
        }
        match action {
            Action::MakeView {
                change,
                paths,
                draft,
            } => Completion::ViewMade(self.views.make(change, paths, draft)),
            Action::FreezeDraft {
                change,
                parent,
                labels,
                ..
            } => Completion::DraftFrozen(self.views.freeze(change, parent, labels)),
            Action::RefreshDraft {
                change,
                draft,
                base,
                onto,
                labels,
            } => Completion::DraftRefreshed(self.views.refresh(change, draft, base, onto, labels)),
            other => panic!("the suite runs no {}", other.name()),
        }
    }

    /// The server's `pre-receive` hook holds the push past the driver's time bound, so the
    /// driver kills its push before any answer; the server then applies it.
    fn push_reply_lost(&mut self, plan: &PushPlan) -> PushReport {
        let names = GitArm::names(plan);
        let before: Vec<Option<Oid>> = names.iter().map(|n| self.on_server(n)).collect();
        let hook = self.server.join("hooks").join("pre-receive");
        std::fs::create_dir_all(hook.parent().expect("hooks has a parent")).expect("mkdir");
        std::fs::write(&hook, "#!/bin/sh\nsleep 1\n").expect("the hook is written");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))
            .expect("the hook is made executable");
        let hurried = Repo::new(&self.clone, "origin", "main")
            .expect("valid names")
            .with_bounds(Bounds {
                local: Duration::from_secs(30),
                network: Duration::from_millis(300),
            });
        let report = hurried.push(plan);
        // Wait for the server to finish what it was sent; a push that moves no ref (it was
        // refused) has nothing to wait for beyond the hook.
        let deadline = Instant::now() + Duration::from_secs(15);
        let moves = plan
            .updates
            .iter()
            .any(|u| !matches!(u.new, NewValue::Delete))
            || !plan.appends.is_empty();
        while moves
            && Instant::now() < deadline
            && names
                .iter()
                .zip(&before)
                .all(|(n, b)| self.on_server(n) == *b)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::remove_file(&hook).expect("the hook is removed");
        report
    }

    fn view_files(&mut self, change: &ChangeId) -> Files {
        let root = self.views.dir(change);
        let mut files = Files::new();
        walk(&root, &root, &mut files);
        files
    }

    fn edit_view(&mut self, change: &ChangeId, path: &str, content: Option<&str>) {
        let file = self.views.dir(change).join(path);
        match content {
            Some(text) => {
                std::fs::create_dir_all(file.parent().expect("a file has a parent"))
                    .expect("mkdir");
                std::fs::write(&file, text).expect("the edit is written");
            }
            None => std::fs::remove_file(&file).expect("the file is removed"),
        }
    }

    fn signing_key(&mut self, openssh: &str) -> String {
        let keys = self._dir.path().join("keys");
        std::fs::create_dir_all(&keys).expect("mkdir");
        let count = std::fs::read_dir(&keys).map_or(0, Iterator::count);
        let file = keys.join(format!("key-{count}"));
        std::fs::write(&file, openssh).expect("the key is written");
        file.to_string_lossy().into_owned()
    }
}

/// Every file under `dir` but the worktree's `.git` file, by path from `root`.
fn walk(root: &Path, dir: &Path, files: &mut Files) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == root.join(".git") {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, files);
        } else {
            let relative = path
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&path).expect("a view's file reads");
            files.insert(relative, String::from_utf8_lossy(&bytes).into_owned());
        }
    }
}
